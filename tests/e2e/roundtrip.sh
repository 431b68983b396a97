#!/usr/bin/env bash
# convert -> verify -> extract -> compare, byte for byte, on synthetic data and awkward names;
# plus an independent reader written from docs/formats/native.md alone.
source "$(dirname "$0")/lib.sh"
N=${DSPACK_E2E_SAMPLES:-20000}

"$DSPACK" synth imagenet-like img --samples "$N" --seed 7 -q
"$DSPACK" convert img img.ds --label-from-dir --align 4k -q
"$DSPACK" verify img.ds -q
"$DSPACK" extract img.ds img.out -q
diff -r img img.out || fail "imagenet-like round trip differs"
[ "$(find img.out -type f | wc -l)" -eq "$N" ] || fail "extract wrote a wrong number of files"
"$DSPACK" info img.ds --json | grep "\"samples\": $N" >/dev/null || fail "info --json samples"
rm -rf img.out img.ds
pass "imagenet-like $N files round-trip byte-exact"

"$DSPACK" synth coco-like coco --samples 50 --seed 1 -q
"$DSPACK" convert coco coco.ds -q --shard-size 1MiB
[ "$("$DSPACK" info coco.ds --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["samples"])')" = 50 ] \
  || fail "coco pairs should group into 50 samples"
"$DSPACK" extract coco.ds coco.out -q
diff -r coco coco.out || fail "coco round trip differs"
$PY "$SRC_DIR/tests/e2e/native_reader.py" coco.ds coco >/dev/null || fail "independent reader rejects coco.ds"
pass "coco-like image+json pairs round-trip; independent reader agrees"

# Awkward names: spaces, non-UTF-8 bytes, newlines, dots, deep nesting, 0-byte files.
mkdir -p awk/deep/a/b/c/d/e/f/g/h/i/j "awk/sp ace" awk/dots.dir
printf 'x' > "awk/sp ace/file name.jpg"
printf 'latin1' > "awk/caf$(printf '\xe9').bin"
printf 'nl' > "awk/new
line.txt"
: > awk/empty.bin
: > awk/zero
printf 'h' > awk/.hidden
printf 'h2' > awk/.hidden.txt
printf 'd' > awk/trailing.
printf 'dd' > awk/a..b
printf 'm' > awk/multi.seg.png
printf 'm2' > awk/multi.jpg
printf 'r' > awk/README
printf 'r2' > awk/README.txt
printf 'deep' > awk/deep/a/b/c/d/e/f/g/h/i/j/leaf.dat
printf 'dots' > awk/dots.dir/x.y.z
"$DSPACK" convert awk awk.ds -q --align 4k --shard-size 8k
"$DSPACK" verify awk.ds -q
"$DSPACK" extract awk.ds awk.out -q
diff -r awk awk.out || fail "awkward names round trip differs"
[ "$(find awk.out -type f | wc -l)" -eq "$(find awk -type f | wc -l)" ] || fail "file count"
$PY "$SRC_DIR/tests/e2e/native_reader.py" awk.ds awk >/dev/null || fail "independent reader rejects awk.ds"
"$DSPACK" ls awk.ds | grep -F 'new\x0aline' >/dev/null || fail "ls must escape newlines in keys"
[ "$("$DSPACK" cat awk.ds multi --field seg.png)" = m ] || fail "cat --field"
expect_exit 2 "$DSPACK" cat awk.ds multi
expect_err "choose one with --field"
expect_exit 2 "$DSPACK" cat awk.ds no/such/key
expect_err "no sample with key"
pass "awkward names round-trip; ls escapes; cat selects fields"

"$DSPACK" synth tiny-files tiny --samples 300 --seed 3 -q
"$DSPACK" convert tiny tiny.ds -q --shard-size 256k --align 4k --shuffle-seed 9
$PY "$SRC_DIR/tests/e2e/native_reader.py" tiny.ds tiny >/dev/null || fail "independent reader rejects tiny.ds"
"$DSPACK" ls tiny.ds > keys
head -3 keys > first3
sort keys | sed -n 1,3p > sorted3
[ "$(wc -l < keys)" -eq 300 ] || fail "ls lists every sample"
cmp -s first3 sorted3 && fail "--shuffle-seed did not change the order"
pass "shuffled tiny-files read by the independent reader"

# A native dataset as SRC: reshard, realign, reshuffle; labels and classes carry over.
"$DSPACK" synth imagenet-like rs --samples 400 --seed 8 -q
head -c 3000000 /dev/urandom > rs/n01440764/big.bin   # a record over 1 MiB: streamed from the shard
"$DSPACK" convert rs rs.a --label-from-dir --shard-size 4MiB -q
"$DSPACK" convert rs.a rs.b --shard-size 16MiB --align 4k --shuffle-seed 2 -q
"$DSPACK" verify rs.b -q
cmp -s rs.a/classes.txt rs.b/classes.txt || fail "classes.txt not carried over"
"$DSPACK" extract rs.b rs.out -q
diff -r rs rs.out >/dev/null || fail "reshuffled reshard does not restore the source"
"$DSPACK" convert rs.a rs.c --shard-size 4MiB -q
for f in rs.a/shard-* rs.a/index.dsi; do cmp -s "$f" "rs.c/${f#rs.a/}" || fail "reshard with the same options changed $f"; done
expect_exit 2 "$DSPACK" convert rs.a rs.d --label-from-dir
expect_err "already carries labels"
pass "native dataset as SRC: resharded, realigned, reshuffled; same options give the same shards"
