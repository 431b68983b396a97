#!/usr/bin/env bash
# dsbench io, storage, meta, replay and compare, and dssync --fanout, as the ranks of an MPI job (docs/mpi.md), through the real mpirun with 2 and 3 ranks
# on this machine: results gathered to rank 0 add up (M5 of the issue: the aggregate's bytes and
# IOs are the ranks' sums, its bandwidth is bytes over IOR's window), a file per rank or one
# shared file with a region per rank, stonewalling with one rank behind the slow file system,
# a bad path on one rank ends the job with exit 2 and that rank's message within 10 s, and a
# plain run never starts MPI. Registered only in an MPI build.
source "$(dirname "$0")/lib.sh"
: "${DSBENCH:?set DSBENCH}" "${SLOWFS:?set SLOWFS}" "${DSSYNC:?set DSSYNC}"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
# Containers restrict ptrace, which Open MPI's CMA single-copy transport needs.
export OMPI_MCA_btl_vader_single_copy_mechanism=none
command -v mpirun >/dev/null || fail "needs mpirun (openmpi-bin, scripts/deps.sh)"
# -k: an mpirun that a TERM does not end is killed (tests/e2e/mpi_convert.sh: Open MPI 4.1's
# mpirun was seen deadlocked in its own teardown, ignoring TERM).
run() { timeout -k 10 120 mpirun --oversubscribe -n "$@"; }

# check_json FILE N SIZE: N ranks in client_stats, and the aggregate is their sum.
check_json() {
  $PY - "$@" <<'PY'
import json, sys
j = json.load(open(sys.argv[1])); n = int(sys.argv[2]); size = int(sys.argv[3])
cs, agg = j["client_stats"], j["aggregate"]
assert len(cs) == n and sorted(c["rank"] for c in cs) == list(range(n)), cs
assert agg["ranks"] == n and j["dsbench"]["mpi"]["world"] == n
for d in ("read", "write"):
    assert agg[d]["io_bytes"] == sum(c[d]["io_bytes"] for c in cs), d
    assert agg[d]["total_ios"] == sum(c[d]["total_ios"] for c in cs), d
start = min(c["window_ms"]["start"] for c in cs); end = max(c["window_ms"]["end"] for c in cs)
assert abs(agg["window_ms"] - (end - start)) < 1e-3, (agg["window_ms"], start, end)
bw = agg["read"]["io_bytes"] * 1000 / agg["window_ms"]
assert abs(agg["read"]["bw_bytes"] - bw) <= 1, (agg["read"]["bw_bytes"], bw)
if size:
    assert all(c["read"]["io_bytes"] == size for c in cs), [c["read"]["io_bytes"] for c in cs]
# merged latencies: as many as IOs, the extremes are the ranks' extremes
assert agg["read"]["clat_ns"]["N"] == sum(c["read"]["clat_ns"]["N"] for c in cs)
assert agg["read"]["clat_ns"]["max"] == max(c["read"]["clat_ns"]["max"] for c in cs)
slow = min(cs, key=lambda c: c["read"]["bw_bytes"] + c["write"]["bw_bytes"])
assert agg["slowest_rank"]["rank"] == slow["rank"], (agg["slowest_rank"], slow["rank"])
PY
}

# File per rank (the default), 2 ranks: each reads its own 8 MiB file, removed afterwards.
mkdir d
run 2 "$DSBENCH" io d --rw read --bs 256k --size 8M --output-format json > per-rank.json \
  || fail "mpirun -n 2 dsbench io"
check_json per-rank.json 2 $((8 << 20)) || fail "2 ranks: the aggregate is not the ranks' sum"
[ -z "$(ls d)" ] || { ls d; fail "test files left in d"; }
run 2 "$DSBENCH" io d --rw read --bs 256k --size 4M > per-rank.txt || fail "text report"
grep -q "^  rank   1 " per-rank.txt && grep -q "^slowest rank: " per-rank.txt \
  && grep -q "aggregate over the window" per-rank.txt || { cat per-rank.txt; fail "text report lines"; }
