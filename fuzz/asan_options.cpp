// Sanitizer defaults for the fuzzers and their replay programs. kiln reports an allocation that
// fails as OUT_OF_MEMORY; capping single allocations turns a legitimately huge (but lazily
// described) tensor into that clean error instead of a machine-sized allocation.
extern "C" const char* __asan_default_options();
extern "C" const char* __asan_default_options() {
  return "allocator_may_return_null=1:max_allocation_size_mb=1024:detect_leaks=1";
}

// The OpenCL driver (PoCL and its LLVM) keeps objects it never frees once it is loaded; they are
// not kiln's (see scripts/lsan-suppressions.txt, which the unit tests under ASan use).
extern "C" const char* __lsan_default_suppressions();
extern "C" const char* __lsan_default_suppressions() { return "leak:libpocl.so\nleak:libLLVM\n"; }
