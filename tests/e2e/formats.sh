#!/usr/bin/env bash
# The interop layouts (docs/formats/{lmdb,wds,tfrecord,recordio}.md): native -> each layout ->
# native again, byte-exact; every output read by readers dspack did not write (layout_readers.py
# from the public specs, GNU tar, python3-lmdb); any-to-any chains; a tree and a .tar straight to
# each layout; truncated and corrupted inputs; an LMDB read while another process writes to it.
# Every step streams the whole dataset (N samples of ~110 KB each, about 30 passes): timed step
# by step, the test waited mostly on the disk, and on the page cache that the cold-cache tests
# beside it under ctest -j2 drop. So its scratch directory is on tmpfs when that has room
# (8 GiB free: it holds several copies of the dataset, 220 MB at the default N=2000, which still
# makes 27 shards of 8 MiB per sharded layout), unless TMPDIR says where.
shm_kib=$(df -Pk /dev/shm 2>/dev/null | awk 'NR == 2 {print $4}') || true
if [ -z "${TMPDIR:-}" ] && [ "${shm_kib:-0}" -gt $((8 << 20)) ]; then export TMPDIR=/dev/shm; fi
source "$(dirname "$0")/lib.sh"
# --shard-size SIZE for a sharded layout; nothing for LMDB, which is one file and refuses it.
shard_size() { [ "$1" = lmdb ] || echo "--shard-size $2"; }
READER="$SRC_DIR/tests/e2e/layout_readers.py"
N=${DSPACK_E2E_FORMAT_SAMPLES:-2000}
if [ -n "${DSPACK_E2E_SAMPLES:-}" ] && [ "$DSPACK_E2E_SAMPLES" -lt "$N" ]; then N=$DSPACK_E2E_SAMPLES; fi
$PY -c 'import lmdb' 2>/dev/null || fail "needs python3-lmdb for $PY (scripts/deps.sh)"

# no_layout_names DIR: a failed convert left nothing under a final name of any layout.
no_layout_names() {
  [ -d "$1" ] || return 0
  ls -A "$1" > "$WORK/ls.txt"
  if grep -Eq '^(dspack\.json|manifest\.json|index\.dsi|classes\.txt|data\.mdb|shard-[0-9]+\.(dsr|tar|tfrecord|rec|idx|lst))$' "$WORK/ls.txt"; then
    ls -la "$1"; fail "final names left in $1 after a failed run"
  fi
}
# expect_msg ERE: the last command's stdout or stderr (verify lists problems on stdout) matches.
expect_msg() {
  grep -Eq -- "$1" "$WORK/last.out" "$WORK/last.err" || { cat "$WORK/last.out" "$WORK/last.err"; fail "no message matching: $1"; }
}
# spec_read FORMAT OUT REF: the independent reader accepts OUT and extracts exactly REF.
spec_read() {
  $PY "$READER" "$1" "$2" "spec.$2" > spec.log || { cat spec.log; fail "$2: layout_readers.py rejects it"; }
  diff -r "$3" "spec.$2" > /dev/null || fail "$2: the spec reader's extract differs from $3"
  rm -rf "spec.$2"
}

$PY "$SRC_DIR/tests/e2e/layout_readers_selftest.py" > selftest.log || { cat selftest.log; fail "layout_readers self-test"; }
pass "layout_readers.py self-test: $(tail -1 selftest.log)"

"$DSPACK" synth imagenet-like src --samples "$N" --seed 11 -q
"$DSPACK" convert src nat --label-from-dir --quiet
"$DSPACK" extract nat ref --with-labels --quiet
"$DSPACK" ls nat > nat.keys
[ "$(wc -l < nat.keys)" -eq "$N" ] || fail "native ls lists $N keys"
KEY=$(sed -n 2p nat.keys)
[ -f "ref/$KEY.JPEG" ] && [ -f "ref/$KEY.cls" ] || fail "ref holds $KEY.JPEG and its label"
pass "reference: $N imagenet-like samples, native, extracted with labels"