run 2 "$DSBENCH" io d --rw read --bs 256k --size 4M --repetitions 3 --output-format json > reps.json \
  || fail "--repetitions 3"
$PY -c 'import json,sys; r=json.load(open(sys.argv[1]))["repetitions"]; b=r["bw_bytes"]; assert len(r["runs"]) == 3 and b["min"] <= b["mean"] <= b["max"] and b["min"] > 0, r' \
  reps.json || fail "--repetitions: 3 runs with min <= mean <= max"
[ -z "$(ls d)" ] || { ls d; fail "test files left in d after --repetitions"; }
pass "2 ranks, a file each: the aggregate is the ranks' sum over IOR's window; --repetitions; files removed"

# One shared file, 3 ranks (an odd N), random reads for 1 s: regions at r * size.
run 3 "$DSBENCH" io d --shared-file --rw randread --bs 4k --size 4M --runtime 1 --time_based \
  --output-format json > shared.json || fail "mpirun -n 3 --shared-file"
check_json shared.json 3 0 || fail "3 ranks, shared file: the aggregate is not the ranks' sum"
[ -z "$(ls d)" ] || { ls d; fail "the shared test file was left in d"; }
# Writes into the shared file stay inside each rank's region: the file is 3 regions long.
run 3 "$DSBENCH" io d --shared-file --rw write --bs 64k --size 1M --keep --output-format json \
  > shared-w.json || fail "shared write"
