#!/usr/bin/env bash
# Runs on a machine with an NVIDIA GPU and kiln's bundle (scripts/gpu_bundle.sh): the CUDA
# backend's own tests, benchmarks of kiln's CUDA and OpenCL executors next to PyTorch on CUDA
# (bench/torch_gpu_peer.py), and the GoogleTest suite under KILN_EXECUTOR=cuda in parallel shards.
#   scripts/gpu_check.sh BUNDLE.tar.xz OUT_DIR [phase...]
# Phases (default: all, in this order): probe bench torch suite csuite opencl; also `oclsuite`
# (the device tests under NVIDIA's OpenCL), `filter`
# (the tests KILN_GPU_FILTER names, under CUDA, in one process) and `libraries` (convolutions and
# the training step with cuDNN and cuBLAS on and off); `bench` times the training step with CUDA
# graphs and without (KILN_CUDA_GRAPHS=0). Logs go to OUT_DIR,
# with summary.txt gathering the verdicts; KILN_GPU_PACK=1 packs the logs into OUT_DIR/logs.tar.gz
# (for a transfer that takes few files). Time limits: KILN_GPU_SUITE_S (default 240 s a shard),
# KILN_GPU_BENCH_S (default 150 s a benchmark); KILN_GPU_OPENCL_FILTER picks the OpenCL rows.
set -uo pipefail
bundle=$(realpath "${1:?usage: gpu_check.sh BUNDLE OUT_DIR [phase...]}")
out=$(realpath -m "${2:?usage: gpu_check.sh BUNDLE OUT_DIR [phase...]}")
shift 2
phases=${*:-probe bench torch suite csuite opencl}
repo=$(cd "$(dirname "$0")/.." && pwd)
mkdir -p "$out"
summary=$out/summary.txt
note() { echo "$*" | tee -a "$summary"; }

