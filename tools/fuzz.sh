#!/usr/bin/env bash
# Runs every fuzz harness (tests/fuzz) under libFuzzer with ASan+UBSan for MINUTES each and
# prints a table: executions, coverage (libFuzzer's "cov": edges; "ft": features), corpus size
# and crashes. Builds build-fuzz/ with clang first (about 10 minutes on 2 cores).
#   bash tools/fuzz.sh [MINUTES=10] [PARALLEL=2] [HARNESS...]
# Seeds: tests/fuzz/make_seeds.sh (from dspack synth) plus the committed tests/fuzz/corpus/.
# A crash lands in build-fuzz/fuzz-work/<harness>/crash-*: reproduce with
# build-fuzz/tests/fuzz_<harness> FILE, fix it, and commit FILE under tests/fuzz/corpus/<harness>/
# so that every ctest run replays it.
set -euo pipefail
cd "$(dirname "$0")/.."
MINUTES=${1:-10}
PARALLEL=${2:-2}
shift $(( $# > 2 ? 2 : $# ))
HARNESSES=("$@")
[ ${#HARNESSES[@]} -gt 0 ] || HARNESSES=(layout native_shard lmdb zip archive journal meta)
source scripts/deps.sh
CC=clang CXX=clang++ BUILD_TYPE=RelWithDebInfo dspack_build build-fuzz -DDSPACK_FUZZ=ON \
  -DDSPACK_SANITIZE=ON -DDSPACK_PYTHON=OFF -DDSPACK_MICRO_BENCH=OFF -DDSPACK_WERROR=OFF -DDSPACK_MPI=OFF \
  -DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O1 -g1 -DNDEBUG" > /dev/null
W=build-fuzz/fuzz-work
mkdir -p "$W"
bash tests/fuzz/make_seeds.sh build-fuzz/pack/dspack "$W/seeds"
export ASAN_OPTIONS=abort_on_error=1:detect_leaks=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
run() {
  local h=$1
  rm -rf "$W/$h" && mkdir -p "$W/$h/corpus"
  cp -r "$W/seeds/$h/." tests/fuzz/corpus/"$h"/. "$W/$h/corpus/" 2>/dev/null || true
  (cd "$W/$h" && ../../tests/fuzz_"$h" -max_total_time=$((MINUTES * 60)) -rss_limit_mb=2048 \
     -timeout=20 -print_final_stats=1 corpus > log.txt 2>&1) || true
}
pids=()
for h in "${HARNESSES[@]}"; do
  run "$h" & pids+=($!)
  if [ ${#pids[@]} -ge "$PARALLEL" ]; then wait "${pids[0]}"; pids=("${pids[@]:1}"); fi
done
wait
printf '| harness | minutes | executions | exec/s | cov (edges) | ft | corpus | crashes |\n|---|---|---|---|---|---|---|---|\n'
for h in "${HARNESSES[@]}"; do
  log="$W/$h/log.txt"
  last=$(grep -E '^#[0-9]+' "$log" | tail -1)
  execs=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$' || echo "?")
  rate=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | tail -1 | grep -oE '[0-9]+$' || echo "?")
  cov=$(grep -oE 'cov: [0-9]+' <<< "$last" | grep -oE '[0-9]+' || echo "?")
  ft=$(grep -oE 'ft: [0-9]+' <<< "$last" | grep -oE '[0-9]+' || echo "?")
  corpus=$(find "$W/$h/corpus" -type f | wc -l)
  crashes=$(find "$W/$h" -maxdepth 1 -name 'crash-*' -o -maxdepth 1 -name 'leak-*' -o -maxdepth 1 -name 'oom-*' -o -maxdepth 1 -name 'timeout-*' | wc -l)
  printf '| %s | %s | %s | %s | %s | %s | %s | %s |\n' "$h" "$MINUTES" "$execs" "$rate" "$cov" "$ft" "$corpus" "$crashes"
done
