#!/usr/bin/env bash
# The main job on a built-in synthetic dataset: generate an ImageNet-like tree, then ask "which
# layout should this dataset be in, here and on NFS?": dsbench compare builds it as a directory
# tree, zip, native shards, LMDB, WebDataset and TFRecord, replays the same training job against
# each (cold and warm page cache, on local disk and through a slow file system with 1 ms
# metadata round trips), and prints the ranked table, the recommendation and the path of the
# HTML report. Then it verifies the native shards, stages them with dssync, and gives a quick
# storage verdict of the local disk.
#   ./demo.sh [SAMPLES]     default 3000 (~330 MB); work files go to ./demo-out/
# Installs its own prerequisites with apt-get (Debian 12) when they are missing.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/deps.sh
dspack_install_deps
dspack_build build >/dev/null
N=${1:-3000}
DSPACK=$PWD/build/pack/dspack
DSBENCH=$PWD/build/bench/dsbench
OUT=demo-out
rm -rf "$OUT" && mkdir -p "$OUT"

echo "== 1. synthesize: $N ImageNet-like samples (class folders, ~110 KB JPEG-like files)"
"$DSPACK" synth imagenet-like "$OUT/src" --samples "$N" --seed 1

echo
echo "== 2. dsbench compare: every layout, the same job (4 workers, batch 32, 2 epochs, one"
echo "      simulated GPU taking 10 ms a step: the AU column and FEEDS/STARVES), cold and warm,"
echo "      on local disk and through the slow file system (1 ms per metadata round trip)"
cold=()
[ "$(id -u)" -eq 0 ] && cold=(--drop-caches)  # a cold that also drops dentries and inodes
slow=(--meta-latency 1ms)
if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
  echo "(no /dev/fuse here: local disk only)"
  slow=()
fi
"$DSBENCH" compare "$OUT/src" --work-dir "$OUT/compare" --label-from-dir --epochs 2 --workers 4 \
  --gpus 1 --step-time 10ms "${slow[@]}" "${cold[@]}"

echo
echo "== 3. verify the native shards compare built: every record checksum, the index, the manifest"
"$DSPACK" verify "$OUT/compare/native"

echo
echo "== 4. stage them onto local disk with dssync (parallel, checked against the manifest,"
echo "      committed atomically), then re-verify the staged copy"
"$PWD/build/sync/dssync" "$OUT/compare/native" "$OUT/staged"
"$PWD/build/sync/dssync" verify "$OUT/staged"

echo
echo "== 5. can this disk feed training? dsbench storage --quick (1 GiB test file, 5 s per test)"
"$DSBENCH" storage "$OUT" --quick || true  # exit 1 = FAIL is a result, not an error
echo
echo "done: the report is $OUT/compare/report.html (JSON: $OUT/compare/compare.json);"
echo "remove $OUT when finished"
