#!/usr/bin/env bash
# Builds the libFuzzer harnesses of fuzz/ with clang (ASan + UBSan, build-fuzz/) and runs each for
# a bounded time (load_image three times as long), one per core at a time, on a scratch copy of
# its seed corpus (fuzz/corpus/<harness>/) and its regression inputs (fuzz/regressions/<harness>/).
# Prints each harness's executions and coverage and exits non-zero if any harness crashed, leaks,
# hangs or runs out of memory, naming the input it saved.
#
#   FUZZ_SECONDS=600 scripts/fuzz.sh          # longer runs (default 60 s per harness)
#   scripts/fuzz.sh graph nn_load             # only some harnesses
#   FUZZ_KEEP_CORPUS=1 scripts/fuzz.sh        # keep the grown corpora in build-fuzz/run/
#   FUZZ_JOBS=1 scripts/fuzz.sh               # one harness at a time
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
ROOT=$PWD
source scripts/common.sh

SECONDS_EACH=${FUZZ_SECONDS:-60}
# The image decoders (eight formats, three libraries) have the most code to cover: three times
# as long.
seconds_for() {
  if [ "$1" = load_image ]; then echo $((3 * SECONDS_EACH)); else echo "$SECONDS_EACH"; fi
}
ALL_HARNESSES=(fdeserialize nn_load read_idx load_image graph safetensors npy npz csv)
if [ $# -gt 0 ]; then HARNESSES=("$@"); else HARNESSES=("${ALL_HARNESSES[@]}"); fi

if ! command -v clang++ >/dev/null 2>&1; then
  echo "fuzz: clang++ not found (Debian: clang libclang-rt-14-dev libomp-14-dev)" >&2
  exit 1
fi

section "fuzzer build (build-fuzz/, clang, libFuzzer + ASan + UBSan)"
configure_ninja build-fuzz -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS=-O1 \
  -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DKILN_SANITIZE=OFF -DKILN_BUILD_FUZZERS=ON -DKILN_BUILD_TESTS=OFF \
  -DKILN_BUILD_EXAMPLES=OFF -DKILN_BUILD_BENCH=OFF
targets=()
for h in "${HARNESSES[@]}"; do targets+=("fuzz_$h"); done
cmake --build build-fuzz -j2 --target "${targets[@]}"

# libFuzzer's own malloc limit would report a legitimately huge but refused allocation as a
# crash; the harnesses cap single allocations through ASan instead (fuzz/asan_options.cpp), so
# only the resident-memory limit stays.
export ASAN_OPTIONS=allocator_may_return_null=1:max_allocation_size_mb=1024:detect_leaks=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export KILN_NUM_THREADS=1 OMP_NUM_THREADS=1

RUN=$ROOT/build-fuzz/run
# Each harness is one single-threaded process: FUZZ_JOBS of them (default: one per core) run side
# by side, each for its whole time, so the runs take half the wall time on 2 cores.
JOBS=${FUZZ_JOBS:-$(getconf _NPROCESSORS_ONLN)}

# Runs harness $1 and leaves its summary line in $RUN/$1/result (and, if it failed, what went
# wrong in $RUN/$1/report).
fuzz_one() {
  local h=$1 seconds work log rc execs cov ft line crash
  seconds=$(seconds_for "$h")
  work=$RUN/$h
  rm -rf "$work"
  mkdir -p "$work/corpus" "$work/artifacts"
  # The committed corpus stays as it is: the fuzzer grows a scratch copy.
  cp -r "fuzz/corpus/$h/." "$work/corpus/" 2>/dev/null || true
  local seeds=("$work/corpus")
  if [ -d "fuzz/regressions/$h" ]; then seeds+=("fuzz/regressions/$h"); fi
  log=$work/log.txt
  set +e
  "build-fuzz/fuzz/fuzz_$h" "${seeds[@]}" \
    -max_total_time="$seconds" -timeout=25 -rss_limit_mb=2048 -malloc_limit_mb=1000000 \
    -max_len=4096 -print_final_stats=1 -artifact_prefix="$work/artifacts/" >"$log" 2>&1
  rc=$?
  set -e
  # A harness that fails on a seed dies before printing any statistics.
  execs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1 || true)
  cov=$( (grep -o 'cov: [0-9]*' "$log" || true) | tail -n 1 | sed 's/cov: //')
  ft=$( (grep -o 'ft: [0-9]*' "$log" || true) | tail -n 1 | sed 's/ft: //')
  line="$h: ${execs:-?} executions in ${seconds} s, cov: ${cov:-?}, ft: ${ft:-?}"
  if [ $rc -ne 0 ]; then
    crash=$(ls "$work/artifacts" 2>/dev/null | head -n 1)
    line="$line, FAILED (exit $rc): $work/artifacts/${crash:-<none>}"
    # The report: what went wrong and where.
    {
      grep -E -m 30 'ERROR|SUMMARY|runtime error|#[0-9]+ 0x|==[0-9]+==|kiln graph fuzzer|Test unit written|artifact_prefix' "$log" || tail -n 40 "$log"
      echo "fuzz: $h failed; full log: $log"
      echo "fuzz: keep the input as a regression: cp $work/artifacts/${crash:-<file>} fuzz/regressions/$h/"
    } >"$work/report"
  fi
  echo "$line" >"$work/result"
  if [ -z "${FUZZ_KEEP_CORPUS:-}" ]; then rm -rf "$work/corpus"; fi
}

section "fuzzing ${HARNESSES[*]} ($JOBS at a time; $SECONDS_EACH s each, load_image $(seconds_for load_image) s)"
# The longest first, so that the others share the remaining time.
order=()
for h in "${HARNESSES[@]}"; do if [ "$h" = load_image ]; then order+=("$h"); fi; done
for h in "${HARNESSES[@]}"; do if [ "$h" != load_image ]; then order+=("$h"); fi; done
running=0
for h in "${order[@]}"; do
  if [ "$running" -ge "$JOBS" ]; then
    wait -n || true  # a harness's failure is in its files, read below
    running=$((running - 1))
  fi
  fuzz_one "$h" &
  running=$((running + 1))
done
wait || true

failed=()
summary=()
for h in "${HARNESSES[@]}"; do
  if [ -f "$RUN/$h/report" ]; then
    cat "$RUN/$h/report"
    failed+=("$h")
  fi
  summary+=("$(cat "$RUN/$h/result" 2>/dev/null || echo "$h: no result (the run did not finish)")")
done
if [ ${#failed[@]} -eq 0 ]; then
  for h in "${HARNESSES[@]}"; do
    [ -f "$RUN/$h/result" ] || failed+=("$h")
  done
fi

section "fuzzing summary"
printf '%s\n' "${summary[@]}"
if [ ${#failed[@]} -ne 0 ]; then
  echo "fuzz: crashes in: ${failed[*]}"
  exit 1
fi
echo "fuzz: no crashes"
