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

# Truncated archives: fail stops with the offset; skip converts the readable part of a stream
# (tar, tgz). A zip's entry list is its central directory, at the end: cut, it is an error under
# skip too (issue 15: the central directory is the entry list; libarchive guessed from local
# headers and converted part with exit 0).
for f in a.tar a.tgz a.zip; do
  size=$(stat -c %s "$f"); head -c $((size * 6 / 10)) "$f" > "trunc_$f"
  expect_exit 1 "$DSPACK" convert "trunc_$f" "t_$f"
  expect_err "trunc_$f"
  no_final_names "t_$f"
  if [ "$f" = a.zip ]; then
    expect_exit 1 "$DSPACK" convert "trunc_$f" "t_$f" --on-error skip
    expect_err "no end of central directory record"
    no_final_names "t_$f"
    continue
  fi
  "$DSPACK" convert "trunc_$f" "t_$f" --on-error skip -q || fail "$f: skip mode must convert the readable part"
  n=$("$DSPACK" info "t_$f" --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["samples"])')
  [ "$n" -gt 0 ] && [ "$n" -lt 121 ] || fail "$f: expected part of the samples, got $n"
  "$DSPACK" verify "t_$f" -q
done
pass "truncated tar, tgz: exit 1 under fail, readable part converted under skip; a cut zip: exit 1 under both"

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

# A path component over 255 bytes (NAME_MAX) could never be extracted (issue 15): convert refuses
# the entry naming it (a listed skip under --on-error skip); extract of a foreign dataset that
# holds one refuses that sample, exit 1, and leaves no .dspack-tmp file behind.
long=$(printf 'x%.0s' $(seq 300))
$PY - "$long" <<'PY'
import io, os, sys, tarfile
long = sys.argv[1]
with tarfile.open("long.tar", "w", format=tarfile.PAX_FORMAT) as t:
    for name, data in ((f"d/{long}.txt", b"too long"), ("d/ok.txt", b"fine")):
        i = tarfile.TarInfo(name); i.size = len(data); t.addfile(i, io.BytesIO(data))
os.makedirs("lw", exist_ok=True)
with tarfile.open("lw/shard-000000.tar", "w", format=tarfile.PAX_FORMAT) as t:
    for name, data in ((f"{long}.txt", b"too long"), ("ok.txt", b"fine")):
        i = tarfile.TarInfo(name); i.size = len(data); t.addfile(i, io.BytesIO(data))
PY
rm -rf lo lo2 lx
expect_exit 1 "$DSPACK" convert long.tar lo
expect_err "a path component of 304 bytes; file systems allow 255 (NAME_MAX)"
"$DSPACK" convert long.tar lo2 --on-error skip -q
"$DSPACK" extract lo2 lx -q
[ "$(cat lx/d/ok.txt)" = fine ] || fail "the good entry was not kept under --on-error skip"
grep -q "NAME_MAX" lo2/manifest.json || fail "the refused entry is not listed in skipped"
rm -rf lx
expect_exit 1 "$DSPACK" extract lw lx -q
grep -q "a path component of 304 bytes" "$WORK/last.err" || { cat "$WORK/last.err"; fail "extract: long component not named"; }
[ "$(cat lx/ok.txt)" = fine ] || fail "extract dropped the good sample"
[ -z "$(find lx -name '.dspack-tmp.*')" ] || fail "extract left a .dspack-tmp file"
pass "path components over 255 bytes: refused at convert (listed under skip), refused at extract with no tmp file left"

# Zip central-directory entries that overlap one local entry (issue 15 #2): 1,000 names for one
# 1 MiB entry's bytes. libarchive kept one name and dropped 999 silently (exit 0); now it is a
# zip bomb refused, exit 1, naming two of the members. And a zip whose central directory is cut
# is an error, not a smaller dataset: the central directory is the entry list.
$PY - <<'PY'
import os, struct, zipfile
with zipfile.ZipFile("one.zip", "w") as z:
    z.writestr("a.bin", os.urandom(1 << 20))
