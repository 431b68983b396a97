#!/usr/bin/env bash
# M2 of the MPI issue (docs/mpi.md): `mpirun -n N dsbench meta` against `mdtest -u` (a directory
# per rank) on create / stat / read / remove, FILES files per rank in one directory each, empty
# files (mdtest's default -w 0 -e 0; dsbench --file-size 0), N = 2 and 4 ranks, interleaved
# ROUNDS times: median ops/s per phase of each and the ratio dsbench/mdtest (goal: within
# +-10 % per phase). Both compute a phase's rate as all ranks' ops over the slowest rank's time.
#   tools/peers/mpi_meta_vs_mdtest.sh [FILES=2000] [ROUNDS=5] [RANKS="2 4"]
# Needs a built build/ (dsbench) and mdtest from ../shared/peers/build-ior.sh (IOR_DIR, default
# /work/peers-bin: built there if missing). Scratch: BENCH_DIR (default /tmp/dspack-bench).
set -euo pipefail
cd "$(dirname "$0")/../.."
FILES=${1:-2000}
ROUNDS=${2:-5}
RANKS=${3:-"2 4"}
DSBENCH=${DSBENCH:-$PWD/build/bench/dsbench}
IOR_DIR=${IOR_DIR:-/work/peers-bin}
W=${BENCH_DIR:-/tmp/dspack-bench}/mpi-meta
[ -x "$IOR_DIR/mdtest" ] || bash ../shared/peers/build-ior.sh "$IOR_DIR"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
rm -rf "$W"; mkdir -p "$W"
results=$W/results.txt
: > "$results"
for n in $RANKS; do
  for round in $(seq "$ROUNDS"); do
    mpirun --oversubscribe -n "$n" "$IOR_DIR/mdtest" -n "$FILES" -d "$W/md" -u -F > "$W/mdtest.log"
    awk -v n="$n" '/File creation/ {print "mdtest", n, "create", $5} /File stat/ {print "mdtest", n, "stat", $5}
      /File read/ {print "mdtest", n, "read", $5} /File removal/ {print "mdtest", n, "remove", $5}' \
      "$W/mdtest.log" >> "$results"
    rm -rf "$W/md"
    mkdir -p "$W/ds"
    mpirun --oversubscribe -n "$n" "$DSBENCH" meta "$W/ds" --files "$FILES" --threads 1 \
      --files-per-dir "$FILES" --file-size 0 --phases create,stat,read,remove \
      --output-format json > "$W/ds.json"
    /usr/bin/python3 -c '
import json, sys
for p in json.load(open(sys.argv[1]))["meta_ranks"]["phases"]:
    print("dsbench", sys.argv[2], p["name"], p["ops_per_sec"])' "$W/ds.json" "$n" >> "$results"
  done
done
/usr/bin/python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
for n in sorted({int(r[1]) for r in rows}):
    for phase in ("create", "stat", "read", "remove"):
        med = {t: statistics.median(float(r[3]) for r in rows if r[0] == t and int(r[1]) == n and r[2] == phase)
               for t in ("mdtest", "dsbench")}
        print(f"-n {n} {phase:<7} mdtest {med['mdtest']:>10.0f} ops/s  dsbench {med['dsbench']:>10.0f} ops/s"
              f"  ratio {med['dsbench'] / med['mdtest']:.3f}")
PY
