#!/usr/bin/env bash
# dsbench compare: every layout built from one tree through the packer library, the same job
# replayed against each (cold and warm, local and through the slow file system), the ranked
# table, the JSON, and the HTML report rendered in headless Chromium and checked against the
# JSON. Bad inputs. (Timings are not asserted: they belong in benchmarks.)
source "$(dirname "$0")/lib.sh"
DSBENCH=${DSBENCH:?set DSBENCH}
N=240
"$DSPACK" synth imagenet-like tree --samples $N --seed 9 -q
FILES=$(find tree -type f | wc -l)
evicts=1
[ "$(stat -f -c %T .)" = tmpfs ] && evicts=0  # tmpfs pages cannot be evicted: no cold check
slow=()
storages=1
if [ -e /dev/fuse ] && command -v fusermount3 >/dev/null; then
  slow=(--meta-latency 1ms)
  storages=2
else
  echo "note: no /dev/fuse: compare runs on local storage only"
fi

"$DSBENCH" compare tree --work-dir w --layouts dir,zip,native,lmdb,wds,tfrecord,recordio \
  --epochs 1 --workers 2 "${slow[@]}" --output-format json > out.json 2> progress.txt
$PY - $N $FILES $evicts $storages <<'PY'
import json, sys
n, files, evicts, storages = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3] == "1", int(sys.argv[4])
j = json.load(open("out.json"))
c = j["compare"]
assert json.load(open("w/compare.json"))["compare"]["runs"] == c["runs"], "w/compare.json differs from stdout"
layouts = ["dir", "zip", "native", "lmdb", "wds", "tfrecord", "recordio"]
assert [b["layout"] for b in c["builds"]] == layouts, c["builds"]
assert all(b["bytes"] > 0 for b in c["builds"]), c["builds"]
assert c["samples"] == n, c["samples"]
runs = c["runs"]
assert len(runs) == len(layouts) * 2 * storages, len(runs)
mode = {"dir": "map", "zip": "map", "lmdb": "map"}
for r in runs:
    assert r["mode"] == mode.get(r["layout"], "stream") == r["replay"]["mode"], r["layout"]
    assert r["replay"]["workers"] == r["workers"] == 2 and r["replay"]["batch"] == 32
    assert (r["replay"]["slowfs"] is not None) == (r["storage"] == "slowfs"), r["storage"]
    assert r["samples_per_sec"] > 0 and r["bytes_per_sec"] > 0, r
    eps = r["replay"]["epochs"]
    assert len(eps) == (2 if r["cache"] == "warm" else 1), (r["layout"], len(eps))
    assert all(e["samples"] == n for e in eps), (r["layout"], [e["samples"] for e in eps])
    assert all(e["opens"] == (files if r["layout"] == "dir" else 0) for e in eps), r["layout"]
    assert r["cdf"] and r["cdf"][-1][1] == 1.0, r["cdf"][-1:]
    if evicts and r["cache"] == "cold" and r["storage"] == "local":
        assert r["residency_before"] < 0.05, (r["layout"], r["residency_before"])
    if r["cache"] == "warm":
        assert r["residency_before"] > 0.9, (r["layout"], r["storage"], r["residency_before"])
    base = [b for b in runs if b["layout"] == "dir" and b["storage"] == r["storage"] and b["cache"] == r["cache"]][0]
    assert abs(r["vs_baseline"] - r["samples_per_sec"] / base["samples_per_sec"]) < 1e-9, r
assert len(c["ranking"]) == 2 * storages
for g in c["ranking"]:
    sps = [o["samples_per_sec"] for o in g["order"]]
    assert sps == sorted(sps, reverse=True) and len(sps) == len(layouts), g
assert c["recommendation"].startswith("use "), c["recommendation"]
# One measured epoch a run (cold: 1; warm: 2, the first priming): the spread is a point and the
# recommendation says it rests on fewer than 3 epochs.
assert all(r["epochs_measured"] == 1 and r["score_min"] == r["score_max"] for r in runs), runs[0]
assert "from 1 measured epoch: run 3 or more" in c["recommendation"], c["recommendation"]
assert c["host"]["probe"]["kernel"] and c["host"]["command"].split()[1] == "compare", c["host"]
if storages == 2:
    assert c["slowfs"]["meta_latency_s"] == 0.001
    d = [r for r in runs if r["layout"] == "dir" and r["storage"] == "slowfs" and r["cache"] == "cold"][0]
    # Each file is opened through the slow file system: at least that round trip (the lookups
    # may still be cached from the dataset scan, as an NFS client's attribute cache holds them).
    assert d["sample_lat_ns"]["percentile"]["50.000000"] >= 1e6, d["sample_lat_ns"]
PY
grep -q "built in" progress.txt || { cat progress.txt; fail "no build lines on stderr with --output-format json"; }
grep "dsbench-slowfs" /proc/mounts | grep -F "$WORK" >/dev/null && fail "a slowfs mount was left behind"
pass "compare: 7 layouts built, each replayed cold and warm ($storages storage kinds), every sample read, cold proved, ranked, JSON on stdout and in WORK_DIR"

$PY "$SRC_DIR/tests/e2e/check_report.py" w/report.html out.json --png report.png ||
  fail "the HTML report does not render or disagrees with the JSON"
pass "the HTML report renders in headless Chromium: SVG charts present, numbers match the JSON"

# Text output, layouts reused, a worker sweep against a required rate.
"$DSBENCH" compare tree --work-dir w --layouts dir,native --epochs 1 --workers 1,2 \
  --samples-per-sec 1 --cache cold > text.txt
grep -q "^dir       $(pwd)/tree\|^dir       tree" text.txt || { cat text.txt; fail "dir line"; }
grep -q "^native    w/native" text.txt || { cat text.txt; fail "native not reused"; }
grep -Eq "^  1 +(dir|native) .* FEEDS$" text.txt || { cat text.txt; fail "no ranked table with its verdict"; }
grep -q "worker sweep (fewest workers that meet the required rate): dir 1; native 1;" text.txt ||
  { cat text.txt; fail "sweep line"; }
grep -q "^recommendation: use " text.txt && grep -q "^report: w/report.html" text.txt ||
  { cat text.txt; fail "recommendation / report lines"; }
$PY -c '
import json
c = json.load(open("w/compare.json"))["compare"]
assert [s["min_workers"] for s in c["sweep"]] == [1, 1], c["sweep"]
assert sorted({r["workers"] for r in c["runs"]}) == [1, 2]
assert all(b["reused"] for b in c["builds"]), c["builds"]'
pass "text table, layouts reused from WORK_DIR, worker sweep picks the fewest workers that meet the rate"

cp -a w/native nat
expect_exit 1 "$DSBENCH" compare nat --work-dir w2
expect_err "compare needs a directory tree"
expect_exit 2 "$DSBENCH" compare tree --work-dir w2 --layouts dir,parquet
expect_err "unknown layout 'parquet'"
expect_exit 2 "$DSBENCH" compare tree --work-dir w2 --no-local
expect_err "--no-local needs --meta-latency"
expect_exit 2 "$DSBENCH" compare tree --work-dir tree/inside
expect_err "--work-dir tree/inside is inside SRC_DIR tree"
[ -e tree/inside ] && fail "the refused work dir was created inside the tree"
expect_exit 2 "$DSBENCH" compare no/such/tree --work-dir w2
expect_err "no/such/tree"
mkdir emptytree
expect_exit 1 "$DSBENCH" compare emptytree --work-dir w3 --layouts dir
expect_err "no samples"
pass "bad inputs: a dataset instead of a tree, a work dir inside the tree, an unknown layout, no storage, a missing or empty tree"