# check_layout OUT FORMAT: everything that reads OUT agrees with ref, byte for byte.
check_layout() {
  local out=$1 f=$2
  spec_read "$f" "$out" ref
  "$DSPACK" verify "$out" -q || fail "$out: verify"
  "$DSPACK" info "$out" > /dev/null || fail "$out: info"
  [ "$("$DSPACK" info "$out" --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["samples"])')" = "$N" ] \
    || fail "$out: info --json does not say $N samples"
  "$DSPACK" ls "$out" > ls.txt
  cmp -s nat.keys ls.txt || fail "$out: ls differs from the native keys (order included)"
  "$DSPACK" cat "$out" "$KEY" --field JPEG > cat.bin
  cmp -s cat.bin "ref/$KEY.JPEG" || fail "$out: cat $KEY --field JPEG"
  "$DSPACK" extract "$out" "x.$out" --with-labels -q
  diff -r ref "x.$out" > /dev/null || fail "$out: extract differs from ref"
  "$DSPACK" convert "$out" "back.$out" --quiet
  "$DSPACK" verify "back.$out" -q
  "$DSPACK" extract "back.$out" "xb.$out" --with-labels -q
  diff -r ref "xb.$out" > /dev/null || fail "$out: back to native is not payload-identical"
  rm -rf "x.$out" "back.$out" "xb.$out"
}

for f in lmdb wds tfrecord recordio; do
  "$DSPACK" convert nat "out.$f" --format "$f" $(shard_size "$f" 8M) > "conv.$f.txt"
  check_layout "out.$f" "$f"
  pass "$f: spec reader, verify, info, ls, cat, extract and the way back to native agree with ref"
done
# From a dataset (native or not) the summary counts samples and their fields, never files.
n=$(wc -l < nat.keys)
grep -q "^converted $n samples ([0-9]* fields) of a dataset" conv.wds.txt || { cat conv.wds.txt; fail "native -> wds: the summary counts files"; }
"$DSPACK" convert out.wds back.tf --format tfrecord > conv.back.txt
grep -q "^converted $n samples ([0-9]* fields) of a dataset" conv.back.txt || { cat conv.back.txt; fail "wds -> tfrecord: the summary"; }
rm -rf back.tf
pass "a layout-to-layout convert counts samples and fields, from native too"

"$DSPACK" convert nat out.lmdbs --format lmdb --lmdb-layout sample --quiet
[ "$($PY -c 'import json,lmdb,sys; e=lmdb.open(sys.argv[1],readonly=True,lock=False); print(json.loads(e.begin().get(b"__meta__"))["layout"])' out.lmdbs)" = sample ] \
  || fail "--lmdb-layout sample not recorded in __meta__"
check_layout out.lmdbs lmdb
rm -rf out.lmdbs
pass "lmdb --lmdb-layout sample: same checks"

# GNU tar reads every shard: it lists every member (the index last) and extracts ref's files.
(cd ref && find . -type f | sed 's|^\./||' | LC_ALL=C sort) > ref.files
mkdir gnu && : > members.txt
for s in out.wds/shard-*.tar; do
  tar -tf "$s" > m.txt || fail "tar -tf $s"
  [ "$(tail -1 m.txt)" = __dspack_index__ ] || fail "$s: last member is not __dspack_index__"
  grep -vx __dspack_index__ m.txt >> members.txt
  tar -xf "$s" -C gnu || fail "tar -xf $s"
done
LC_ALL=C sort members.txt | cmp -s - ref.files || fail "the shards' members are not ref's files"
rm gnu/__dspack_index__
diff -r ref gnu > /dev/null || fail "GNU tar's extract differs from ref"
rm -rf gnu
pass "GNU tar lists and extracts every wds shard; the index member is last"