b = open("one.zip", "rb").read()
cd, eocd = b.find(b"PK\x01\x02"), b.rfind(b"PK\x05\x06")
fixed = b[cd:cd + 46]
names = [f"n{i:04d}.bin".encode() for i in range(1000)]
cds = b"".join(fixed[:28] + struct.pack("<HHH", len(n), 0, 0) + fixed[34:46] + n for n in names)
end = b"PK\x05\x06" + struct.pack("<HHHHIIH", 0, 0, len(names), len(names), len(cds), cd, 0)
open("overlap.zip", "wb").write(b[:cd] + cds + end)
assert len(zipfile.ZipFile("overlap.zip").namelist()) == 1000
with zipfile.ZipFile("ten.zip", "w") as z:
    for i in range(10):
        z.writestr(f"f{i}.txt", f"file {i}")
b = open("ten.zip", "rb").read()
open("cutcd.zip", "wb").write(b[:b.find(b"PK\x01\x02") + 200])  # directory cut after 200 bytes
PY
rm -rf ov cc
expect_exit 1 "$DSPACK" convert overlap.zip ov
expect_err "overlap.zip: members n0000.bin and n0001.bin overlap"
[ ! -e ov/manifest.json ] || fail "an overlapping zip left a dataset"
expect_exit 1 "$DSPACK" convert cutcd.zip cc
expect_err "cutcd.zip"
[ ! -e cc/manifest.json ] || fail "a zip with a cut central directory left a dataset"
pass "overlapping zip entries (1,000 names, one entry) and a cut central directory: exit 1, nothing written"

# Truncation, one rule for every archive type (docs/formats/archives.md, "Truncation"): a
# compressed stream cut anywhere (even in its trailer, after the last entry) is exit 1, since its
# own check (gzip, bzip2, xz) was not reached; a plain tar that lost only end-of-archive zeros
# reads whole, as GNU tar reads it; a tar cut inside an entry is exit 1. Before: a .tar.gz, .bz2
# or .xz missing its last bytes converted with exit 0.
mkdir -p tr.src/a && for i in $(seq 20); do head -c $((i * 300)) /dev/urandom > "tr.src/a/f$i.bin"; done
$PY - <<'PY'
import tarfile
for mode, ext in (("w", "tar"), ("w:gz", "tar.gz"), ("w:bz2", "tar.bz2"), ("w:xz", "tar.xz")):
    with tarfile.open(f"tr.{ext}", mode, format=tarfile.GNU_FORMAT) as t:
        t.add("tr.src/a", arcname="a")
PY
for ext in tar.gz tar.bz2 tar.xz; do
  for cut in 1 4; do
    rm -rf tro && cp "tr.$ext" "cut.$ext" && truncate -s -"$cut" "cut.$ext"
    expect_exit 1 "$DSPACK" convert "cut.$ext" tro
    expect_err "cut.$ext"
    no_final_names tro
  done
done
size=$(stat -c %s tr.tar)
for cut in 1 1024; do  # only zeros of the end blocks and record padding
  rm -rf tro && cp tr.tar cut.tar && truncate -s -"$cut" cut.tar
  expect_exit 0 "$DSPACK" convert cut.tar tro -q
  [ "$("$DSPACK" ls tro | wc -l)" = 20 ] || fail "a tar missing $cut end zeros lost entries"
done
last_end=$($PY -c 'import tarfile; m = tarfile.open("tr.tar").getmembers()[-1]; print(m.offset_data + m.size)')
rm -rf tro && cp tr.tar cut.tar && truncate -s $((last_end - 1)) cut.tar
expect_exit 1 "$DSPACK" convert cut.tar tro
expect_err "cut.tar"
no_final_names tro
# Two tars concatenated (cat a.tar b.tar): the members after the first end marker are read.
(mkdir -p cat.b/b && echo x > cat.b/b/x.txt && tar -cf catb.tar -C cat.b b && cat tr.tar catb.tar > both.tar)
rm -rf tro && expect_exit 0 "$DSPACK" convert both.tar tro -q
[ "$("$DSPACK" ls tro | wc -l)" = 21 ] || fail "the second of two concatenated tars was dropped"
pass "truncation: a cut .tar.gz, .tar.bz2, .tar.xz (last 1 or 4 bytes) and a tar cut in an entry exit 1; a tar missing only end zeros, and concatenated tars, read whole"
