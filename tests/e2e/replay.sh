#!/usr/bin/env bash
# dsbench replay: the same job against a directory tree and packed layouts; cold epochs proved
# cold by mincore, warm epochs cached; the accelerator simulation, the required rate, the JSON
# shape, bad inputs and SIGINT. (Timings are not asserted: they belong in benchmarks.)
source "$(dirname "$0")/lib.sh"
DSBENCH=${DSBENCH:?set DSBENCH}
N=300
"$DSPACK" synth imagenet-like tree --samples $N --seed 3 -q
"$DSPACK" convert tree nat --label-from-dir -q
"$DSPACK" convert nat wds --format wds -q
"$DSPACK" convert nat db --format lmdb -q
FILES=$(find tree -type f | wc -l)
evicts=1
[ "$(stat -f -c %T .)" = tmpfs ] && evicts=0  # tmpfs pages cannot be evicted: no cold check

for ds in tree nat wds db; do
  "$DSBENCH" replay $ds --epochs 2 --cache cold --workers 3 --batch 16 --output-format json > $ds.cold.json
  "$DSBENCH" replay $ds --epochs 2 --cache warm --mode stream --output-format json > $ds.warm.json
  $PY - $ds $N $FILES $evicts <<'PY'
import json, sys
ds, n, files, evicts = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4] == "1"
cold = json.load(open(ds + ".cold.json"))["replay"]
warm = json.load(open(ds + ".warm.json"))["replay"]
layout = {"tree": "tree", "nat": "native", "wds": "wds", "db": "lmdb"}[ds]
assert cold["layout"] == layout and cold["dataset_samples"] == n, cold
for e in cold["epochs"] + warm["epochs"]:
    assert e["samples"] == n and e["bytes"] > 0 and e["samples_per_sec"] > 0, e
    assert e["sample_lat_ns"]["percentile"]["99.000000"] >= e["sample_lat_ns"]["percentile"]["50.000000"] > 0
    assert sum([e["workers"]["min_samples"], e["workers"]["max_samples"]]) > 0
    assert e["opens"] == (files if ds == "tree" else 0), (ds, e["opens"])
if evicts:
    assert all(e["residency_before"] < 0.05 for e in cold["epochs"]), [e["residency_before"] for e in cold["epochs"]]
    assert warm["epochs"][1]["residency_before"] > 0.9, warm["epochs"][1]["residency_before"]
PY
done
pass "replay over a tree, native, wds and lmdb: every sample read each epoch, opens counted per file only for the tree, cold epochs start uncached (mincore), warm ones cached"

# Exit 1 is the STARVES verdict, 0 FEEDS: either is a result here.
"$DSBENCH" replay nat --epochs 1 --step-time 0.01 --gpus 2 --batch 16 > au.txt || [ $? -eq 1 ]
grep -Eq "required \(2 GPU x batch 16 every 10 ms\): 3200 samples/s" au.txt || { cat au.txt; fail "required rate"; }
grep -Eq "accelerator: AU [0-9.]+%" au.txt || { cat au.txt; fail "AU line"; }
grep -Eq "(FEEDS|STARVES) the job: loader capacity" au.txt || { cat au.txt; fail "verdict"; }
"$DSBENCH" replay nat --epochs 1 --step-time 10ms --batch 16 --output-format json > au.json || [ $? -eq 1 ]
$PY -c 'import json; e=json.load(open("au.json"))["replay"]["epochs"][0]; assert 0 < e["au"] <= 1.0001 and e["headroom"] > 0 and e["data_wait_ns"]["percentile"]["99.000000"] >= 0, e'
pass "simulated accelerator: required rate up front, AU, loader capacity and the verdict"

# The progress bar: drawn on a terminal (script(1) gives one), never into a pipe or a file.
"$DSBENCH" replay nat --epochs 1 --workers 2 > plain.out 2> plain.err
[ ! -s plain.err ] && ! grep -q $'\r' plain.out || fail "progress drawn without a terminal"
script -qec "$DSBENCH replay nat --epochs 1 --workers 2" /dev/null > tty.out
grep -aE "[0-9]+/$N samples .* samples/s" tty.out >/dev/null || { cat -v tty.out; fail "no progress bar on a terminal"; }
pass "progress bar on a terminal only"

expect_exit 2 "$DSBENCH" replay no/such/dataset
expect_err "no/such/dataset"
expect_exit 2 "$DSBENCH" replay nat --mode random
expect_err "--mode: map or stream"
expect_exit 2 "$DSBENCH" replay nat --workers 0
expect_err "--workers '0': a count or a list"
cp -a nat bad && truncate -s -100 bad/shard-000000.dsr
expect_exit 1 "$DSBENCH" replay bad --epochs 1
expect_err "shard-000000.dsr"
pass "bad inputs: missing dataset, bad mode, zero workers (exit 2); a truncated shard (exit 1, corrupt data) naming it"

"$DSBENCH" replay tree --epochs 1000 --workers 2 > int.txt &
pid=$!
sleep 1.5
kill -INT $pid
for _ in $(seq 50); do kill -0 $pid 2>/dev/null || break; sleep 0.1; done
kill -0 $pid 2>/dev/null && { kill -9 $pid; fail "replay still running after SIGINT"; }
wait $pid || fail "replay: exit $? after SIGINT"
grep -q "interrupted: partial results" int.txt && grep -q "^epoch 1 " int.txt || { cat int.txt; fail "partial results after SIGINT"; }
pass "SIGINT: stops within seconds and prints the epochs so far"

# --- zip (formats/sources/zip.h): a zip of the tree replays the tree's samples, read as Python's zipfile
# does: central directory once, then per member local header + data + inflate + CRC; no opens. ---
(cd tree && zip -qr ../t.zip .)
"$DSBENCH" replay t.zip --epochs 2 --cache cold --output-format json > zip.json
$PY - $N $evicts <<'PY'
import json, sys
n, evicts = int(sys.argv[1]), sys.argv[2] == "1"
r = json.load(open("zip.json"))["replay"]
tree_bytes = json.load(open("tree.cold.json"))["replay"]["epochs"][0]["bytes"]
assert r["layout"] == "zip" and r["dataset_samples"] == n, r
for e in r["epochs"]:
    assert e["samples"] == n and e["opens"] == 0 and e["bytes"] == tree_bytes, (e, tree_bytes)
if evicts:
    assert all(e["residency_before"] < 0.05 for e in r["epochs"]), [e["residency_before"] for e in r["epochs"]]
PY
head -c 100000 t.zip > cut.zip
set +e
"$DSBENCH" replay cut.zip --epochs 1 >/dev/null 2>cut.err
rc=$?
set -e
[ $rc -ne 0 ] && grep -q "cut.zip: no end of central directory record" cut.err || { cat cut.err; fail "truncated zip: exit $rc"; }
pass "replay over a zip: the tree's samples and bytes each epoch, 0 opens, cold epochs uncached; a truncated zip is named"