# --wds-index sidecar: the index beside each shard (shard-N.dsidx), the tar holding only samples,
# so a reader that groups members itself (DALI without an index: a member whose name has no
# extension becomes a sample of its own) sees exactly the samples. The samples' bytes and the
# shard cut points are those of the default layout: each tar is the default's up to its index
# member, and each .dsidx is that member's data.
"$DSPACK" convert nat out.wdsx --format wds --shard-size 8M --wds-index sidecar --quiet
[ "$(ls out.wdsx/shard-*.dsidx | wc -l)" -eq "$(ls out.wds/shard-*.tar | wc -l)" ] || fail "one .dsidx per shard"
for s in out.wds/shard-*.tar; do
  x="out.wdsx/${s#out.wds/}"
  tar -tf "$x" > members.txt || fail "GNU tar cannot list $x"
  ! grep -q "__dspack_index__" members.txt || fail "$x still has the index member"
  # webdataset's and DALI's split: the extension starts at the first dot of the base name
  ! grep -qv '^\(.*/\)\?[^/.]\+\.[^/]\+$' members.txt || fail "$x: a member without an extension"
  n=$(( $(stat -c %s "$x") - 1024 ))
  cmp -s -n "$n" "$s" "$x" || fail "$x: the samples differ from the default layout's"
  d="${x%.tar}.dsidx"
  cmp -s <(tail -c $(( $(stat -c %s "$d") + 1024 )) "$s" | head -c "$(stat -c %s "$d")") "$d" || fail "$d is not the index member's data"
done
"$DSPACK" verify out.wdsx -q || fail "verify --wds-index sidecar"
cmp -s <("$DSPACK" ls out.wds) <("$DSPACK" ls out.wdsx) || fail "ls differs with --wds-index sidecar"
"$DSPACK" extract out.wdsx xb.wdsx --with-labels -q && diff -r ref xb.wdsx > /dev/null || fail "extract --wds-index sidecar"
rm -rf xb.wdsx
expect_exit 2 "$DSPACK" convert nat out.tfx --format tfrecord --wds-index sidecar
expect_err "--wds-index"
pass "wds --wds-index sidecar: tars of samples only (every member KEY.EXT), the same bytes and index beside them, verify, ls, extract"

# DALI index sidecars; the tar shards do not change with them (same input, same bytes).
"$DSPACK" convert nat out.wdsd --format wds --shard-size 8M --wds-dali-index --quiet
spec_read wds out.wdsd ref
for s in out.wds/shard-*.tar; do cmp -s "$s" "out.wdsd/${s#out.wds/}" || fail "$s changes with --wds-dali-index"; done
[ "$(ls out.wdsd/shard-*.idx | wc -l)" -eq "$(ls out.wds/shard-*.tar | wc -l)" ] || fail "one .idx per shard"
rm -rf out.wdsd
pass "--wds-dali-index: wds2idx v1.2 sidecars checked, shards byte-identical"

# Any layout to any other, labels carried: wds -> tfrecord -> recordio -> lmdb -> native.
prev=out.wds
for f in tfrecord recordio lmdb; do
  "$DSPACK" convert "$prev" "a2a.$f" --format "$f" $(shard_size "$f" 8M) --quiet
  spec_read "$f" "a2a.$f" ref
  [ "$prev" = out.wds ] || rm -rf "$prev"
  prev="a2a.$f"
done
"$DSPACK" convert "$prev" a2a.nat --quiet
"$DSPACK" extract a2a.nat a2a.x --with-labels -q
diff -r ref a2a.x > /dev/null || fail "wds -> tfrecord -> recordio -> lmdb -> native differs from ref"
rm -rf "$prev" a2a.nat a2a.x
pass "any-to-any: wds -> tfrecord -> recordio -> lmdb -> native is payload-identical"

# A tree and a tar straight to each layout; coco-like samples have two fields (jpg + json).
# The tar is name-sorted so that the files of a sample are adjacent, as WebDataset needs.
"$DSPACK" synth coco-like coco --samples 60 --seed 5 -q
(cd coco && tar --sort=name -cf ../coco.tar images)
for f in lmdb wds tfrecord recordio; do
  for s in coco coco.tar; do
    "$DSPACK" convert "$s" "c.$f" --format "$f" $(shard_size "$f" 1M) --quiet
    spec_read "$f" "c.$f" coco
    "$DSPACK" verify "c.$f" -q || fail "verify c.$f from $s"
    rm -rf "c.$f"
  done
