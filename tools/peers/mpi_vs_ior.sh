#!/usr/bin/env bash
# M1 of the MPI issue (docs/mpi.md): `mpirun -n N dsbench io` against IOR's read phase on the
# same files, file per rank, O_DIRECT, 1 MiB transfers, N = 2 and 4 ranks: aggregate MiB/s of
# each, interleaved ROUNDS times, medians and the ratio dsbench/IOR (goal: within +-5 %). IOR
# writes the files once (-w -k); both then read them with the page cache dropped first. IOR's
# aggregate and dsbench's are the same definition (all bytes over the first start to last end).
#   tools/peers/mpi_vs_ior.sh [BLOCK=512m] [ROUNDS=3] [RANKS="2 4"]
# Needs root (drop_caches), a built build/ (dsbench) and IOR from ../shared/peers/build-ior.sh
# (IOR_DIR, default /work/peers-bin: it is built there if missing).
set -euo pipefail
cd "$(dirname "$0")/../.."
BLOCK=${1:-512m}
ROUNDS=${2:-3}
RANKS=${3:-"2 4"}
DSBENCH=${DSBENCH:-$PWD/build/bench/dsbench}
IOR_DIR=${IOR_DIR:-/work/peers-bin}
W=${BENCH_DIR:-/tmp/dspack-bench}/mpi-ior
[ -x "$IOR_DIR/ior" ] || bash ../shared/peers/build-ior.sh "$IOR_DIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
mkdir -p "$W"
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
results=$W/results.txt
: > "$results"
for n in $RANKS; do
  rm -f "$W"/f.*
  mpirun --oversubscribe -n "$n" "$IOR_DIR/ior" -a POSIX -F -w -k -e -b "$BLOCK" -t 1m \
    -o "$W/f" > "$W/ior-write.log" || { cat "$W/ior-write.log"; exit 1; }
  # IOR -F names rank r's file f.0000000r (8 digits); dsbench reads the same files through %r.
  for r in $(seq 0 $((n - 1))); do ln -sf "$W/f.$(printf %08d "$r")" "$W/rank$r"; done
  for round in $(seq "$ROUNDS"); do
    drop
    mpirun --oversubscribe -n "$n" "$IOR_DIR/ior" -a POSIX -F -r -k --posix.odirect -b "$BLOCK" \
      -t 1m -o "$W/f" > "$W/ior-read.log" || { cat "$W/ior-read.log"; exit 1; }
    mibs=$(awk '$1 == "read" && $2 ~ /^[0-9.]+$/ {print $2; exit}' "$W/ior-read.log")
    echo "ior $n $mibs" >> "$results"
    drop
    mpirun --oversubscribe -n "$n" "$DSBENCH" io "$W/rank%r" --rw read --bs 1m --size "$BLOCK" \
      --direct 1 --output-format json > "$W/ds.json"
    mibs=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["aggregate"]["read"]["bw_bytes"] / 2**20)' "$W/ds.json")
    echo "dsbench $n $mibs" >> "$results"
  done
  rm -f "$W"/f.* "$W"/rank*
done
/usr/bin/python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for n in sorted({int(r[1]) for r in rows}):
    med = {t: statistics.median(float(r[2]) for r in rows if r[0] == t and int(r[1]) == n)
           for t in ("ior", "dsbench")}
    runs = {t: " ".join(f"{float(r[2]):.0f}" for r in rows if r[0] == t and int(r[1]) == n)
            for t in ("ior", "dsbench")}
    print(f"-n {n}: IOR read {med['ior']:.0f} MiB/s ({runs['ior']}), dsbench io "
          f"{med['dsbench']:.0f} MiB/s ({runs['dsbench']}): ratio {med['dsbench'] / med['ior']:.3f}")
PY
