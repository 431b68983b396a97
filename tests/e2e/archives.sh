#!/usr/bin/env bash
# Archive sources: every supported kind round-trips byte-exact, and each bad archive gets a clear
# error (exit 1) under --on-error fail, or converts what it can under skip.
source "$(dirname "$0")/lib.sh"

"$DSPACK" synth coco-like src --samples 120 --seed 3 -q
head -c 3000000 /dev/urandom > src/images/big.bin   # over the 1 MiB inline limit: spooled
(cd src && tar -cf ../a.tar images && tar -czf ../a.tgz images && tar --zstd -cf ../a.tar.zst images \
  && tar -cJf ../a.tar.xz images && tar -cjf ../a.tar.bz2 images && zip -qr ../a.zip images \
  && zip -0 -qr ../a0.zip images)
for f in a.tar a.tgz a.tar.zst a.tar.xz a.tar.bz2 a.zip a0.zip; do
  "$DSPACK" convert "$f" "ds_$f" --shard-size 2MiB -q
  "$DSPACK" verify "ds_$f" -q
  "$DSPACK" extract "ds_$f" "ex_$f" -q
  diff -r src "ex_$f" >/dev/null || fail "$f: round trip differs"
  $PY "$SRC_DIR/tests/e2e/native_reader.py" "ds_$f" src >/dev/null || fail "$f: independent reader"
done
# The same tree, as a directory and as archives, packs into the same samples and keys.
"$DSPACK" ls ds_a.tar | sort > keys_tar
"$DSPACK" convert src ds_dir -q && "$DSPACK" ls ds_dir | sort > keys_dir
cmp -s keys_tar keys_dir || fail "archive and directory give different samples"
pass "tar, tgz, tar.zst, tar.xz, tar.bz2, zip (deflated and stored) round-trip byte-exact"

# Labels and filters work as for directories.
"$DSPACK" synth imagenet-like inet --samples 300 --seed 1 -q
(cd inet && tar -czf ../inet.tgz .)
"$DSPACK" convert inet.tgz inet_ds --label-from-dir --exclude 'n01448683/*' -q
"$DSPACK" convert inet inet_dir --label-from-dir --exclude 'n01448683/*' -q
[ "$("$DSPACK" info inet_ds --json | grep '"samples"')" = "$("$DSPACK" info inet_dir --json | grep '"samples"')" ] \
  || fail "filters differ between archive and directory"
cmp -s inet_ds/classes.txt inet_dir/classes.txt || fail "classes differ"
pass "--label-from-dir and --exclude behave as for directories"

# ../ and absolute member names: normalised or refused, never escaping on extract.
$PY - <<'PY'
import io, tarfile
with tarfile.open("evil.tar", "w") as t:
    for name, data in [("ok/a.txt", b"fine"), ("../escape.txt", b"evil"),
                       ("/abs/path.txt", b"abs"), ("./dot/x.txt", b"dot"), ("d//e.txt", b"dbl")]:
        info = tarfile.TarInfo(name); info.size = len(data)
        t.addfile(info, io.BytesIO(data))
PY
expect_exit 1 "$DSPACK" convert evil.tar evil_ds
expect_err "'..' component could escape"
no_final_names evil_ds
"$DSPACK" convert evil.tar evil_ds --on-error skip -q
"$DSPACK" ls evil_ds | sort | tr '\n' ' ' | grep -x 'abs/path d/e dot/x ok/a ' >/dev/null || { "$DSPACK" ls evil_ds; fail "normalised keys"; }
grep -q '"path": "../escape.txt"' evil_ds/manifest.json || fail "refused entry listed"
mkdir -p jail && "$DSPACK" extract evil_ds jail/x -q
[ -e jail/escape.txt ] || [ -e escape.txt ] || [ -e /abs/path.txt ] && fail "extract escaped"
pass "'../' refused (listed under skip), absolute and ./ paths normalised, nothing escapes"

# Encrypted zip entry.
echo secret > plain.txt && zip -q -P pw enc.zip plain.txt
expect_exit 1 "$DSPACK" convert enc.zip enc_ds
expect_err "is encrypted"
pass "encrypted zip entry: exit 1, named"

# Truncated archives: fail stops with the offset; skip converts the readable part.
for f in a.tar a.tgz a.zip; do
  size=$(stat -c %s "$f"); head -c $((size * 6 / 10)) "$f" > "trunc_$f"
  expect_exit 1 "$DSPACK" convert "trunc_$f" "t_$f"
  expect_err "trunc_$f"
  no_final_names "t_$f"
  "$DSPACK" convert "trunc_$f" "t_$f" --on-error skip -q || fail "$f: skip mode must convert the readable part"
  n=$("$DSPACK" info "t_$f" --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["samples"])')
  [ "$n" -gt 0 ] && [ "$n" -lt 121 ] || fail "$f: expected part of the samples, got $n"
  "$DSPACK" verify "t_$f" -q