done
pass "a directory tree and a .tar convert straight to every layout; multi-field samples intact"

# ---- bad inputs: exit 1, the file and offset (or key) named, nothing left under a final name ----
"$DSPACK" synth imagenet-like small --samples 300 --seed 4 -q
"$DSPACK" convert small small.nat --label-from-dir -q
for f in lmdb wds tfrecord recordio; do "$DSPACK" convert small.nat "s.$f" --format "$f" $(shard_size "$f" 4M) -q; done

# bad_source DIR WHAT ERE: verify and convert from DIR fail with exit 1 and a message matching ERE.
bad_source() {
  expect_exit 1 "$DSPACK" verify "$1"
  expect_msg "$3"
  expect_exit 1 "$DSPACK" convert "$1" bad.out --quiet
  expect_msg "$3"
  no_layout_names bad.out
  rm -rf bad.out
  pass "$2: verify and convert exit 1, named"
}

last_shard() { ls "$1"/shard-*."$2" | tail -1; }
for pair in tfrecord:tfrecord recordio:rec; do
  f=${pair%%:*} ext=${pair#*:}
  rm -rf bad && cp -a "s.$f" bad
  s=$(last_shard bad "$ext"); truncate -s -3 "$s"
  bad_source bad "$f: last record truncated by 3 bytes" "$(basename "$s")"
  rm bad/dspack.json bad/dspack.crc  # foreign data: no size to compare with, so the framing itself must catch it
  bad_source bad "$f: the same shard read as foreign data (no dspack.json)" "$(basename "$s").*offset [0-9]+"
done
rm -rf bad && cp -a s.wds bad
s=$(last_shard bad tar)
$PY - "$s" <<'PY'
import os, sys, tarfile
path = sys.argv[1]
with tarfile.open(path) as t:
    last = [m for m in t.getmembers() if m.name != "__dspack_index__"][-1]
os.truncate(path, last.offset_data + last.size // 2)  # inside the last sample's data: the index is gone too
PY
bad_source bad "wds: shard cut inside the last sample's data (index member gone)" "$(basename "$s")"
for cut in 3 65536; do  # liblmdb trusts its meta page: past EOF is SIGBUS, a short last page reads zeros
  rm -rf bad && cp -a s.lmdb bad
  truncate -s -"$cut" bad/data.mdb
  bad_source bad "lmdb: data.mdb truncated by $cut bytes (no crash)" "data\.mdb"
done

rm -rf bad && cp -a s.tfrecord bad
s=bad/shard-000000.tfrecord
$PY - "$s" <<'PY'
import struct, sys
path = sys.argv[1]
with open(path, "r+b") as f:
    (length,) = struct.unpack("<Q", f.read(8))
    f.seek(12 + length // 2); b = f.read(1); f.seek(12 + length // 2); f.write(bytes([b[0] ^ 0x01]))
PY
bad_source bad "tfrecord: one flipped data byte" "CRC"
expect_exit 1 "$DSPACK" verify bad
expect_msg "shard-000000\.tfrecord.*offset 0|offset 0.*shard-000000\.tfrecord"
pass "tfrecord: the CRC error names shard-000000.tfrecord and offset 0"

# RecordIO split records that never end: a start part followed by EOF, or by a new whole record.
for variant in eof next; do
  rm -rf bad && cp -a s.recordio bad
  s=$(last_shard bad rec)
  at=$($PY - "$s" "$variant" <<'PY'
import struct, sys
path, variant = sys.argv[1:]
offs = [int(l.split(b"\t")[1]) for l in open(path[:-4] + ".idx", "rb").read().splitlines()]
off = offs[-1] if variant == "eof" else offs[-2]
with open(path, "r+b") as f:
    f.seek(off); magic, lrec = struct.unpack("<II", f.read(8))
    assert magic == 0xCED7230A and lrec >> 29 == 0
    f.seek(off + 4); f.write(struct.pack("<I", 1 << 29 | lrec))  # cflag 0 -> 1: a start part
print(off)
PY
)
  bad_source bad "recordio: split record with no end part ($variant, record at offset $at)" "$(basename "$s").*offset [0-9]+"
done

# A wds dataset whose shard holds a non-adjacent sample: members a.jpg, b.jpg, a.cls. Made from a
# real one by reordering its member blocks, with dspack.json's bytes and xxh3 refreshed (through
# the reference libxxhash) so that only the order is wrong; the stale index must not hide it.
mkdir na.src && printf 1 > na.src/a.jpg && printf 2 > na.src/b.jpg && printf 0 > na.src/a.cls
"$DSPACK" convert na.src na.wds --format wds --quiet
$PY - na.wds "$READER" <<'PY'
import json, os, sys, tarfile
out, reader = sys.argv[1:]
sys.path.insert(0, os.path.dirname(reader))
from layout_readers import align_up, xxh3_64
path = os.path.join(out, "shard-000000.tar")
buf = open(path, "rb").read()
with tarfile.open(path) as t:
    blocks = {m.name: buf[m.offset:m.offset_data + align_up(m.size, 512)] for m in t.getmembers()}
assert sorted(blocks) == ["__dspack_index__", "a.cls", "a.jpg", "b.jpg"], sorted(blocks)
new = b"".join(blocks[n] for n in ("a.jpg", "b.jpg", "a.cls", "__dspack_index__")) + bytes(1024)
open(path, "wb").write(new)
man = json.load(open(os.path.join(out, "dspack.json")))
man["shards"][0].update(bytes=len(new), xxh3="%016x" % xxh3_64(new))
json.dump(man, open(os.path.join(out, "dspack.json"), "w"))
PY
for cmd in "verify na.wds" "convert na.wds na.out --quiet"; do
  expect_exit 1 "$DSPACK" $cmd
  expect_msg "key[^[:alnum:]]{1,3}a([^[:alnum:]_./-]|$)|'a'|\"a\""
  expect_msg "adjacent"
done
no_layout_names na.out
pass "wds: a non-adjacent sample (a.jpg, b.jpg, a.cls): verify and convert exit 1 naming key a"
# The same members as a plain .tar SRC are an archive, grouped wherever they sit (archives.md).
(cd na.src && tar -cf ../na.tar a.jpg b.jpg a.cls)
"$DSPACK" convert na.tar na.nat --quiet
[ "$("$DSPACK" ls na.nat | tr '\n' ' ')" = "a b " ] || fail "a plain .tar SRC groups a.jpg and a.cls"

# LMDB read while another process holds it open and commits: ls and verify see a consistent
# snapshot of the original samples. The writer adds keys outside dspack's key space ("~...",
# after the meta keys), about 2.5 MB/s, and stops by itself after 120 s at most.
cp -a out.lmdb conc.lmdb
$PY - conc.lmdb <<'PY' &
import os, sys, time
import lmdb
out = sys.argv[1]
env = lmdb.open(out, map_size=os.path.getsize(os.path.join(out, "data.mdb")) * 2 + (256 << 20))
end, i = time.time() + 120, 0
while time.time() < end:
    with env.begin(write=True) as txn:
        for _ in range(50):
            txn.put(b"~writer/%08d" % i, os.urandom(512)); i += 1
    if i == 50:
        open(out + ".ready", "w").close()
    time.sleep(0.01)
PY
writer=$!
trap 'kill "$writer" 2>/dev/null; cleanup' EXIT
for _ in $(seq 100); do [ -e conc.lmdb.ready ] && break; sleep 0.1; done
[ -e conc.lmdb.ready ] || fail "the LMDB writer did not start"
expect_exit 0 "$DSPACK" ls conc.lmdb
cmp -s nat.keys "$WORK/last.out" || fail "ls during a concurrent write differs from the original keys"
expect_exit 0 "$DSPACK" verify conc.lmdb
kill -0 "$writer" 2>/dev/null || fail "the writer had stopped: the test did not overlap a write"
kill "$writer"; wait "$writer" 2>/dev/null || true
trap cleanup EXIT
rm -rf conc.lmdb conc.lmdb.ready
pass "lmdb: ls and verify read a consistent snapshot while another process commits"
