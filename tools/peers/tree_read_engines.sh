#!/usr/bin/env bash
# The packer's small-file read, two ways, side by side (issue 12 §3): K blocking threads
# (InputFile::Open, what `dspack convert` runs today) against one io_uring with K files in
# flight (linked openat -> read -> close on registered file slots), both reading every file of
# the same imagenet-like tree whole (tools/micro/tree_read.cc). Three places: the local disk
# warm and cold (drop_caches before each run), and the slow file system cold (`dsbench slowfs`,
# LATENCY per metadata round trip: emulated NFS). Runs are interleaved, ROUNDS of each; prints
# the medians, files/s, CPU-µs per file (the process's, io_uring's io-wq workers included) and
# the ratio uring / threads.
#   tools/peers/tree_read_engines.sh [SAMPLES=20000] [ROUNDS=3] [K=16,64]
# Needs root (drop_caches, FUSE) and a built build/ (dspack, dsbench, dspack_tree_read).
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-20000}
ROUNDS=${2:-3}
KS=${3:-16,64}
DSPACK=${DSPACK:-$PWD/build/pack/dspack}
DSBENCH=${DSBENCH:-$PWD/build/bench/dsbench}
TREE_READ=${TREE_READ:-$PWD/build/bench/dspack_tree_read}
W=${BENCH_DIR:-/tmp/dspack-bench}
LATENCY=${LATENCY:-1ms}
source tools/peers/lib.sh
bench_tree
MNT="$W/mnt-tree-read"
slowfs_mount "$SRC" "$MNT" "$LATENCY"
trap slowfs_umount EXIT

out="$W/tree-read.jsonl"; : > "$out"
one() {  # PLACE CACHE DIR K MODE
  [ "$2" = cold ] && drop
  "$TREE_READ" "$3" --inflight "$4" --mode "$5" | sed "s/^{/{\"place\":\"$1\",\"cache\":\"$2\",/" >> "$out"
}
for r in $(seq 1 "$ROUNDS"); do
  for k in ${KS//,/ }; do
    for mode in threads uring; do
      cat "$SRC"/*/* > /dev/null  # warm
      one local warm "$SRC" "$k" "$mode"
      one local cold "$SRC" "$k" "$mode"
      one slowfs cold "$MNT" "$k" "$mode"
    done
  done
done
/usr/bin/python3 - "$out" "$LATENCY" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
group = lambda r: (r["place"], r["cache"], r["inflight"], r["mode"])
files = runs[0]["files"]
mb = runs[0]["bytes"] / 1e6
print(f"every file of a {files}-file tree ({mb:.0f} MB) read whole; slowfs = {sys.argv[2]} per "
      f"metadata round trip; medians of {len([r for r in runs if group(r) == group(runs[0])])}")
print(f"{'place':7} {'cache':5} {'K':>3}  {'threads files/s':>15} {'uring files/s':>13} {'x':>5}"
      f"  {'threads cpu-us/f':>16} {'uring cpu-us/f':>14} {'x':>5}  peak in flight t/u")
keys = sorted({(r["place"], r["cache"], r["inflight"]) for r in runs},
              key=lambda k: (k[0] != "local", k[1] != "warm", k[2]))
for place, cache, k in keys:
    sel = {m: [r for r in runs if group(r) == (place, cache, k, m)] for m in ("threads", "uring")}
    rate = {m: files / statistics.median(r["seconds"] for r in sel[m]) for m in sel}
    cpu = {m: statistics.median(r["cpu_seconds"] for r in sel[m]) / files * 1e6 for m in sel}
    peak = {m: max(r["peak_inflight"] for r in sel[m]) for m in sel}
    print(f"{place:7} {cache:5} {k:>3}  {rate['threads']:>15,.0f} {rate['uring']:>13,.0f} "
          f"{rate['uring'] / rate['threads']:>5.2f}  {cpu['threads']:>16.1f} {cpu['uring']:>14.1f} "
          f"{cpu['uring'] / cpu['threads']:>5.2f}  {peak['threads']}/{peak['uring']}")
PY
