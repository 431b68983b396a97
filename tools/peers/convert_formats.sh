#!/usr/bin/env bash
# dspack convert into each layout vs the tools users reach for today, in one run, warm cache,
# median of ROUNDS runs each:
#   - every layout vs `tar -cf` of the same tree (the peer for wds: same bytes, one tar);
#   - lmdb vs a python3-lmdb script putting one key per file in batched transactions (what
#     python-lmdb dataset recipes do).
#   tools/peers/convert_formats.sh [SAMPLES=5000] [ROUNDS=3]
# Work files under ${BENCH_DIR:-/tmp/dspack-bench}. Needs a built build/pack/dspack.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-5000}
ROUNDS=${2:-3}
DSPACK=${DSPACK:-$PWD/build/pack/dspack}
W=${BENCH_DIR:-/tmp/dspack-bench}
source tools/peers/lib.sh
bench_tree
results="$W/formats.txt"
: > "$results"
cat > "$W/lmdb_put.py" <<'PY'
import lmdb, os, sys
src, out = sys.argv[1], sys.argv[2]
env = lmdb.open(out, map_size=1 << 40, lock=False)
txn, n = env.begin(write=True), 0
for root, dirs, files in os.walk(src):
    dirs.sort()
    for f in sorted(files):
        p = os.path.join(root, f)
        with open(p, "rb") as fh:
            txn.put(("%010d.%s" % (n, os.path.relpath(p, src))).encode(), fh.read())
        n += 1
        if n % 4096 == 0:
            txn.commit()
            txn = env.begin(write=True)
txn.commit()
env.sync(True)
PY
for r in $(seq 1 "$ROUNDS"); do
  cat "$SRC"/*/* > /dev/null  # warm
  for f in native wds tfrecord recordio lmdb; do
    run "$f" "$DSPACK" convert "$SRC" "$W/out.ds" --format "$f" -q
  done
  run "tar" sh -c "tar -cf '$W/out.tar' -C '$W' 'imagenet-$N' && sync"
  run "python-lmdb" /usr/bin/python3 "$W/lmdb_put.py" "$SRC" "$W/out.ds"
done
rm -rf "$W/out.ds" "$W/out.tar"
PYTHONPATH=tools/peers python3 - "$results" "$N" "$BYTES" "$ROUNDS" <<'PY'
import sys
from runs import load
path, n, b, rounds = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
med, rss = load(path)
print(f"tree: {n} files, {b/1e6:.1f} MB, warm; median of {rounds} runs each, one invocation")
print(f"{'convert to':<13}{'seconds':>9}{'files/s':>10}{'MB/s':>9}{'peak RSS':>10}{'vs tar+sync':>13}")
for k in ["native", "wds", "tfrecord", "recordio", "lmdb", "tar", "python-lmdb"]:
    print(f"{k:<13}{med[k]:>9.2f}{n/med[k]:>10.0f}{b/med[k]/1e6:>9.1f}{rss[k]/1024:>8.1f}MB"
          f"{med['tar']/med[k]:>12.2f}x")
print(f"lmdb: dspack is {med['python-lmdb']/med['lmdb']:.2f}x a python3-lmdb put loop")
PY