[ "$(stat -c %s d/dsbench.0.0)" -eq $((3 << 20)) ] || fail "shared file is not 3 x 1 MiB"
check_json shared-w.json 3 0 || fail "shared write: sums"
rm -f d/*
pass "3 ranks, one shared file: regions per rank, sums hold, file removed unless --keep"

# A bad path on one rank (%r: rank 2's directory is missing): exit 2 within 10 s, the message
# names rank 2 and its path, and the other ranks' test files are gone.
mkdir -p p0 p1
start=$(date +%s)
expect_exit 2 run 3 "$DSBENCH" io "$WORK/p%r" --rw read --bs 1M --size 8M --mpi-timeout 30
[ $(( $(date +%s) - start )) -le 10 ] || fail "the failed job took more than 10 s"
expect_err "dsbench: rank 2 of 3"
expect_err "$WORK/p2: give an existing directory or file"
[ -z "$(ls -A p0)$(ls -A p1)" ] || { ls p0 p1; fail "test files left behind by the failed job"; }
expect_exit 2 run 3 "$DSBENCH" io "$WORK/p%r" --rw read --bs 1M --size 8M --output-format json
$PY -c 'import json,sys; e=json.load(open(sys.argv[1]))["error"]; assert e["rank"] == 2 and e["exit_code"] == 2, e' \
  "$WORK/last.out" || fail "the JSON error names rank 2"
pass "a path missing on rank 2 of 3: exit 2 in under 10 s naming rank 2; nothing left behind"

# Stonewalling: rank 1 reads through the slow file system (5 ms per read), rank 0 locally.
# Without stonewalling rank 1 reads all its bytes; with it, rank 1 stops when rank 0 finishes,
# and its counted IO ends within one of its reads of rank 0's end.
if [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
  mkdir -p s/0 s/1 slowsrc
  head -c $((8 << 20)) /dev/urandom > slowsrc/dsbench.dsbench.r1.0  # the slow fs is read-only
  pid=$("$SRC_DIR/tests/fixtures/fuse_mount.sh" "$SLOWFS" "$WORK/slowsrc" "$WORK/s/1" 1ms \
    --read-latency 5ms) || fail "cannot mount the slow file system"
  trap '"$SRC_DIR/tests/fixtures/fuse_mount.sh" umount "$WORK/s/1" "$pid" >/dev/null 2>&1 || true; rm -rf "$WORK"' EXIT
  run 2 "$DSBENCH" io "$WORK/s/%r" --rw read --bs 256k --size 8M --output-format json > full.json
  run 2 "$DSBENCH" io "$WORK/s/%r" --rw read --bs 256k --size 8M --mpi-stonewall \
    --output-format json > sw.json
  $PY - full.json sw.json <<'PY' || fail "stonewalling"
import json, sys
full, sw = (json.load(open(p)) for p in sys.argv[1:])
size = 8 << 20
assert [c["read"]["io_bytes"] for c in full["client_stats"]] == [size, size], "without: all bytes"
assert sw["aggregate"]["stonewall"] is True
r0, r1 = sw["client_stats"]
assert r0["read"]["io_bytes"] == size, "rank 0 (local) finishes its work"
assert r1["read"]["io_bytes"] < size, ("rank 1 stopped early", r1["read"]["io_bytes"])
# rank 1's last counted read completed within one read (its slowest) of rank 0's end
one_read_ms = r1["read"]["clat_ns"]["max"] / 1e6
late = r1["window_ms"]["end"] - r0["window_ms"]["end"]
assert late <= one_read_ms + 50, (late, one_read_ms)
print(f"rank 1 stopped {late:.1f} ms after rank 0, one read takes up to {one_read_ms:.1f} ms")
PY
  # Each repetition is its own round: the second starts clean (rank 0 reads all its bytes again).
  run 2 "$DSBENCH" io "$WORK/s/%r" --rw read --bs 256k --size 8M --mpi-stonewall --repetitions 2 \
    --output-format json > sw2.json
  $PY -c 'import json,sys; j=json.load(open(sys.argv[1])); r0=j["client_stats"][0]; assert r0["read"]["io_bytes"] == 8 << 20, r0["read"]["io_bytes"]; assert len(j["repetitions"]["runs"]) == 2' \
    sw2.json || fail "stonewalling with --repetitions 2: the second round stopped early"
  pass "stonewalling: the slowed rank stops with the first, within one read of its end; per repetition"
else
  echo "note: no /dev/fuse here; the stonewalling case did not run"
fi

# The cluster verdict: every client against the bar while all run, and the aggregate.
mkdir st
run 2 "$DSBENCH" storage st --quick --size 16M --runtime 0.5 --min-bw 1MB/s --min-iops 10 \
  --min-aggregate-bw 2MB/s --json > st-pass.json || fail "storage -n 2 with a low bar: not PASS"
expect_exit 1 run 2 "$DSBENCH" storage st --quick --size 16M --runtime 0.5 --min-bw 1000GB/s --json
$PY - st-pass.json "$WORK/last.out" <<'PY' || fail "storage verdict JSON"
import json, sys
ok, bad = (json.load(open(p)) for p in sys.argv[1:])
v = ok["verdict"]
assert v["pass"] and v["every_client_pass"] and v["aggregate_pass"], v
assert [c["rank"] for c in v["clients"]] == [0, 1] and all(c["pass"] for c in v["clients"])
seq = ok["sequential_read"]
assert seq["aggregate"]["read"]["io_bytes"] == sum(c["read"]["io_bytes"] for c in seq["client_stats"])
assert abs(v["aggregate_bw_bytes"] - seq["aggregate"]["read"]["io_bytes"] * 1000 / seq["aggregate"]["window_ms"]) < 1
b = bad["verdict"]
assert not b["pass"] and not b["every_client_pass"] and not any(c["bw_pass"] for c in b["clients"]), b
PY
[ -z "$(ls -A st)" ] || { ls st; fail "storage left its test files"; }
expect_exit 2 "$DSBENCH" storage st --quick --min-aggregate-bw 1GB/s
expect_err "--min-aggregate-bw is for a run under mpirun"
for flag in --shared-file --mpi-stonewall "--repetitions 2"; do
  # shellcheck disable=SC2086
  expect_exit 2 "$DSBENCH" io st --size 1M $flag
  expect_err "${flag%% *} is for a run under mpirun"
done
expect_exit 2 "$DSBENCH" meta st --shared-dir
expect_err "--shared-dir is for a run under mpirun"
pass "storage under mpirun -n 2: PASS per client and aggregate, FAIL exit 1, files removed"

# mdtest's model: each phase on a barrier across ranks; a directory per rank (mdtest -u) with 2
# ranks, one shared directory with 3; the aggregate's ops are the ranks' sum; nothing is left.
mkdir md
run 2 "$DSBENCH" meta md --files 300 --threads 2 --files-per-dir 100 --output-format json \
  > meta-u.json || fail "meta -n 2"
run 3 "$DSBENCH" meta md --files 200 --threads 1 --shared-dir --output-format json \
  > meta-shared.json || fail "meta -n 3 --shared-dir"
$PY - meta-u.json meta-shared.json <<'PY' || fail "meta under mpirun"
import json, sys
for path, n, per_rank, shared in ((sys.argv[1], 2, 600, False), (sys.argv[2], 3, 200, True)):
    m = json.load(open(path))["meta_ranks"]
    assert m["world"] == n and m["shared_dir"] is shared, m
    names = [p["name"] for p in m["phases"]]
    assert names == ["create", "stat", "read", "readdir", "remove"], names
    for p in m["phases"]:
        assert p["ops"] == sum(r["ops"] for r in p["ranks"]), p
        if p["name"] != "readdir":
            assert all(r["ops"] == per_rank for r in p["ranks"]), (path, p["name"], p["ranks"])
        assert p["seconds"] == max(r["seconds"] for r in p["ranks"])
        assert abs(p["ops_per_sec"] - p["ops"] / p["seconds"]) < 1e-6 * p["ops_per_sec"] + 1e-9
        assert p["lat_ns"]["N"] == sum(r["ops"] for r in p["ranks"]) or p["name"] == "readdir"
PY
[ -z "$(ls -A md)" ] || { ls -la md; fail "meta left directories behind"; }
mkdir -p mp0
expect_exit 2 run 2 "$DSBENCH" meta "$WORK/mp%r" --files 100 --threads 1
expect_err "dsbench: rank 1 of 2"
[ -z "$(ls -A mp0)" ] || { ls -la mp0; fail "meta left rank 0's directory behind after rank 1 failed"; }
pass "meta under mpirun: per-rank and shared directories, sums per phase, a bad path on rank 1 exits 2"

# A rank killed mid-run (SIGKILL): mpirun SIGTERMs the survivor, which waits for the dead rank in
# the next phase's agreement; it must remove its tree (70k entries were left, and a new one each
# rerun). Rank 1 is killed once its tree holds 200 entries; rank 0's tree must be gone after.
mkdir -p km
cat > killone.sh <<'SH'
#!/usr/bin/env bash
[ "$OMPI_COMM_WORLD_RANK" = 1 ] || exec "$@"
"$@" &
pid=$!
for _ in $(seq 1 400); do
  [ "$(find "$KM" -path '*.r1/*' 2>/dev/null | head -200 | wc -l)" -ge 200 ] && break
  sleep 0.05
done
kill -KILL "$pid"
wait "$pid"
SH
set +e
KM="$WORK/km" run 2 bash killone.sh "$DSBENCH" meta km --files 30000 --threads 2 > km.out 2> km.err
rc=$?
set -e
[ "$rc" -ne 0 ] || fail "meta with a killed rank exited 0"
for _ in $(seq 1 100); do
  ls -d km/*.r0 > /dev/null 2>&1 || break
  sleep 0.1
done
! ls -d km/*.r0 2> /dev/null || { cat km.err; fail "the surviving rank left its tree: $(ls km)"; }
rm -rf km
pass "meta with rank 1 killed: the surviving rank removes its tree (exit $rc)"

# One training job on 3 ranks (odd N): each epoch every sample read once across the ranks (the
# split itself is unit-tested in replay_ranks_test.cc), in map and stream mode.
"$DSPACK" synth imagenet-like rsrc --samples 300 --seed 9 -q
"$DSPACK" convert rsrc rds --label-from-dir --shard-size 2MiB -q
"$DSBENCH" replay rds --epochs 1 --cache warm --workers 2 --output-format json > one.json
for mode in map stream; do
  run 3 "$DSBENCH" replay rds --mode "$mode" --epochs 2 --cache warm --workers 2 \
    --output-format json > "replay-$mode.json" || fail "replay -n 3 --mode $mode"
done
expect_exit 1 run 2 "$DSBENCH" replay rds --epochs 1 --cache warm --samples-per-sec 100000000 \
  --output-format json
$PY - one.json replay-map.json replay-stream.json "$WORK/last.out" <<'PY' || fail "replay under mpirun"
import json, sys
one = json.load(open(sys.argv[1]))["replay"]["epochs"][0]
for p in sys.argv[2:4]:
    r = json.load(open(p))["replay_ranks"]
    assert r["world"] == 3 and len(r["epochs"]) == 2, r
    for e in r["epochs"]:
        agg, ranks = e["aggregate"], e["ranks"]
        assert agg["samples"] == 300 == sum(x["samples"] for x in ranks), (p, agg)
        assert agg["bytes"] == one["bytes"] == sum(x["bytes"] for x in ranks), (p, agg, one["bytes"])
        assert e["straggler"]["rank"] in (0, 1, 2) and e["straggler"]["reason"].split(" ")[0] in ("more", "slower", "neither")
starved = json.load(open(sys.argv[4]))["replay_ranks"]
assert starved["starves"] and not starved["epochs"][0]["aggregate"]["feeds"], starved
PY
pass "replay under mpirun -n 3 (map, stream): all samples once per epoch; STARVES exits 1"

# compare across 3 ranks: rank 0 builds, every rank replays its part of each run, rank 0 ranks
# the layouts by the job's aggregate and names each run's straggler; the others print nothing.
run 3 "$DSBENCH" compare rsrc --work-dir "$WORK/cmpw" --layouts dir,native,wds --epochs 1 \
  --cache warm --workers 2 --output-format json > compare3.json 2> compare3.err \
  || { cat compare3.err; fail "compare -n 3"; }
$PY - compare3.json <<'PY' || fail "compare under mpirun"
import json, sys
c = json.load(open(sys.argv[1]))["compare"]  # one document: only rank 0 reports
assert c["ranks"] == 3 and len(c["runs"]) == 3, (c["ranks"], len(c["runs"]))
for run in c["runs"]:
    epochs = run["replay"]["epochs"]
    # the measured epoch (warm: after the priming one): every sample once across the ranks
    assert all(e["samples"] == 300 for e in epochs), (run["layout"], [e["samples"] for e in epochs])
    assert run["straggler"]["rank"] in (0, 1, 2), run["straggler"]
    e = epochs[-1]
    assert abs(run["samples_per_sec"] - e["samples"] / e["seconds"]) <= 1e-6 * run["samples_per_sec"], run["layout"]
assert [r["layout"] for r in c["ranking"][0]["order"]], c["ranking"]
PY
expect_exit 2 run 2 "$DSBENCH" compare rsrc --work-dir "$WORK/cmpw" --loader torch
expect_err "--loader torch under mpirun"
pass "compare under mpirun -n 3: one report, every sample once per run, a straggler per run"

# dssync --fanout: 3 ranks stage the whole dataset, each into its own DST (%r); the source
# (behind the slow file system, whose daemon counts the bytes it serves) is read once, by rank 0.
if [ -c /dev/fuse ] && command -v fusermount3 >/dev/null; then
  mkdir fmnt
  FO_LOG="$WORK/fanout-slowfs.log"
  fpid=$(SLOWFS_LOG="$FO_LOG" "$SRC_DIR/tests/fixtures/fuse_mount.sh" "$SLOWFS" "$WORK/rds" \
    "$WORK/fmnt" 1ms --read-latency 1ms) || fail "cannot mount the slow file system"
  run 3 "$DSSYNC" --fanout "$WORK/fmnt" "$WORK/fdst%r" -q || fail "dssync --fanout -n 3"
  run 3 "$DSSYNC" --fanout "$WORK/fmnt" "$WORK/fdst%r" --json > fanout-again.json \
    || fail "dssync --fanout again"
  "$SRC_DIR/tests/fixtures/fuse_mount.sh" umount "$WORK/fmnt" "$fpid" || fail "umount"
  for r in 0 1 2; do
    "$DSSYNC" verify "fdst$r" -q || fail "fdst$r does not verify"
    for f in rds/*; do cmp -s "$f" "fdst$r/${f#rds/}" || fail "fdst$r: ${f#rds/} differs"; done
  done
  data=$(find rds -type f -printf '%s\n' | awk '{s += $1} END {print s}')
  served=$(sed -n 's/.* read=[0-9]* (\([0-9]*\) bytes).*/\1/p' "$FO_LOG")
  [ -n "$served" ] || { cat "$FO_LOG"; fail "no read count in the slow file system's log"; }
  # Once: the data plus what each rank's plan reads of the metadata, far below 3 copies.
  [ "$served" -ge "$data" ] && [ "$served" -lt $((data + data / 5)) ] \
    || fail "the source served $served bytes for a $data-byte dataset staged 3 times"
  $PY -c 'import sys, json; r = [json.loads(l) for l in open(sys.argv[1])]; assert len(r) == 3 and all(x["files"] == 0 and x["skipped_unchanged"] > 0 for x in r), r' \
    fanout-again.json || fail "a second --fanout copied files again"
  pass "dssync --fanout -n 3: every DST verifies; the source served $served bytes for $data (once)"
