#!/usr/bin/env bash
# The main job on a built-in synthetic dataset: generate an ImageNet-like tree, then ask "which
# layout should this dataset be in, here and on NFS?": dsbench compare builds it as a directory
# tree, zip, native shards, LMDB, WebDataset and TFRecord, replays the same training job against
# each (cold and warm page cache: on local disk, through a slow file system with 1 ms metadata
# round trips, and over real NFS at 1 ms RTT: nfs-ganesha in a network namespace behind a delay
# line, read through libnfs, tests/e2e/nfs_fixture.sh), and prints the ranked tables with each
# layout's RPC bill, the recommendation and the path of the HTML report. Then it verifies the
# native shards, stages them with dssync, and gives a quick storage verdict of the local disk.
# The NFS part needs root and nfs-ganesha (deps.sh installs it); without them it says why and
# goes on without it.
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
OUT=$(cd "$OUT" && pwd)

# The real NFS server: the tree and the layouts live in its export, and compare runs in the
# client's network namespace, where the server is reached through the delay line.
DATA=$OUT
nfs=()
run=()
if [ "$(id -u)" -eq 0 ] && command -v ganesha.nfsd >/dev/null; then
  WORK=$OUT DELAY_LINE=$PWD/build/tests/dspack-delay-line
  source tests/e2e/nfs_fixture.sh
  nfs_skip() { echo "(no NFS runs here: $*)"; }
  fail() { echo "demo: $*" >&2; exit 1; }
  trap nfs_stop EXIT
  if nfs_start; then
    nfs_delay 500
    DATA=$NFS_EXPORT_DIR
    nfs=(--nfs-url "$NFS_DELAYED_URL" --nfs-root "$NFS_EXPORT_DIR")
    run=(nfs_client)
  fi
else
  echo "(no NFS runs: they need root and nfs-ganesha, as scripts/deps.sh installs)"
fi

echo "== 1. synthesize: $N ImageNet-like samples (class folders, ~110 KB JPEG-like files)"
"$DSPACK" synth imagenet-like "$DATA/src" --samples "$N" --seed 1

echo
echo "== 2. dsbench compare: every layout, the same job (4 workers, batch 32, 2 epochs, one"
echo "      simulated GPU taking 10 ms a step: the AU column and FEEDS/STARVES), cold and warm,"
echo "      on local disk, through the slow file system (1 ms per metadata round trip) and,"
echo "      where it can run, over real NFS at 1 ms RTT (with each layout's RPC bill)"
cold=()
[ "$(id -u)" -eq 0 ] && cold=(--drop-caches)  # a cold that also drops dentries and inodes
slow=(--meta-latency 1ms)
if [ ! -e /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
  echo "(no /dev/fuse here: local disk only)"
  slow=()
fi
"${run[@]}" "$DSBENCH" compare "$DATA/src" --work-dir "$DATA/compare" --label-from-dir --epochs 2 \
  --workers 4 --gpus 1 --step-time 10ms "${slow[@]}" "${cold[@]}" "${nfs[@]}"

echo
echo "== 3. verify the native shards compare built: every record checksum, the index, the manifest"
"$DSPACK" verify "$DATA/compare/native"

echo
echo "== 4. stage them onto local disk with dssync (parallel, checked against the manifest,"
echo "      committed atomically), then re-verify the staged copy"
"$PWD/build/sync/dssync" "$DATA/compare/native" "$OUT/staged"
"$PWD/build/sync/dssync" verify "$OUT/staged"

echo
echo "== 5. can this disk feed training? dsbench storage --quick (1 GiB test file, 5 s per test)"
"$DSBENCH" storage "$OUT" --quick || true  # exit 1 = FAIL is a result, not an error
echo
echo "done: the report is $DATA/compare/report.html (JSON: $DATA/compare/compare.json);"
echo "remove $OUT when finished"