k=/tmp/kiln-gpu
mkdir -p $k && tar xJf "$bundle" -C $k
# NVIDIA's libraries: the toolkit's, and those of the PyTorch wheels (site-packages/nvidia/*/lib).
nv=$(python3 -c 'import os, nvidia; p = nvidia.__path__[0]; print(":".join(os.path.join(p, d, "lib") for d in sorted(os.listdir(p)) if os.path.isdir(os.path.join(p, d, "lib"))))' 2>/dev/null)
export LD_LIBRARY_PATH=$k/lib${nv:+:$nv}:/usr/local/cuda/lib64${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
source_dir=$(cat $k/source_dir)
mkdir -p "$source_dir/tests" && { [ -e "$source_dir/tests/data" ] || cp -r $k/tests_data "$source_dir/tests/data"; }
# Fashion-MNIST (a subset travels with the bundle) where kiln looks for it by default.
if [ -d "$k/fashion-mnist" ]; then
  mkdir -p /usr/share/datasets/fashion-mnist && cp -n $k/fashion-mnist/* /usr/share/datasets/fashion-mnist/
fi
# NVIDIA's OpenCL library, for the opencl phase: the machine has no ICD file naming it.
ocl=$(ls /usr/local/nvidia/lib64/libnvidia-opencl.so.1 /usr/lib/x86_64-linux-gnu/libnvidia-opencl.so.1 2>/dev/null | head -1)
mkdir -p /tmp/icd && echo "$ocl" > /tmp/icd/nvidia.icd && export OCL_ICD_VENDORS=/tmp/icd
export KILN_CACHE_DIR=/tmp/kiln-cache
bin=$k/bin
note "kiln $(cat $k/commit) on $(nvidia-smi --query-gpu=name,driver_version --format=csv,noheader 2>/dev/null)"

for phase in $phases; do
  start=$(date +%s)
  case $phase in
    probe)
      KILN_EXECUTOR=cuda $bin/kiln_tests --gtest_filter='Cuda*:ExecutorSupport*:ExecutorRegistry*' > "$out/probe.log" 2>&1
      note "probe: rc $? $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] .*\(|^\[  SKIPPED \] [0-9]+ test' "$out/probe.log" | tr '\n' ' ')" ;;
    bench)
      KILN_EXECUTOR=cuda timeout "${KILN_GPU_BENCH_S:-150}" $bin/kiln_bench --quick > "$out/bench_cuda.log" 2>&1
      note "bench cuda: rc $?"
      KILN_EXECUTOR=cuda timeout "${KILN_GPU_BENCH_S:-120}" $bin/kiln_train_bench --batches 100 --threads 16 > "$out/train_cuda.log" 2>&1
      note "train cuda: rc $? $(grep -E '^\| kiln ' "$out/train_cuda.log" | awk -F'|' '{print $5}') ms/batch"
      # The same step launched kernel by kernel (no CUDA graph), and KILN_DEBUG's word on whether
      # the step's schedule was recorded.
      KILN_EXECUTOR=cuda KILN_CUDA_GRAPHS=0 timeout "${KILN_GPU_BENCH_S:-120}" $bin/kiln_train_bench --batches 100 --threads 16 > "$out/train_cuda_nographs.log" 2>&1
      note "train cuda without graphs: rc $? $(grep -E '^\| kiln ' "$out/train_cuda_nographs.log" | awk -F'|' '{print $5}') ms/batch"
      KILN_DEBUG=1 KILN_EXECUTOR=cuda timeout 60 $bin/kiln_train_bench --batches 5 --threads 16 > "$out/train_cuda_debug.log" 2>&1
      note "graph notes: $(grep -o 'the schedule above: .*' "$out/train_cuda_debug.log" | sort | uniq -c | tr -s ' ' | tr '\n' ';')" ;;
    torch)
      timeout "${KILN_GPU_BENCH_S:-150}" python3 "$repo/bench/torch_gpu_peer.py" --quick > "$out/torch.log" 2>&1
      note "torch: rc $?" ;;
    suite)
      # The whole suite but the long training runs, in parallel shards sharing the kernel cache.
      shards=${KILN_GPU_SHARDS:-12}
      for i in $(seq 0 $((shards - 1))); do
        # One CPU thread a shard: the shards together fill the machine.
        GTEST_TOTAL_SHARDS=$shards GTEST_SHARD_INDEX=$i KILN_EXECUTOR=cuda KILN_NUM_THREADS=1 \
          timeout "${KILN_GPU_SUITE_S:-240}" $bin/kiln_tests --gtest_filter='-NnTraining.*' \
          > "$out/suite_$i.log" 2>&1 &
      done
      wait
      note "suite (cuda, $shards shards): $(cat "$out"/suite_*.log | grep -cE '^\[       OK \]') passed, $(cat "$out"/suite_*.log | grep -cE '^\[  FAILED  \] .*\(')  failed, $(cat "$out"/suite_*.log | grep -cE '^\[  SKIPPED \] .*\(') skipped"
      grep -hE '^\[  FAILED  \] .*\(' "$out"/suite_*.log | sort -u | head -100 >> "$summary"
      for i in $(seq 0 $((shards - 1))); do
        grep -qE '^\[  (PASSED|FAILED)  \]' "$out/suite_$i.log" || note "shard $i did not finish: $(tail -c 300 "$out/suite_$i.log" | tr '\n' ' ')"
      done ;;
    csuite)
      # Line-buffered, with the process's resident memory logged, so that a run the kernel kills
      # still shows where it was.
      mkdir -p /tmp/c_gpu && (cd /tmp/c_gpu && KILN_C_TESTS_VERBOSE=1 KILN_EXECUTOR=cuda timeout 120 stdbuf -oL -eL $bin/kiln_c_tests) > "$out/c_cuda.log" 2>&1 &
      c_pid=$!
      while kill -0 $c_pid 2>/dev/null; do
        ps -o rss=,args= -C kiln_c_tests >> "$out/c_cuda_rss.log" 2>/dev/null; sleep 1
      done
      wait $c_pid
      note "C suite (cuda): rc $? $(tail -1 "$out/c_cuda.log")" ;;
    filter)
      KILN_EXECUTOR=cuda timeout "${KILN_GPU_SUITE_S:-240}" $bin/kiln_tests --gtest_filter="${KILN_GPU_FILTER:-Cuda*}" > "$out/filter.log" 2>&1
      note "filter ${KILN_GPU_FILTER:-Cuda*}: rc $? $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] .*\(' "$out/filter.log" | tr '\n' ' ')" ;;
    libraries)
      for dnn in 1 0; do
        KILN_EXECUTOR=cuda KILN_CUDA_DNN=$dnn timeout "${KILN_GPU_BENCH_S:-150}" $bin/kiln_bench --quick --filter conv2d > "$out/conv_dnn$dnn.log" 2>&1
        KILN_EXECUTOR=cuda KILN_CUDA_DNN=$dnn timeout "${KILN_GPU_BENCH_S:-150}" $bin/kiln_train_bench --batches 50 --threads 16 > "$out/train_dnn$dnn.log" 2>&1
        note "cuDNN $dnn: $(grep -E '^\| conv2d.* \| 1 ' "$out/conv_dnn$dnn.log" | awk -F'|' '{print $2 $4}' | tr -s ' ' | tr '\n' ';') train $(grep -E '^\| kiln ' "$out/train_dnn$dnn.log" | awk -F'|' '{print $5}') ms/batch"
      done ;;
    opencl)
      KILN_EXECUTOR=opencl timeout "${KILN_GPU_BENCH_S:-150}" $bin/kiln_bench --quick \
        ${KILN_GPU_OPENCL_FILTER:+--filter "$KILN_GPU_OPENCL_FILTER"} > "$out/bench_opencl.log" 2>&1
      note "bench opencl: rc $?"
      # The CNN step under NVIDIA's OpenCL (issue 38's training row).
      KILN_EXECUTOR=opencl timeout "${KILN_GPU_BENCH_S:-120}" $bin/kiln_train_bench --batches 50 --threads 16 > "$out/train_opencl.log" 2>&1
      note "train opencl: rc $? $(grep -E '^\| kiln ' "$out/train_opencl.log" | awk -F'|' '{print $5}' | tr -s ' ') ms/batch" ;;
    oclsuite)
      # The device tests and the part of the suite a device backend runs, under NVIDIA's OpenCL.
      KILN_EXECUTOR=opencl timeout "${KILN_GPU_SUITE_S:-240}" $bin/kiln_tests \
        --gtest_filter='OpenCl*:Softmax.*:LogSoftmax.*:CrossEntropy.*:Reduce.*:ExecutorKernels.*:Complex.*:NanBits.*' > "$out/suite_opencl.log" 2>&1
      note "suite (opencl): rc $? $(grep -E '^\[  PASSED  \]|^\[  FAILED  \] .*\(' "$out/suite_opencl.log" | tr '\n' ' ')" ;;
    *) note "unknown phase $phase" ;;
  esac
  note "  ($phase: $(( $(date +%s) - start )) s)"
done
if [ "${KILN_GPU_PACK:-0}" = 1 ]; then
  tar czf /tmp/kiln-gpu-logs.tar.gz -C "$out" --exclude summary.txt . &&
    find "$out" -type f ! -name summary.txt -delete && mv /tmp/kiln-gpu-logs.tar.gz "$out/logs.tar.gz"
fi
