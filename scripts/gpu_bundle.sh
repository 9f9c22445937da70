#!/usr/bin/env bash
# Packs a Release build's tests and benchmarks, with the shared libraries they need that a GPU
# machine without kiln's Debian build dependencies lacks, into one archive for scripts/gpu_check.sh.
#   scripts/gpu_bundle.sh BUILD_DIR OUT.tar.xz [FASHION_MNIST_DIR]
# FASHION_MNIST_DIR (its four IDX files, perhaps a subset of the training set) goes along for the
# training benchmark and the device training tests.
# NVIDIA's libraries (driver, NVRTC, cuBLAS, OpenCL) are not packed: the GPU machine has its own,
# and kiln loads the CUDA ones at run time. Configure the build with -DKILN_BENCH_WITH_TORCH=OFF.
set -euo pipefail
build=$(cd "${1:?usage: gpu_bundle.sh BUILD_DIR OUT.tar.xz}" && pwd)
out=$(realpath -m "${2:?usage: gpu_bundle.sh BUILD_DIR OUT.tar.xz}")
source_dir=$(sed -n 's/^CMAKE_HOME_DIRECTORY:INTERNAL=//p' "$build/CMakeCache.txt")
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
mkdir -p "$stage/bin" "$stage/lib"
for b in tests/kiln_tests tests/kiln_c_tests bench/kiln_bench bench/kiln_train_bench; do
  if [ -x "$build/$b" ]; then cp "$build/$b" "$stage/bin/"; fi
done
cp -L "$build/libkiln.so.0" "$stage/lib/"
strip "$stage"/bin/* "$stage/lib/libkiln.so.0"
# Every library the binaries load, but the C and C++ runtimes, NVIDIA's and kiln's own.
ldd "$stage"/bin/* "$stage/lib/libkiln.so.0" | awk '/=> \//{print $3}' | sort -u |
  grep -v -E '/(libc|libm|libdl|libpthread|librt|libstdc\+\+|libgcc_s|ld-linux[^/]*)\.so' |
  grep -v -E "^$build/|/usr/local/cuda|/libcuda\.so|/libnvidia" |
  while read -r library; do cp -L "$library" "$stage/lib/"; done
# The tests read their data from the source tree's path; gpu_check.sh recreates it.
cp -r "$source_dir/tests/data" "$stage/tests_data"
echo "$source_dir" > "$stage/source_dir"
if [ -n "${3:-}" ]; then mkdir -p "$stage/fashion-mnist" && cp "$3"/*-ubyte.gz "$stage/fashion-mnist/"; fi
git -C "$source_dir" rev-parse --short HEAD > "$stage/commit" 2>/dev/null || echo unknown > "$stage/commit"
tar cJf "$out" -C "$stage" .
ls -la "$out"
