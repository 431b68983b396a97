#!/usr/bin/env bash
# The packer through the slow file system (dsbench-slowfs: emulated NFS, 1 ms per metadata op)
# produces the same shards as on the raw directory. Timings: tools/peers/convert_fuse.sh.
source "$(dirname "$0")/lib.sh"
FUSE=${SLOWFS:?set SLOWFS to the dsbench-slowfs binary}
if [ ! -c /dev/fuse ] || ! command -v fusermount3 >/dev/null; then
  echo "skip - no /dev/fuse or fusermount3 here"; exit 77
fi
"$DSPACK" synth coco-like src --samples 150 --seed 6 -q
mkdir mnt
if ! pid=$("$SRC_DIR/tests/fixtures/fuse_mount.sh" "$FUSE" "$WORK/src" "$WORK/mnt" 1ms 2>fuse.err); then
  cat fuse.err; echo "skip - cannot mount FUSE here"; exit 77
fi
trap '"$SRC_DIR/tests/fixtures/fuse_mount.sh" umount "$WORK/mnt" "$pid" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
"$DSPACK" convert src raw.ds --label-from-dir --shard-size 4MiB -q
"$DSPACK" convert mnt fuse.ds --label-from-dir --shard-size 4MiB -q --threads 32
for f in raw.ds/shard-* raw.ds/index.dsi raw.ds/classes.txt; do
  cmp -s "$f" "fuse.ds/${f#raw.ds/}" || fail "$f differs when read through FUSE"
done
"$DSPACK" verify fuse.ds -q
pass "convert through the 1 ms slow file system gives the same shards as on the raw directory"