else
  echo "note: no /dev/fuse here; the fan-out case did not run"
fi
# --bwlimit under --fanout bounds rank 0's read of SRC (it was ignored: 121 MB/s under 10MB/s).
# A lower bound only (less the bucket's 4 MiB burst): the bytes at the limit take that long at least.
bytes=$(du -sb rds | cut -f1)
t0=$(date +%s.%N)
run 2 "$DSSYNC" --fanout rds "$WORK/bwdst%r" --bwlimit 8MB/s -q || fail "dssync --fanout --bwlimit"
t1=$(date +%s.%N)
$PY -c "import sys; b=$bytes; el=$t1-$t0; want=(b-4.3e6)/8e6
sys.exit(0 if el >= want else f'--fanout --bwlimit 8MB/s: {b} bytes in {el:.2f} s, under {want:.2f} s')"
"$DSSYNC" verify "$WORK/bwdst1" -q || fail "bwlimit fan-out DST does not verify"
pass "dssync --fanout --bwlimit: the limit holds for the fan-out read"

expect_exit 2 "$DSSYNC" --fanout rds fdst-plain
expect_err "--fanout needs an MPI job"

# A plain run (no launcher) never initialises MPI: a singleton init would leave Open MPI's
# session directory (ompi.*) in TMPDIR and spawn an orted.
mkdir tmpd plain
TMPDIR="$WORK/tmpd" "$DSBENCH" io plain --rw read --bs 256k --size 4M > plain.txt || fail "plain run"
[ -z "$(ls -A tmpd)" ] || { ls -la tmpd; fail "a plain run started MPI"; }
grep -q "^dsbench: (groupid=0" plain.txt || fail "the plain run's report"
pass "a run without mpirun does not start MPI"
