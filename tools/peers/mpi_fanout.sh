#!/usr/bin/env bash
# M3 of the MPI issue (docs/mpi.md): `mpirun -n 4 dssync --fanout` against 4 independent dssync
# runs started together, each into its own DST, from the same native dataset (N imagenet-like
# samples) behind the slow file system (1 ms per metadata op and per read: emulated NFS).
# Interleaved ROUNDS times, page cache dropped before each; prints per round the bytes the slow
# file system served (its own counter; read_bytes is 0 through FUSE) and the wall time, then
# the medians and the ratios (goal: 1x vs 4x the bytes, wall time >= 2x faster).
#   tools/peers/mpi_fanout.sh [SAMPLES=2000] [ROUNDS=3] [RANKS=4]
# Needs root (drop_caches, FUSE) and a built build/ (dspack, dssync, dsbench-slowfs).
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-2000}
ROUNDS=${2:-3}
RANKS=${3:-4}
DSPACK=${DSPACK:-$PWD/build/pack/dspack}
DSSYNC=${DSSYNC:-$PWD/build/sync/dssync}
SLOWFS=${SLOWFS:-$PWD/build/bench/dsbench-slowfs}
W=${BENCH_DIR:-/tmp/dspack-bench}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
source tools/peers/lib.sh
bench_tree
DS="$W/fanout-native-$N"
[ -f "$DS/manifest.json" ] || "$DSPACK" convert "$SRC" "$DS" --label-from-dir -q --force
# A mount per rank: each "node" has its own client cache, as on a cluster (one mount shared by
# 4 local processes would let the first run's reads fill the page cache for the other three).
MNT="$W/mnt-fanout"
OUT="$W/fanout-out"
results="$W/fanout-results.txt"
: > "$results"
one_round() {  # one_round NAME CMD...: mount per rank, drop caches, time CMD, unmount, count
  local name=$1; shift
  rm -rf "$OUT"; mkdir -p "$OUT"
  local pids=() r
  for r in $(seq 0 $((RANKS - 1))); do
    mkdir -p "$MNT$r"
    rm -f "$W/fanout-slowfs.$r.log"
    pids+=("$(SLOWFS_LOG="$W/fanout-slowfs.$r.log" tests/fixtures/fuse_mount.sh "$SLOWFS" "$DS" \
      "$MNT$r" 1ms --read-latency 1ms)")
  done
  drop
  local t0 t1
  t0=$(date +%s%N)
  "$@"
  t1=$(date +%s%N)
  local served=0 b
  for r in $(seq 0 $((RANKS - 1))); do
    tests/fixtures/fuse_mount.sh umount "$MNT$r" "${pids[$r]}"
    b=$(sed -n 's/.* read=[0-9]* (\([0-9]*\) bytes).*/\1/p' "$W/fanout-slowfs.$r.log" | tail -n1)
    served=$((served + b))
  done
  echo "$name $(( (t1 - t0) / 1000000 )) $served" >> "$results"
}
independent() {
  local pids=()
  for r in $(seq 0 $((RANKS - 1))); do "$DSSYNC" "$MNT$r" "$OUT/dst$r" -q & pids+=($!); done
  for p in "${pids[@]}"; do wait "$p"; done
}
fanout() { mpirun --oversubscribe -n "$RANKS" "$DSSYNC" --fanout "$MNT%r" "$OUT/dst%r" -q; }
for round in $(seq "$ROUNDS"); do
  one_round independent independent
  one_round fanout fanout
done
rm -rf "$OUT"
data=$(find "$DS" -type f -printf '%s\n' | awk '{s += $1} END {print s}')
/usr/bin/python3 - "$results" "$data" "$RANKS" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
data, ranks = int(sys.argv[2]), int(sys.argv[3])
med = {}
for name in ("independent", "fanout"):
    ms = [int(r[1]) for r in rows if r[0] == name]
    served = [int(r[2]) for r in rows if r[0] == name]
    med[name] = (statistics.median(ms), statistics.median(served))
    print(f"{name:<12} wall {' '.join(map(str, ms))} ms (median {med[name][0]:.0f}); served "
          f"{med[name][1] / data:.2f}x the dataset ({data} bytes)")
print(f"{ranks} ranks: fanout reads {med['fanout'][1] / med['independent'][1]:.2f}x the bytes of "
      f"{ranks} independent runs, wall time {med['independent'][0] / med['fanout'][0]:.2f}x faster")
PY
