#!/usr/bin/env bash
# Runs the whole GoogleTest suite with the OpenCL executor as the default (KILN_EXECUTOR=opencl),
# in two shards at once that share the kernel caches. scripts/test.sh runs the part of the suite
# that exercises what a backend does (the `opencl.` ctest label); this is the rest too. On PoCL,
# building the suite's few thousand kernels takes most of the time with empty caches.
# Usage: scripts/test_opencl_full.sh [BUILD_DIR]   (default build/, built with tests)
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
BUILD=${1:-build}
TESTS=$BUILD/tests/kiln_tests
if [ ! -x "$TESTS" ]; then
  echo "test_opencl_full: $TESTS not found (build with -DKILN_BUILD_TESTS=ON)" >&2
  exit 1
fi
LOGS=$(mktemp -d)
# Training the network is left out as in the reference executor's run (NnTraining: minutes per
# epoch with the plain kernels); OpenCl.SmallNetworkTrainsOnTheDevice trains on the device.
pids=()
for shard in 0 1; do
  KILN_EXECUTOR=opencl GTEST_TOTAL_SHARDS=2 GTEST_SHARD_INDEX=$shard \
    "$TESTS" --gtest_filter='-NnTraining.*' >"$LOGS/shard$shard.txt" 2>&1 &
  pids+=($!)
done
status=0
for i in 0 1; do
  wait "${pids[$i]}" || status=1
  grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$LOGS/shard$i.txt" | sed "s/^/shard $i: /"
done
if grep -q "using the cpu executor" "$LOGS"/shard*.txt; then
  echo "test_opencl_full: the OpenCL executor was not used (no device?)" >&2
  status=1
fi
[ $status -eq 0 ] || echo "test_opencl_full: FAILED (logs in $LOGS)" >&2
exit $status
