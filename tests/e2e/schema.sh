#!/usr/bin/env bash
# Schemas (docs/formats/schema.md): a labelled tree of real JPEG and PNG images converted with
# --label-from-dir gets the imagenet schema by default in tfrecord, wds and recordio, and each is
# read as its loaders read it, by code dspack did not write (schema_check.py: protoc's generated
# tf.train.Example, webdataset's grouping rule, MXNet's IRHeader unpack), images decoded by PIL.
# Also: --label-base, --field-map with an int64 type, --schema raw keeping today's names,
# extract restoring the source's file names, and the bad inputs (exit codes as docs/cli.md).
source "$(dirname "$0")/lib.sh"
$PY -c 'import google.protobuf, PIL' 2>/dev/null || fail "needs python3-protobuf and python3-pil (scripts/deps.sh)"
command -v protoc >/dev/null || fail "needs protoc (protobuf-compiler, scripts/deps.sh)"
CHECK="$SRC_DIR/tests/e2e/schema_check.py"
mkdir pb && protoc --python_out=pb -I "$SRC_DIR/tests/fixtures/proto" example.proto caffe_datum.proto

# 3 classes x 5 images, real JPEG (.JPEG, as ImageNet names them) and PNG.
$PY - <<'PY'
import os
from PIL import Image
for c, cls in enumerate(["n01440764", "n01443537", "n01484850"]):
    os.makedirs(f"src/{cls}")
    for i in range(5):
        img = Image.new("RGB", (16 + i, 12 + c), (40 * i, 80 * c, 120))
        ext, fmt = [("JPEG", "JPEG"), ("png", "PNG")][(i + c) % 2]
        img.save(f"src/{cls}/{cls}_{1000 + i}.{ext}", fmt)
        os.makedirs(f"jsrc/{cls}", exist_ok=True)  # all JPEG, as ImageNet is
        img.save(f"jsrc/{cls}/{cls}_{1000 + i}.JPEG", "JPEG")
PY

for f in tfrecord wds recordio; do
  "$DSPACK" convert src "out.$f" --format "$f" --label-from-dir --shard-size 8k -q
  grep -q '"name": *"imagenet"' "out.$f/dspack.json" || fail "$f: dspack.json records no imagenet schema"
  args=()
  [ "$f" = tfrecord ] && args=(pb)
  $PY "$CHECK" "$f" "out.$f" src 0 "${args[@]}" > check.log || { cat check.log; fail "$f: its loader's reading"; }
  # extract restores the source's names (JPEG, png) and class folders, byte for byte
  "$DSPACK" extract "out.$f" "x.$f" -q
  diff -r src "x.$f" > /dev/null || { diff -r src "x.$f" | head; fail "$f: extract differs from the source"; }
  "$DSPACK" verify "out.$f" -q || fail "$f: verify"
  # ... and converts onwards under the source's names (derived fields left out)
  "$DSPACK" convert "out.$f" "n.$f" -q
  "$DSPACK" extract "n.$f" "xn.$f" -q
  diff -r src "xn.$f" > /dev/null || { diff -r src "xn.$f" | head; fail "$f -> native: names"; }
done
pass "imagenet by default with --label-from-dir: tfrecord, wds, recordio read by their loaders' rules; extract and convert restore the source's names"

# LMDB: the PyTorch ImageNet-LMDB recipe's pickles by default, Caffe's Datum by name. Their
# values hold no file name: extract names the images after the one extension the source used.
"$DSPACK" convert src out.lmdb --format lmdb --label-from-dir -q
grep -q '"lmdb_layout": *"pickle"' out.lmdb/dspack.json || fail "lmdb: not the pickle layout"
$PY "$CHECK" lmdb out.lmdb src 0 > check.log || { cat check.log; fail "lmdb: the recipe's reading"; }
"$DSPACK" convert src out.caffe --format lmdb --label-from-dir --lmdb-layout caffe --label-base 1 -q
$PY "$CHECK" caffe out.caffe src 1 pb > check.log || { cat check.log; fail "lmdb caffe: Datum"; }
for l in lmdb caffe; do
  "$DSPACK" verify "out.$l" -q || fail "$l: verify"
  args=(--format lmdb --label-from-dir)
  [ $l = caffe ] && args+=(--lmdb-layout caffe)
  "$DSPACK" convert jsrc "j.$l" "${args[@]}" -q
  "$DSPACK" extract "j.$l" "x.$l" -q
  diff -r jsrc "x.$l" > /dev/null || { diff -r jsrc "x.$l" | head; fail "$l: extract differs"; }
done
pass "lmdb: the ImageNet-LMDB recipe reads its pickles through torch's DataLoader; Caffe's Datum parses; extract restores"

# wds with two source spellings of one type (a.JPEG, b.jpg -> jpg): the dataset cannot say which
# was which, so extract keeps the stored jpg (docs/formats/schema.md); TFRecord's image/filename can.
mkdir -p mixed/c && cp src/n01440764/n01440764_1000.JPEG mixed/c/a.JPEG && cp mixed/c/a.JPEG mixed/c/b.jpg
"$DSPACK" convert mixed mixed.wds --format wds --label-from-dir -q
"$DSPACK" extract mixed.wds x.mixed.wds -q
[ -f x.mixed.wds/c/a.jpg ] && [ -f x.mixed.wds/c/b.jpg ] || { find x.mixed.wds; fail "wds mixed spellings"; }
"$DSPACK" convert mixed mixed.tf --format tfrecord --label-from-dir -q
"$DSPACK" extract mixed.tf x.mixed.tf -q
diff -r mixed x.mixed.tf > /dev/null || fail "tfrecord mixed spellings: extract differs"
pass "two spellings of one extension: wds extracts the normalised name, tfrecord the source's"

