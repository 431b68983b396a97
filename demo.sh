#!/usr/bin/env bash
# The main job on a built-in synthetic dataset: generate an ImageNet-like tree, pack it into
# native shards, verify every byte, stage the dataset with dssync and verify the copy, and print
# what was done and how fast (beside tar -cf); then a quick storage verdict of the local disk
# with dsbench.
#   ./demo.sh [SAMPLES]     default 5000 (~550 MB); work files go to ./demo-out/
# Installs its own prerequisites with apt-get (Debian 12) when they are missing.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/deps.sh
dspack_install_deps
dspack_build build >/dev/null
N=${1:-5000}
DSPACK=$PWD/build/pack/dspack
OUT=demo-out
rm -rf "$OUT" && mkdir -p "$OUT"

echo "== 1. synthesize: $N ImageNet-like samples (class folders, ~110 KB JPEG-like files)"
"$DSPACK" synth imagenet-like "$OUT/src" --samples "$N" --seed 1

echo
echo "== 2. convert into native shards (labels from class folders, 4 KiB-aligned records)"
"$DSPACK" convert "$OUT/src" "$OUT/ds" --label-from-dir --align 4k --shard-size 256MiB

echo
echo "== 3. verify every record checksum, the index and the manifest hashes"
"$DSPACK" verify "$OUT/ds"

echo
echo "== 4. stage it onto local disk with dssync (parallel, each shard checked against the manifest,"
echo "      committed atomically), then re-verify the staged copy"
"$PWD/build/sync/dssync" "$OUT/ds" "$OUT/staged"
"$PWD/build/sync/dssync" verify "$OUT/staged"

echo
echo "== 5. inspect"
"$DSPACK" info "$OUT/ds"
echo "first samples:"
{ "$DSPACK" ls -l "$OUT/ds" || true; } | head -3

echo
echo "== 6. for scale: tar -cf of the same tree (warm cache, same run)"
start=$(date +%s.%N)
tar -cf "$OUT/src.tar" -C "$OUT" src
end=$(date +%s.%N)
python3 - "$start" "$end" "$N" "$(du -sb "$OUT/src" | cut -f1)" <<'PY'
import sys
s, e, n, b = float(sys.argv[1]), float(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
t = e - s
print(f"tar -cf: {n} files in {t:.2f} s, {n/t:.0f} files/s, {b/t/1e6:.1f} MB/s")
PY
rm -f "$OUT/src.tar"

echo
echo "== 7. can this disk feed training? dsbench storage --quick (1 GiB test file, 5 s per test)"
"$PWD/build/bench/dsbench" storage "$OUT" --quick || true  # exit 1 = FAIL is a result, not an error
echo
echo "done: dataset in $OUT/ds, staged copy in $OUT/staged (remove $OUT when finished)"
