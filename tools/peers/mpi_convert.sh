#!/usr/bin/env bash
# M4 of the MPI issue (docs/mpi.md#partitioned-packing): a one-process `dspack convert` against
# `mpirun -n 1` and `mpirun -n RANKS` of the same convert, on the same N-sample imagenet-like
# tree, from the local disk and through the slow file system (1 ms per metadata operation and per
# read: emulated NFS, one mount that every rank shares, as one NFS server would be). Page cache
# dropped before each run, interleaved ROUNDS times; every output is compared with a one-process
# output from the same SRC path (diff of every file) before it counts. Prints the medians and the
# ratios, also less the fixed cost: `mpirun -n RANKS dspack convert` of an empty tree (start-up,
# MPI_Init and Finalize), measured in the same run.
#   tools/peers/mpi_convert.sh [SAMPLES=5000] [ROUNDS=3] [RANKS=2]
# Needs root (drop_caches, FUSE) and a built build/ (dspack, dsbench).
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-5000}
ROUNDS=${2:-3}
RANKS=${3:-2}
DSPACK=${DSPACK:-$PWD/build/pack/dspack}
DSBENCH=${DSBENCH:-$PWD/build/bench/dsbench}
W=${BENCH_DIR:-/tmp/dspack-bench}
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
source tools/peers/lib.sh
bench_tree
MNT="$W/mnt-mpi-convert"
trap slowfs_umount EXIT
results="$W/mpi-convert-results.txt"
: > "$results"
OPTS=(--label-from-dir -q)
REF="$W/mpi-convert-ref"  # the one-process output from the same SRC path (the manifest names it)
timed() {  # timed NAME OUT CMD...: drop caches, time CMD, check OUT against REF, remove it
  local name=$1 out=$2; shift 2
  rm -rf "$out"
  sync
  drop
  local t0 t1
  t0=$(date +%s%N)
  "$@"
  t1=$(date +%s%N)
  diff -rq "$REF" "$out" > /dev/null || { echo "$name: output differs from one process" >&2; exit 1; }
  rm -rf "$out"
  echo "$name $(( (t1 - t0) / 1000000 ))" >> "$results"
}
mkdir -p "$W/mpi-convert-empty"
for _ in $(seq "$ROUNDS"); do  # the fixed cost: mpirun, MPI_Init/Finalize, an empty convert
  rm -rf "$W/mpi-convert-out"
  t0=$(date +%s%N)
  mpirun --oversubscribe -n "$RANKS" "$DSPACK" convert "$W/mpi-convert-empty" "$W/mpi-convert-out" -q
  echo "startup $(( ($(date +%s%N) - t0) / 1000000 ))" >> "$results"
done
rm -rf "$W/mpi-convert-out"
for where in local slowfs; do
  if [ "$where" = slowfs ]; then
    slowfs_mount "$SRC" "$MNT" 1ms --read-latency 1ms
    from="$MNT"
  else
    from="$SRC"
  fi
  rm -rf "$REF"
  "$DSPACK" convert "$from" "$REF" "${OPTS[@]}"
  for _ in $(seq "$ROUNDS"); do
    timed "$where-plain" "$W/mpi-convert-out" "$DSPACK" convert "$from" "$W/mpi-convert-out" "${OPTS[@]}"
    timed "$where-mpirun-1" "$W/mpi-convert-out" \
      mpirun --oversubscribe -n 1 "$DSPACK" convert "$from" "$W/mpi-convert-out" "${OPTS[@]}"
    timed "$where-mpirun-$RANKS" "$W/mpi-convert-out" \
      mpirun --oversubscribe -n "$RANKS" "$DSPACK" convert "$from" "$W/mpi-convert-out" "${OPTS[@]}"
  done
  [ "$where" = slowfs ] && slowfs_umount
done
rm -rf "$REF"
/usr/bin/python3 - "$results" "$N" "$BYTES" "$RANKS" "$(nproc)" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
n, data, ranks, cores = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
print(f"tree: {n} files, {data / 1e6:.1f} MB; {cores} cores; page cache dropped before each run")
up = statistics.median(int(r[1]) for r in rows if r[0] == "startup")
print(f"mpirun -n {ranks} dspack convert of an empty tree: median {up:.0f} ms (the fixed cost)")
for where in ("local", "slowfs"):
    med = {}
    for name in ("plain", "mpirun-1", f"mpirun-{ranks}"):
        ms = [int(r[1]) for r in rows if r[0] == f"{where}-{name}"]
        med[name] = statistics.median(ms)
        print(f"{where:<7}{name:<12} {' '.join(map(str, ms)):>22} ms  median {med[name]:.0f} ms "
              f"({data / med[name] / 1e3:.0f} MB/s, {n / med[name] * 1e3:.0f} files/s)")
    print(f"{where:<7}mpirun -n 1 takes {med['mpirun-1'] / med['plain']:.2f}x the plain run's time; "
          f"-n {ranks} takes {med[f'mpirun-{ranks}'] / med['plain']:.2f}x; less the fixed cost: "
          f"{(med['mpirun-1'] - up) / med['plain']:.2f}x and "
          f"{(med[f'mpirun-{ranks}'] - up) / med['plain']:.2f}x")
PY
