#!/usr/bin/env bash
# dspack convert vs tar -cf on the same tree, in one run: cold (drop_caches, needs root) and warm,
# median of ROUNDS runs each, with files/s, MB/s, peak RSS and the ratio to tar.
#   tools/peers/convert_vs_tar.sh [SAMPLES=20000] [ROUNDS=5]
# Writes work files under ${BENCH_DIR:-/tmp/dspack-bench}. Needs a built build/pack/dspack.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-20000}
ROUNDS=${2:-5}
DSPACK=${DSPACK:-$PWD/build/pack/dspack}
W=${BENCH_DIR:-/tmp/dspack-bench}
source tools/peers/lib.sh
bench_tree
can_drop=0
if [ -w /proc/sys/vm/drop_caches ]; then can_drop=1; fi

results="$W/results.txt"
: > "$results"
for r in $(seq 1 "$ROUNDS"); do
  for cache in cold warm; do
    for tool in dspack tar tar+sync; do
      if [ "$cache" = cold ]; then
        [ $can_drop = 1 ] || continue
        drop
      else
        cat "$SRC"/*/* > /dev/null  # make sure the tree is cached
      fi
      if [ $tool = dspack ]; then
        run "$cache-dspack" "$DSPACK" convert "$SRC" "$W/out.ds" -q
      elif [ $tool = tar ]; then
        run "$cache-tar" tar -cf "$W/out.tar" -C "$W" "imagenet-$N"
      else  # dspack fsyncs its shards; this peer makes tar's output durable too
        run "$cache-tar+sync" sh -c "tar -cf '$W/out.tar' -C '$W' 'imagenet-$N' && sync"
      fi
    done
  done
done
# The limits: the same bytes read as one sequential file, and copied as one (warm), using the
# packed dataset itself as that file.
"$DSPACK" convert "$SRC" "$W/seq.ds" -q --force --shard-size 64GiB
for r in $(seq 1 "$ROUNDS"); do
  cat "$W"/seq.ds/shard-*.dsr > /dev/null
  /usr/bin/time -f "%e %M" -o "$W/time.txt" cat "$W"/seq.ds/shard-000000.dsr > /dev/null
  echo "warm-seqread $(cat "$W/time.txt")" >> "$results"
  rm -f "$W/seq.copy"; sync
  /usr/bin/time -f "%e %M" -o "$W/time.txt" \
    dd if="$W/seq.ds/shard-000000.dsr" of="$W/seq.copy" bs=4M oflag=direct conv=fsync status=none
  echo "warm-seqcopy $(cat "$W/time.txt")" >> "$results"
done
rm -rf "$W/out.ds" "$W/out.tar" "$W/seq.ds" "$W/seq.copy"

PYTHONPATH=tools/peers python3 - "$results" "$N" "$BYTES" "$ROUNDS" <<'PY'
import sys
from runs import load
path, n, b, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
med, rss = load(path)
print(f"tree: {n} files, {b/1e6:.1f} MB; median of {rounds} runs each, measured in one invocation")
print(f"{'run':<15}{'seconds':>9}{'files/s':>10}{'MB/s':>9}{'peak RSS':>10}{'vs tar':>8}")
for k in ["cold-dspack", "cold-tar", "cold-tar+sync", "warm-dspack", "warm-tar", "warm-tar+sync",
          "warm-seqread", "warm-seqcopy"]:
    if k not in med: continue
    cache = k.split("-")[0]
    ratio = med.get(f"{cache}-tar", 0) / med[k] if k.endswith("dspack") else None
    print(f"{k:<15}{med[k]:>9.2f}{n/med[k]:>10.0f}{b/med[k]/1e6:>9.1f}{rss[k]/1024:>8.1f}MB"
          + (f"{ratio:>7.2f}x" if ratio else ""))
    if ratio and f"{cache}-tar+sync" in med:
        print(f"{'':<15}{'':>46} vs tar+sync {med[f'{cache}-tar+sync']/med[k]:.2f}x")
for lim, what in [("warm-seqread", "reading the bytes as one file"),
                  ("warm-seqcopy", "copying them as one file (dd, O_DIRECT out, fsync)")]:
    if lim in med and "warm-dspack" in med:
        print(f"warm dspack takes {med['warm-dspack']/med[lim]:.2f}x the time of {what}")
PY
