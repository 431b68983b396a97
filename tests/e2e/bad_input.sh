#!/usr/bin/env bash
# Each bad input: a clear one-line error naming the path, the documented exit code, and never a
# partial dataset under final names.
source "$(dirname "$0")/lib.sh"
chmod 755 "$WORK"
mk() { rm -rf src; mkdir -p src/c1 src/c2; for i in 1 2 3; do head -c 5000 /dev/urandom > "src/c1/$i.jpg"; head -c 3000 /dev/urandom > "src/c2/$i.jpg"; done; }

mk; ln -s nowhere src/c1/broken.jpg
expect_exit 1 "$DSPACK" convert src out
expect_err "c1/broken.jpg: broken symlink"
[ "$(wc -l < "$WORK/last.err")" -eq 1 ] || fail "error must be one line"
no_final_names out
expect_exit 0 "$DSPACK" convert src out --on-error skip --json
grep -q '"skipped": 1' "$WORK/last.out" || fail "skip count in --json summary"
grep -q '"path": "c1/broken.jpg"' out/manifest.json || fail "skipped input listed in manifest"
[ "$("$DSPACK" info out --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["samples"])')" = 6 ] \
  || fail "the other samples must still be packed"
rm -rf out
pass "broken symlink: exit 1 under fail; counted and listed under skip"

mk; ln -s loop src/c1/loop; ln -s .. src/c2/up
expect_exit 1 "$DSPACK" convert src out
expect_err "symlink loop"
no_final_names out
pass "symlink loop (self and to an ancestor): exit 1"

# OUT already holds a dataset.
mk; "$DSPACK" convert src out -q
expect_exit 2 "$DSPACK" convert src out
expect_err "already holds a dspack dataset; pass --force"
"$DSPACK" convert src out -q --force
mkdir notempty; echo mine > notempty/notes.txt
expect_exit 2 "$DSPACK" convert src notempty
expect_err "notes.txt"
[ "$(cat notempty/notes.txt)" = mine ] || fail "user file touched"
pass "existing dataset refused without --force; foreign files never touched"

# Layout options are validated at the formats/ boundary, for every layout, and named as flags.
mk
for f in native wds tfrecord recordio; do
  expect_exit 2 "$DSPACK" convert src "tiny-$f" --format "$f" --shard-size 1
  expect_err "--shard-size 1 B: must be at least 4.0 KiB"
  [ ! -e "tiny-$f" ] || fail "$f: --shard-size 1 left tiny-$f behind"
done
expect_exit 2 "$DSPACK" convert src db --format lmdb --shard-size 1MiB
expect_err "--shard-size does not apply to lmdb"
expect_exit 2 "$DSPACK" convert src w --format wds --align 4k
expect_err "--align does not apply to wds"
expect_exit 2 "$DSPACK" convert src t --format tfrecord --resume
expect_err "tfrecord cannot resume an interrupted write"
if grep -E '`[a-z_]+(=[a-z]+)?`' "$WORK/last.err" >/dev/null; then fail "a field name left unrendered"; fi
pass "--shard-size below 4 KiB refused for every sharded layout; lmdb refuses it; --align and --resume refused where they do not apply"

# Unreadable file, as an unprivileged user (root reads everything).
if command -v setpriv >/dev/null && setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
  mk; chmod 000 src/c2/2.jpg; chmod -R a+rX src; chmod 000 src/c2/2.jpg
  mkdir -p userout && chmod 777 userout
  asuser() { setpriv --reuid=65534 --regid=65534 --clear-groups "$@"; }
  # The build tree may sit under a directory nobody cannot enter (/root): run a copy.
  cp "$DSPACK" "$WORK/dspack-copy" && chmod 755 "$WORK/dspack-copy"
  DSPACK="$WORK/dspack-copy"
  expect_exit 1 asuser "$DSPACK" convert src userout/ds
  expect_err "c2/2.jpg: Permission denied"
  no_final_names userout/ds
  expect_exit 0 asuser "$DSPACK" convert src userout/ds2 --on-error skip -q
  grep -q '"path": "c2/2.jpg"' userout/ds2/manifest.json || fail "unreadable file not listed"
  # Read-only OUT for an unprivileged user.
  mkdir -p rodir && chmod 555 rodir
  expect_exit 2 asuser "$DSPACK" convert src rodir/ds
  expect_err "Permission denied"
  pass "unreadable file: exit 1 / skipped; unwritable OUT: exit 2"
