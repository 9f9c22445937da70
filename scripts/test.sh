#!/usr/bin/env bash
# Sets up, builds and runs all kiln tests: unit tests (Release), install + consumer check,
# the unit tests again under AddressSanitizer + UndefinedBehaviorSanitizer, the thread stress test
# under ThreadSanitizer, and the fuzzers for a bounded time (scripts/fuzz.sh; FUZZ_SECONDS per
# harness).
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
source scripts/common.sh

section "setup"
./scripts/setup.sh

section "Release build (build/)"
# KILN_BUILD_PYTHON: the Python package's module, and its pytest suite among the unit tests.
RELEASE_OPTIONS=(-DCMAKE_BUILD_TYPE=Release -DKILN_SANITIZE=OFF -DKILN_BUILD_TESTS=ON
                 -DKILN_BUILD_EXAMPLES=ON -DKILN_BUILD_BENCH=ON -DKILN_BUILD_PYTHON=ON)
configure_ninja build "${RELEASE_OPTIONS[@]}"
cmake --build build -j2

section "unit tests (Release)"
ctest --test-dir build --output-on-failure -j2

section "install into build/install-prefix"
rm -rf build/install-prefix
cmake --install build --prefix "$ROOT/build/install-prefix"

section "consumer project (tests/consumer) against the installed package"
rm -rf build/consumer
cmake -S tests/consumer -B build/consumer -G Ninja -DCMAKE_BUILD_TYPE=Release \
  -DCMAKE_PREFIX_PATH="$ROOT/build/install-prefix"
cmake --build build/consumer -j2
env -u LD_LIBRARY_PATH ./build/consumer/kiln_consumer

section "Python package: pip install . in a fresh virtual environment, pytest against it"
# The wheel is built in build/ with the Release build's options, so that only the module is
# compiled again (for the environment's Python); pip fetches scikit-build-core and nanobind into
# its isolated build environment, and numpy as the package's dependency.
rm -rf build/venv
python3 -m venv build/venv
build/venv/bin/python -m pip install --quiet --disable-pip-version-check pytest
build/venv/bin/python -m pip install --quiet --disable-pip-version-check . -Cbuild-dir=build \
  $(printf -- '-Ccmake.define.%s ' "${RELEASE_OPTIONS[@]#-D}")
(cd build/venv && KILN_NUM_THREADS=1 ./bin/python -m kiln &&
   KILN_NUM_THREADS=1 ./bin/python -m pytest -q -p no:cacheprovider "$ROOT/python/tests")
# build/ back to the Python it was configured with (pip built the module for the environment's).
cmake -S . -B build -DPython_EXECUTABLE="$(python3 -c 'import sys; print(sys.executable)')" \
  >/dev/null

section "sanitizer build (build-asan/, ASan + UBSan)"
# allocator_may_return_null: kiln reports failed huge allocations as out_of_memory errors.
# intercept_tls_get_addr=0: LeakSanitizer's tracking of the dynamic TLS of libraries loaded at run
# time (PoCL's) crashed its tracer at exit in the OpenCL tests ("Tracer caught signal 11"). kiln's
# own thread-locals are static TLS and are still scanned; leaks are still reported.
export ASAN_OPTIONS=detect_leaks=1:allocator_may_return_null=1:intercept_tls_get_addr=0
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# The OpenCL driver (PoCL, its LLVM) leaves objects behind when it builds a program.
export LSAN_OPTIONS=suppressions=$ROOT/scripts/lsan-suppressions.txt
configure_ninja build-asan -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 -DKILN_SANITIZE=ON \
  -DKILN_BUILD_TESTS=ON -DKILN_BUILD_EXAMPLES=OFF
cmake --build build-asan -j2

section "unit tests (ASan + UBSan)"
ctest --test-dir build-asan --output-on-failure -j2

section "thread stress test under ThreadSanitizer (build-tsan/)"
# g++'s ThreadSanitizer, so that kiln and Debian's oneDNN share one OpenMP runtime (libgomp); the
# OpenMP team is held at one thread because libgomp is not instrumented (its own synchronisation
# would be reported). The test's four threads are std::threads and race on kiln's graphs.
configure_ninja build-tsan -DCMAKE_BUILD_TYPE=RelWithDebInfo -DKILN_SANITIZE_THREAD=ON \
  -DKILN_BUILD_TESTS=ON -DKILN_BUILD_EXAMPLES=OFF -DKILN_BUILD_BENCH=OFF
cmake --build build-tsan -j2 --target kiln_thread_stress
TSAN_OPTIONS=halt_on_error=1:second_deadlock_stack=1 KILN_NUM_THREADS=1 OMP_NUM_THREADS=1 \
  OPENBLAS_NUM_THREADS=1 ./build-tsan/tests/kiln_thread_stress

section "fuzzers (scripts/fuzz.sh: libFuzzer + ASan + UBSan, build-fuzz/)"
if command -v clang++ >/dev/null 2>&1; then
  ./scripts/fuzz.sh
else
  echo "fuzzers SKIPPED: clang++ not found (scripts/setup.sh installs clang libclang-rt-14-dev libomp-14-dev)"
fi

section "all tests passed"