"$DSPACK" convert src out.tf1 --format tfrecord --label-from-dir --label-base 1 -q
$PY "$CHECK" tfrecord out.tf1 src 1 pb > check.log || { cat check.log; fail "--label-base 1"; }
"$DSPACK" convert src out.wds1 --format wds --label-from-dir --label-base 1 -q
$PY "$CHECK" wds out.wds1 src 1 > check.log || { cat check.log; fail "wds --label-base 1"; }
pass "--label-base 1: TF's classic 1-based labels"

# --schema raw: today's names (the extension as is, cls as ASCII bytes)
"$DSPACK" convert src out.raw --format tfrecord --label-from-dir --schema raw -q
"$DSPACK" cat out.raw n01440764/n01440764_1000 --field JPEG > raw.jpg
cmp raw.jpg src/n01440764/n01440764_1000.JPEG || fail "--schema raw: field JPEG"
"$DSPACK" cat out.raw n01440764/n01440764_1000 --field cls | grep -qx 0 || fail "--schema raw: cls"
pass "--schema raw keeps the source's names"

# --field-map: explicit names, an int64 label
"$DSPACK" convert src out.fm --format tfrecord --label-from-dir \
  --field-map 'JPEG=image/encoded,png=image/encoded,cls=image/class/label:int64' -q
$PY - <<'PY' || fail "--field-map: protoc's parse"
import os, struct, sys
sys.path.insert(0, "pb")
import example_pb2
shard = sorted(x for x in os.listdir("out.fm") if x.endswith(".tfrecord"))[0]
buf = open(f"out.fm/{shard}", "rb").read()
(n,) = struct.unpack_from("<Q", buf, 0)
ex = example_pb2.Example.FromString(buf[12:12 + n])
f = ex.features.feature
assert f["image/class/label"].int64_list.value == [0], f["image/class/label"]
assert len(f["image/encoded"].bytes_list.value[0]) > 0
assert "image/format" not in f  # a map derives nothing
PY
"$DSPACK" extract out.fm x.fm -q
[ "$(cd x.fm && find . -type f | wc -l)" = 15 ] || fail "--field-map: extract"
pass "--field-map FROM=TO[:int64]: names and an int64_list as given"

# Bad inputs. Usage (exit 2): a schema for native, a bad map, --label-base without labels.
expect_exit 2 "$DSPACK" convert src bad1 --format native --label-from-dir --schema imagenet
expect_err "--schema imagenet does not apply to native"
expect_exit 2 "$DSPACK" convert src bad2 --format tfrecord --field-map 'JPEG'
expect_err "--field-map 'JPEG': no '='"
expect_exit 2 "$DSPACK" convert src bad3 --format tfrecord --field-map 'cls=x:float'
expect_err "type 'float' is not bytes or int64"
expect_exit 2 "$DSPACK" convert src bad4 --format tfrecord --label-base 1
expect_err "--label-base numbers the classes of --label-from-dir"
expect_exit 2 "$DSPACK" convert src bad5 --format tfrecord --schema imagenet --field-map 'a=b'
expect_err "--field-map is its own schema"
expect_exit 2 "$DSPACK" convert src bad6b --format tfrecord --field-map 'cls=a,cls=b'
expect_err "--field-map: 'cls' is mapped twice"
expect_exit 2 "$DSPACK" convert src bad6 --format native --label-from-dir --field-map 'JPEG=x'
expect_err "--schema map does not apply to native"
expect_exit 2 "$DSPACK" convert src bad9 --format lmdb --lmdb-layout pickle
expect_err "--lmdb-layout pickle stores (image, label) pairs: it needs --label-from-dir"
expect_exit 2 "$DSPACK" convert src bad10 --format lmdb --lmdb-layout field --schema imagenet
expect_err "--lmdb-layout field stores raw fields; the imagenet schema is --lmdb-layout pickle"
for d in bad1 bad2 bad3 bad4 bad5 bad6 bad6b bad9 bad10; do no_final_names "$d"; done
# Bad data (exit 1): a sample that is not one image; a non-integer mapped to int64.
mkdir -p two/c && cp src/n01440764/n01440764_1000.JPEG two/c/a.JPEG && echo caption > two/c/a.txt
expect_exit 1 "$DSPACK" convert two bad7 --format recordio --label-from-dir --schema imagenet
expect_err "key 'c/a': the imagenet schema stores one image per sample in recordio"
expect_exit 1 "$DSPACK" convert two bad8 --format tfrecord --field-map 'txt=caption:int64'
expect_err "key 'c/a': field 'txt' ('caption' in the schema) holds 'caption\x0a', not an integer"
for d in bad7 bad8; do no_final_names "$d"; done
# The default stays raw for such a tree (a caption beside each image): nothing refused.
"$DSPACK" convert two ok.two --format recordio --label-from-dir -q
pass "bad schemas refused with exit 2, unfit samples with exit 1, nothing left under a final name"