else
  echo "skip - setpriv cannot drop to nobody here"
fi

# Read-only file system and a full disk, on small tmpfs mounts (root only).
if mkdir -p ro full && mount -t tmpfs -o ro,size=1m tmpfs ro 2>/dev/null; then
  MOUNTS+=("$WORK/ro")
  mk
  expect_exit 2 "$DSPACK" convert src ro/ds
  expect_err "Read-only file system"
  mount -t tmpfs -o size=256k tmpfs full
  MOUNTS+=("$WORK/full")
  rm -rf big; mkdir big; for i in $(seq 1 20); do head -c 50000 /dev/urandom > "big/$i.bin"; done
  expect_exit 2 "$DSPACK" convert big full/ds --shard-size 64k
  expect_err "No space left on device"
  [ "$(wc -l < "$WORK/last.err")" -eq 1 ] || fail "error must be one line"
  [ -z "$(ls -A full)" ] || { ls -la full full/*; fail "a failed convert must leave nothing in a fresh OUT"; }
  # Every layout says so in the same words (issue 15: LMDB said "Input/output error").
  for fmt in lmdb wds tfrecord recordio; do
    expect_exit 2 "$DSPACK" convert big "full/$fmt" --format "$fmt"
    expect_err "No space left on device"
    [ -z "$(ls -A full)" ] || { ls -la full full/*; fail "$fmt: a failed convert left files"; }
  done
  pass "read-only OUT and disk full: exit 2, clear error, nothing left behind"
else
  echo "skip - cannot mount tmpfs here"
fi

# A 0-byte archive (a failed download) is bad input, exit 1, never an empty dataset (issue 15):
# unzip, tar and Python refuse these files too. Every layout, nothing under a final name.
for ext in zip tar tar.gz tgz tar.xz; do
  : > "empty.$ext"
  for fmt in native wds; do
    rm -rf "e.$fmt"
    expect_exit 1 "$DSPACK" convert "empty.$ext" "e.$fmt" --format "$fmt"
    expect_err "empty.$ext: not an archive: 0 bytes"
    [ "$(wc -l < "$WORK/last.err")" -eq 1 ] || fail "error must be one line"
    [ ! -e "e.$fmt" ] || [ -z "$(ls -A "e.$fmt")" ] || fail "empty.$ext left files in e.$fmt"
  done
done
pass "0-byte .zip/.tar/.tar.gz/.tgz/.tar.xz: exit 1, 'not an archive: 0 bytes', nothing written"

# --force replaces a dataset of any layout dspack wrote (issue 15): native -> wds -> lmdb ->
# native, each replacing the last with nothing of it left; without --force, the refusal names a
# file of the other layout and the flag. A file dspack did not write is still never deleted.
mk
rm -rf fx
"$DSPACK" convert src fx -q
expect_exit 2 "$DSPACK" convert src fx --format wds
expect_err "holds a dspack dataset of another layout"
expect_err "pass --force to replace it with wds"
for fmt in wds lmdb native; do
  "$DSPACK" convert src fx --format "$fmt" --force -q
  "$DSPACK" verify fx -q
  "$DSPACK" info fx | grep -q "$fmt" || { "$DSPACK" info fx; fail "fx is not $fmt after --force"; }
done
[ ! -e fx/dspack.json ] && [ ! -e fx/data.mdb ] && ! ls fx | grep -q '\.tar$' ||
  { ls fx; fail "--force left files of the replaced layout"; }
echo mine > fx/notes.txt
expect_exit 2 "$DSPACK" convert src fx --format wds --force
expect_err "notes.txt"
pass "--force replaces native, wds and lmdb with each other; a file not ours still stops it"

# A FIFO under --on-error fail: the run fails, and the message does not say "skipped" (issue 15);
# under skip it is listed.
mk; mkfifo src/c1/pipe.jpg
expect_exit 1 "$DSPACK" convert src ff
expect_err "c1/pipe.jpg: a fifo, not a regular file: it cannot be packed"
grep -q "skipped" "$WORK/last.err" && fail "a failed run's error says skipped"
"$DSPACK" convert src fs --on-error skip -q
grep -q "c1/pipe.jpg" fs/manifest.json || fail "the fifo is not listed under skip"
pass "fifo: an error that names it under fail, a listed skip under skip"
