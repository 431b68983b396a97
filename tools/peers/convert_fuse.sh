#!/usr/bin/env bash
# dspack convert vs tar -cf through the slow file system (`dsbench slowfs`, 1 ms per metadata
# round trip: emulated NFS), beside the raw directory, cold and warm, in one run; also dspack's
# throughput against its --threads (the number of operations in flight) through it.
#   tools/peers/convert_fuse.sh [SAMPLES=20000] [ROUNDS=3] [TAR_ROUNDS=1]
# Needs root (drop_caches, FUSE mount), a built build/pack/dspack and build/bench/dsbench (with
# build/bench/dsbench-slowfs beside it); override with DSPACK, DSBENCH. LATENCY: 1ms.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-20000}
ROUNDS=${2:-3}
TAR_ROUNDS=${3:-1}
DSPACK=${DSPACK:-$PWD/build/pack/dspack}
DSBENCH=${DSBENCH:-$PWD/build/bench/dsbench}
W=${BENCH_DIR:-/tmp/dspack-bench}
LATENCY=${LATENCY:-1ms}
source tools/peers/lib.sh
bench_tree
MNT="$W/mnt"
trap slowfs_umount EXIT
slowfs_mount "$SRC" "$MNT" "$LATENCY"

results="$W/fuse-results.txt"; : > "$results"
warm() { cat "$1"/*/* > /dev/null; }

for r in $(seq 1 "$ROUNDS"); do
  drop; run cold-raw-dspack "$DSPACK" convert "$SRC" "$W/out.ds" -q
  drop; run cold-fuse-dspack-t16 "$DSPACK" convert "$MNT" "$W/out.ds" -q --threads 16
  drop; run cold-fuse-dspack-t64 "$DSPACK" convert "$MNT" "$W/out.ds" -q --threads 64
  warm "$SRC"; run warm-raw-dspack "$DSPACK" convert "$SRC" "$W/out.ds" -q
  warm "$MNT"; run warm-fuse-dspack-t16 "$DSPACK" convert "$MNT" "$W/out.ds" -q --threads 16
  warm "$MNT"; run warm-fuse-dspack-t64 "$DSPACK" convert "$MNT" "$W/out.ds" -q --threads 64
done
for r in $(seq 1 "$ROUNDS"); do
  drop; run cold-raw-tar tar -cf "$W/out.tar" -C "$SRC" .
  warm "$SRC"; run warm-raw-tar tar -cf "$W/out.tar" -C "$SRC" .
done
for r in $(seq 1 "$TAR_ROUNDS"); do
  drop; run cold-fuse-tar tar -cf "$W/out.tar" -C "$MNT" .
  warm "$MNT"; run warm-fuse-tar tar -cf "$W/out.tar" -C "$MNT" .
done
for t in 1 4 16 64; do
  drop; run "scaling-t$t" "$DSPACK" convert "$MNT" "$W/out.ds" -q --threads "$t"
done
rm -rf "$W/out.ds" "$W/out.tar"

PYTHONPATH=tools/peers python3 - "$results" "$N" "$BYTES" "$ROUNDS" "$TAR_ROUNDS" "$LATENCY" <<'PY'
import sys
from runs import load
path, n, b, rounds, tar_rounds, delay = sys.argv[1:7]
n, b = int(n), int(b)
med, rss = load(path)
print(f"tree: {n} files, {b/1e6:.1f} MB; slow file system: {delay} per metadata round trip;")
print(f"medians of {rounds} runs (tar through FUSE: {tar_rounds}), measured in one invocation")
print(f"{'run':<22}{'seconds':>9}{'files/s':>10}{'MB/s':>9}{'peak RSS':>10}{'vs tar':>9}")
for k in ["cold-raw-dspack", "cold-raw-tar", "cold-fuse-dspack-t16", "cold-fuse-dspack-t64",
          "cold-fuse-tar", "warm-raw-dspack", "warm-raw-tar", "warm-fuse-dspack-t16",
          "warm-fuse-dspack-t64", "warm-fuse-tar"]:
    if k not in med: continue
    parts = k.split("-")
    tar = med.get(f"{parts[0]}-{parts[1]}-tar")
    ratio = f"{tar/med[k]:>8.1f}x" if "dspack" in k and tar else ""
    print(f"{k:<22}{med[k]:>9.2f}{n/med[k]:>10.0f}{b/med[k]/1e6:>9.1f}{rss[k]/1024:>8.1f}MB{ratio}")
for c in ["cold", "warm"]:
    for t in ["-t16", "-t64"]:
        f, r = med.get(f"{c}-fuse-dspack{t}"), med.get(f"{c}-raw-dspack")
        if f and r:
            print(f"{c} dspack{t} through FUSE / on the raw directory: {f/r:.2f}x the time")
print("operations in flight (--threads) vs throughput through FUSE, cold:")
for t in [1, 4, 16, 64]:
    k = f"scaling-t{t}"
    if k in med:
        print(f"  --threads {t:<3} {med[k]:>7.2f} s {n/med[k]:>8.0f} files/s")
PY
