#!/usr/bin/env bash
# dssync vs rsync -a and cp -r, cold cache, in one run: (a) ~20 native shards of ~100 MB (a
# dspack dataset, so dssync verifies every shard against manifest.json), (b) the same
# ImageNet-like tree of N files (dssync hashes and writes its own manifest), and (c) the tree
# through the slow file system (`dsbench slowfs`, 1 ms per metadata round trip: emulated NFS) as
# the source. `cp+sync` is `cp -r && sync`:
# dssync's output is durable (synced) when it exits, cp's and rsync's are not. Fresh destination each
# run, page cache dropped before each run; medians of ROUNDS (peers through FUSE: FUSE_ROUNDS).
# rclone is not installed on Debian 12 by default and is not compared.
#   tools/peers/sync_vs_peers.sh [SAMPLES=20000] [ROUNDS=3] [FUSE_ROUNDS=1]
#   SETS="shards tree fuse" (default) picks which of (a), (b), (c) to run.
# Needs root (drop_caches, FUSE mount), built build/pack/dspack, build/sync/dssync and
# build/bench/dsbench with build/bench/dsbench-slowfs (override with DSPACK, DSSYNC, DSBENCH).
# LATENCY: 1ms.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-20000}
ROUNDS=${2:-3}
FUSE_ROUNDS=${3:-1}
DSPACK=${DSPACK:-$PWD/build/pack/dspack}
DSSYNC=${DSSYNC:-$PWD/build/sync/dssync}
DSBENCH=${DSBENCH:-$PWD/build/bench/dsbench}
W=${BENCH_DIR:-/tmp/dssync-bench}
LATENCY=${LATENCY:-1ms}
SETS=${SETS:-shards tree fuse}
source tools/peers/lib.sh
bench_tree
SHARDS="$W/shards-$N"
if [ ! -f "$SHARDS.done" ]; then
  rm -rf "$SHARDS"
  # ~20 shards: the tree's bytes / 20 per shard.
  "$DSPACK" convert "$SRC" "$SHARDS" -q --shard-size "$((BYTES / 20 / 1000000 + 1))MB"
  touch "$SHARDS.done"
fi
SBYTES=$(du -sb --apparent-size "$SHARDS" | cut -f1)
NSHARDS=$(ls "$SHARDS" | grep -c '^shard-')
MNT="$W/mnt"
trap 'slowfs_umount; rm -rf "$W/out"' EXIT
slowfs_mount "$SRC" "$MNT" "$LATENCY"

results="$W/sync-results.txt"; : > "$results"
srun() {  # srun NAME CMD...: fresh DST, cold cache, timed
  local name=$1; shift
  rm -rf "$W/out"; drop
  /usr/bin/time -f "%e %M" -o "$W/time.txt" "$@" >/dev/null 2>"$W/err.txt" || { cat "$W/err.txt"; exit 1; }
  echo "$name $(cat "$W/time.txt")" >> "$results"
}
for r in $(seq 1 "$ROUNDS"); do
  for set in shards tree; do
    case " $SETS " in *" $set "*) ;; *) continue ;; esac
    s=$SHARDS; [ $set = tree ] && s=$SRC
    srun "$set-dssync" "$DSSYNC" "$s" "$W/out" -q
    srun "$set-rsync" rsync -a "$s/" "$W/out/"
    srun "$set-cp" cp -r "$s" "$W/out"
    srun "$set-cp+sync" sh -c 'cp -r "$1" "$2" && sync' sh "$s" "$W/out"
  done
  case " $SETS " in *" fuse "*) ;; *) continue ;; esac
  srun fuse-dssync "$DSSYNC" "$MNT" "$W/out" -q
  srun fuse-dssync-t64 "$DSSYNC" "$MNT" "$W/out" -q --threads 64
done
case " $SETS " in *" fuse "*) ;; *) FUSE_ROUNDS=0 ;; esac
for r in $(seq 1 "$FUSE_ROUNDS"); do
  srun fuse-rsync rsync -a "$MNT/" "$W/out/"
  srun fuse-cp cp -r "$MNT" "$W/out"
done
# The copy is checked once: dssync's staged tree verifies and equals the source.
rm -rf "$W/out"; "$DSSYNC" "$SHARDS" "$W/out" -q && "$DSSYNC" verify "$W/out" -q
diff -r -x '.dssync-*' "$SHARDS" "$W/out"

PYTHONPATH=tools/peers python3 - "$results" "$N" "$BYTES" "$NSHARDS" "$SBYTES" "$ROUNDS" "$FUSE_ROUNDS" "$LATENCY" <<'PY'
import sys
from runs import load
path, n, b, ns, sb, rounds, fuse_rounds, delay = sys.argv[1:9]
n, b, ns, sb = int(n), int(b), int(ns), int(sb)
med, rss = load(path)
print(f"(a) shards: {ns} native shards, {sb/1e6:.0f} MB; (b) tree: {n} files, {b/1e6:.0f} MB;")
print(f"(c) the tree through the slow file system, {delay} per metadata round trip. Cold cache, fresh DST;")
print(f"medians of {rounds} runs (rsync and cp through FUSE: {fuse_rounds}); rclone: not installed")
print(f"{'run':<18}{'seconds':>9}{'MB/s':>9}{'files/s':>10}{'peak RSS':>10}{'rsync/this':>12}{'cp/this':>9}{'cp+sync/this':>14}")
for set, nb, nf in [("shards", sb, ns), ("tree", b, n), ("fuse", b, n)]:
    for tool in ["dssync", "dssync-t64", "rsync", "cp", "cp+sync"]:
        k = f"{set}-{tool}"
        if k not in med: continue
        rs, cp, cps = med.get(f"{set}-rsync"), med.get(f"{set}-cp"), med.get(f"{set}-cp+sync")
        r1 = f"{rs/med[k]:>11.2f}x" if rs and "dssync" in tool else ""
        r2 = f"{cp/med[k]:>8.2f}x" if cp and "dssync" in tool else ""
        r3 = f"{cps/med[k]:>13.2f}x" if cps and "dssync" in tool else ""
        print(f"{k:<18}{med[k]:>9.2f}{nb/med[k]/1e6:>9.1f}{nf/med[k]:>10.0f}{rss[k]/1024:>8.1f}MB{r1:>12}{r2:>9}{r3:>14}")
PY