done
pass "truncated tar, tgz and zip: exit 1 under fail, readable part converted under skip"

# Zip bomb: an expansion ratio limit.
$PY - <<'PY'
import zipfile
with zipfile.ZipFile("bomb.zip", "w", zipfile.ZIP_DEFLATED, compresslevel=9) as z:
    z.writestr("zeros.bin", b"\0" * (200 << 20))
PY
expect_exit 1 "$DSPACK" convert bomb.zip bomb_ds --max-expansion 100
expect_err "zip bomb"
no_final_names bomb_ds
pass "zip bomb refused by --max-expansion ($(stat -c %s bomb.zip) bytes declaring 200 MiB)"

# The same path twice (tar -r), links and directories.
mkdir -p dup && echo one > dup/x.txt && tar -cf dup.tar dup && echo two > dup/x.txt && tar -rf dup.tar dup/x.txt
expect_exit 1 "$DSPACK" convert dup.tar dup_ds
expect_err "duplicate key"
"$DSPACK" convert dup.tar dup_ds --on-error skip -q
[ "$("$DSPACK" cat dup_ds dup/x)" = one ] || fail "the first copy is kept"
mkdir -p links && echo data > links/f.txt && ln -s f.txt links/sym.txt && ln links/f.txt links/hard.txt
tar -cf links.tar links
"$DSPACK" convert links.tar links_ds > links.out
grep -q "archive entries ignored" links.out || fail "ignored entries not counted"
grep -q "symbolic link in the archive" links_ds/manifest.json || fail "symlink not listed"
pass "duplicate path: exit 1 / first copy kept; links and directories skipped, counted, listed"

expect_exit 2 "$DSPACK" convert a.tar shuf --shuffle-seed 1
expect_err "needs random access"
pass "--shuffle-seed on an archive: explained, exit 2"

# Zip names as the zip spec and Python's zipfile decode them (issue 15 #1): UTF-8 when flag bit
# 11 is set (Python sets it for any non-ASCII name), CP437 when it is not (a hand-made fixture
# like CPython's zip_cp437_header.zip: the name's bytes are CP437, bit 11 clear), both to UTF-8,
# in the C locale as in C.UTF-8. Nothing is dropped; --raw-names keeps the CP437 bytes.
$PY - <<'PY'
import zipfile
with zipfile.ZipFile("utf8.zip", "w") as z:
    z.writestr("ok/été.txt", b"accented")
    z.writestr("ok/plain.txt", b"plain")
with zipfile.ZipFile("cp.zip", "w") as z:
    z.writestr("filename_with_XoY.txt", b"cp437 name")
b = open("cp.zip", "rb").read()
open("cp437.zip", "wb").write(b.replace(b"filename_with_XoY.txt", "filename_with_æoå.txt".encode("cp437")))
assert zipfile.ZipFile("cp437.zip").namelist() == ["filename_with_æoå.txt"]
PY
for loc in C C.UTF-8; do
  rm -rf zu zux zc zcx
  LC_ALL=$loc "$DSPACK" convert utf8.zip zu -q
  LC_ALL=$loc "$DSPACK" extract zu zux -q
  [ "$(cat "zux/ok/été.txt")" = accented ] && [ "$(cat zux/ok/plain.txt)" = plain ] ||
    { find zux; fail "LC_ALL=$loc: the UTF-8 name (flag bit 11) was not kept"; }
  LC_ALL=$loc "$DSPACK" convert cp437.zip zc -q
  LC_ALL=$loc "$DSPACK" extract zc zcx -q
  [ "$(cat "zcx/filename_with_æoå.txt")" = "cp437 name" ] ||
    { find zcx; fail "LC_ALL=$loc: the CP437 name did not come out as zipfile names it"; }
done
rm -rf zr zrx
"$DSPACK" convert cp437.zip zr -q --raw-names
"$DSPACK" extract zr zrx -q
[ "$(cat "zrx/filename_with_$(printf '\x91')o$(printf '\x86').txt")" = "cp437 name" ] ||
  { find zrx | od -c | head; fail "--raw-names did not keep the stored bytes"; }
pass "zip names: UTF-8 (bit 11) and CP437 decoded as zipfile does, in C and C.UTF-8; --raw-names keeps bytes"
