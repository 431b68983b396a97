#!/usr/bin/env bash
# A staged subset is a readable dataset (docs/formats/subset.md): dssync --rank/--world and
# --max-bytes leave a subset view, and dspack info/verify/ls/cat/extract/convert, dsbench replay
# and the Python reader see exactly the staged shards' samples, in every sharded layout. The
# bad inputs: a staged shard flipped, truncated or deleted, a malformed view, a view naming a
# shard the dataset does not list; a full restage removes the view.
source "$(dirname "$0")/lib.sh"
: "${DSSYNC:?set DSSYNC to the dssync binary}"
: "${DSBENCH:?set DSBENCH to the dsbench binary}"
N=${DSPACK_E2E_SAMPLES:-2000}
[ "$N" -gt 1000 ] && N=1000
"$DSPACK" synth imagenet-like tree --samples "$N" --seed 5 -q
jq() { $PY -c "import json,sys; d=json.load(sys.stdin)
for k in sys.argv[1].split('.'): d=d[k]
print(d)" "$1"; }
PYMOD=$(dirname "$(dirname "$DSPACK")")/python

for f in native wds tfrecord recordio; do
  "$DSPACK" convert tree "$f" --format "$f" --shard-size 4MiB --label-from-dir -q
  total=$("$DSPACK" info "$f" --json | jq samples)
  shards=$("$DSPACK" info "$f" --json | jq shards)
  [ "$shards" -ge 4 ] || fail "$f: want at least 4 shards, got $shards"
  sum=0
  for r in 0 1; do
    expect_exit 0 "$DSSYNC" "$f" "$f-r$r" --rank $r --world 2 -q
    [ -f "$f-r$r/dspack-subset.json" ] || fail "$f rank $r: no subset view"
    expect_exit 0 "$DSPACK" verify "$f-r$r"
    grep -q ": OK" last.out || fail "$f rank $r: verify said $(cat last.out)"
    "$DSPACK" info "$f-r$r" --json >info.json
    n=$(jq samples <info.json)
    [ "$(jq subset.of_samples <info.json)" = "$total" ] || fail "$f: of_samples"
    [ "$(jq subset.of_shards <info.json)" = "$shards" ] || fail "$f: of_shards"
    "$DSPACK" info "$f-r$r" | grep -q "^subset: .* of $shards shards, $n of $total samples (dssync: rank $r of 2" ||
      fail "$f rank $r: info: $("$DSPACK" info "$f-r$r")"
    sum=$((sum + n))
    "$DSPACK" ls "$f-r$r" >"ls-$r"
    [ "$(wc -l <"ls-$r")" = "$n" ] || fail "$f rank $r: ls lists $(wc -l <"ls-$r") of $n"
    # replay reads exactly the view's samples
    expect_exit 0 "$DSBENCH" replay "$f-r$r" --epochs 1 --cache warm --output-format json
    [ "$($PY -c "import json,sys; print(json.load(open(sys.argv[1]))['replay']['dataset_samples'])" last.out)" = "$n" ] ||
      fail "$f rank $r: replay saw other than $n samples"
  done
  [ "$sum" = "$total" ] || fail "$f: ranks hold $sum samples, the dataset $total"
  "$DSPACK" ls "$f" | sort >ls-all
  sort ls-0 ls-1 | uniq -d | grep . && fail "$f: a sample on both ranks"
  sort ls-0 ls-1 | cmp -s - ls-all || fail "$f: ranks' samples are not the dataset's"
  # cat and extract through the view give the source's bytes
  key=$(tail -1 ls-1)
  field=$("$DSPACK" ls -l "$f-r1" | tail -1 | cut -f5 | cut -d= -f1)
  cmp <("$DSPACK" cat "$f-r1" "$key" --field "$field") <("$DSPACK" cat "$f" "$key" --field "$field") ||
    fail "$f: cat $key differs"
  expect_exit 0 "$DSPACK" extract "$f-r1" "x-$f"
  [ "$(find "x-$f" -type f | wc -l)" = "$(wc -l <ls-1)" ] || fail "$f: extract wrote other than the view's samples"
  # a subset converts onwards as a dataset of its own
  expect_exit 0 "$DSPACK" convert "$f-r1" "c-$f" --format native
  [ "$("$DSPACK" info "c-$f" --json | jq samples)" = "$(wc -l <ls-1)" ] || fail "$f: convert of the view"
  if [ -f "$PYMOD/dspack/__init__.py" ]; then
    PYTHONPATH=$PYMOD $PY - "$f" "$f-r0" "$f-r1" <<'EOF' || fail "$f: the Python reader"
import sys, dspack
full = dspack.open(sys.argv[1])
seen = 0
for p in sys.argv[2:]:
    ds = dspack.open(p)
    batch = ds.read_batch(list(range(len(ds))))
    assert len(batch) == len(ds) == len(ds.sizes), p
    for i, s in enumerate(batch):
        assert s == ds[i] == full[full.index_of(s["__key__"])], (p, i)
        assert ds.index_of(s["__key__"]) == i, (p, i)
    seen += len(ds)
assert seen == len(full), (seen, len(full))
EOF
  fi
done
pass "rank subsets of native, wds, tfrecord, recordio: info, verify, ls, cat, extract, convert, replay and Python see exactly the staged samples; the two ranks are the dataset"

# --- the bad inputs, on a wds subset
victim=$(cd wds-r1 && ls shard-*.tar | head -1)
cp -a wds-r1 bad
printf 'X' | dd of="bad/$victim" bs=1 seek=700 conv=notrunc status=none
expect_exit 1 "$DSPACK" verify bad
grep -q "bad/$victim: XXH3 .* differs from dspack.json" last.out last.err || { cat last.out last.err; fail "flip not named"; }
rm -rf bad && cp -a wds-r1 bad && truncate -s -512 "bad/$victim"
expect_exit 1 "$DSPACK" verify bad
grep -q "bad/$victim" last.out last.err || fail "truncation not named"
rm -rf bad && cp -a wds-r1 bad && rm "bad/$victim"
expect_exit 1 "$DSPACK" info bad
expect_err "bad/$victim: missing, though the subset view (dspack-subset.json) lists it"
expect_exit 1 "$DSPACK" verify bad
grep -q "bad/$victim: missing" last.out last.err || fail "missing shard not named by verify"
rm -rf bad && cp -a wds-r1 bad && echo '{"dspack_subset": 1, "shards": [' >bad/dspack-subset.json
expect_exit 1 "$DSPACK" info bad
expect_err "bad/dspack-subset.json: not a JSON object"
expect_exit 1 "$DSPACK" verify bad
$PY - bad/dspack-subset.json <<'EOF'
import json, sys
json.dump({"dspack_subset": 1, "shards": ["shard-999999.tar"], "of_shards": 1, "of_samples": 1}, open(sys.argv[1], "w"))
EOF
expect_exit 1 "$DSPACK" ls bad
expect_err "names shard 'shard-999999.tar', which dspack.json does not list"
rm -rf bad && cp -a wds-r1 bad && rm -f bad/.dssync-*
expect_exit 0 "$DSPACK" convert tree bad --format wds --force -q
[ -f bad/dspack-subset.json ] && fail "convert --force left the subset view of the dataset it replaced"
pass "a flipped, truncated or missing staged shard and a malformed view: exit 1 naming the file; --force replaces a view"

# --- --max-bytes, a subset of a subset, a full restage removes the view, LMDB's all-or-nothing
one=$(stat -c %s "native/$(cd native && ls shard-*.dsr | head -1)")
expect_exit 0 "$DSSYNC" native nb --max-bytes $((one * 2)) -q
"$DSPACK" info nb | grep -q "^subset: *[12] of .*(dssync: the first" || fail "max-bytes view: $("$DSPACK" info nb)"
expect_exit 0 "$DSPACK" verify nb
expect_exit 0 "$DSSYNC" nb nb2 -q   # staging a view stages the view
cmp nb/dspack-subset.json nb2/dspack-subset.json || fail "a subset's copy lost its view"
expect_exit 0 "$DSPACK" verify nb2
expect_exit 0 "$DSSYNC" native nb -q
[ -f nb/dspack-subset.json ] && fail "a full restage left the subset view"
[ "$("$DSPACK" info nb --json | jq samples)" = "$("$DSPACK" info native --json | jq samples)" ] || fail "full restage"
"$DSPACK" convert tree lm --format lmdb --label-from-dir -q
expect_exit 0 "$DSSYNC" lm lm1 --rank 1 --world 2 -q
[ "$("$DSPACK" info lm1 --json | jq samples)" = 0 ] || fail "lmdb rank 1 of 2 holds no shard: want 0 samples"
expect_exit 0 "$DSPACK" verify lm1
expect_exit 0 "$DSSYNC" lm lm0 --rank 0 --world 2 -q
[ -f lm0/dspack-subset.json ] && fail "lmdb rank 0 holds the whole dataset: no view wanted"
"$DSPACK" verify lm0 -q
pass "--max-bytes view, a subset restaged onwards, a full restage removes the view, LMDB all or nothing"
