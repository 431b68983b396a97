#!/usr/bin/env bash
# s3:// end to end, against a real S3 server (Ceph's RADOS Gateway on a one-OSD cluster,
# tests/e2e/s3_fixture.sh) through libcurl: a dataset uploaded by s3cmd (another client) read by
# info/verify/ls/cat, convert from and to a bucket (native and the interop layouts, each read
# back by s3cmd's download too; LMDB refused), virtual-host addressing, dssync from it and its
# resume, dsbench replay and dsbench s3 (every op, a verdict, 2 ranks under mpirun, cleanup),
# compare's stage or stream, the Python package and a DataLoader; and the bad inputs: wrong keys,
# a missing bucket, a wrong endpoint, no credentials (each one line, exit 2, the secret never
# echoed), no metadata object (no dataset), the gateway killed under a reader (retries, then one
# line naming the object and the range), an object replaced under a reader (named), an answer cut
# mid-body (retried).
# docs/s3.md.
source "$(dirname "$0")/lib.sh"
: "${DSSYNC:?set DSSYNC}" "${DSBENCH:?set DSBENCH}"
source "$SRC_DIR/tests/e2e/s3_fixture.sh"
trap 's3_stop; cleanup' EXIT
s3_start
echo "# the S3 fixture started in ${S3_START_SECONDS} s"
N=${DSPACK_E2E_S3_SAMPLES:-600}
U=$S3_URL
PYMOD=$(dirname "$(dirname "$DSPACK")")/python
have_py=0  # the sanitizer passes build no Python package
[ -f "$PYMOD/dspack/__init__.py" ] && have_py=1

"$DSPACK" synth imagenet-like tree --samples "$N" --seed 5 -q
"$DSPACK" convert tree local-ds --shard-size 1MiB --label-from-dir -q

# --- a tree put by s3's own client: converted from the bucket, the shards of a local convert
s3cmd sync -q tree/ "$U/tree/"
s3cmd sync -q local-ds/ "$U/up-ds/"
expect_exit 0 "$DSPACK" convert "$U/tree" from-s3 --shard-size 1MiB --label-from-dir -q
for f in local-ds/shard-*; do cmp "$f" "from-s3/${f#local-ds/}" || fail "$f differs when read from S3"; done
cmp local-ds/index.dsi from-s3/index.dsi || fail "index differs when read from S3"
pass "convert s3://…/tree gives the shards of a local convert, byte for byte"

# --- convert to a bucket, then read it back through every reading command
expect_exit 0 "$DSPACK" convert tree "$U/ds" --shard-size 1MiB --label-from-dir -q
expect_exit 0 "$DSPACK" verify "$U/ds"
grep -qF "$N records" "$WORK/last.out" || fail "verify s3:// did not check $N records"
expect_exit 0 "$DSPACK" verify "$U/ds?readahead=0"  # a GET per record: the same verdict
grep -qF "$N records" "$WORK/last.out" || fail "verify s3://...?readahead=0 did not check $N records"
"$DSPACK" info "$U/ds" >info.txt
grep -qE "samples: +$N" info.txt || fail "info s3:// lacks $N samples"
"$DSPACK" ls "$U/ds" >ls-s3.txt
"$DSPACK" ls local-ds >ls-local.txt
cmp ls-s3.txt ls-local.txt || fail "ls s3:// differs from ls of the local dataset"
key=$(sed -n 7p ls-local.txt)
"$DSPACK" cat "$U/ds" "$key" --field JPEG >cat-s3.bin
"$DSPACK" cat local-ds "$key" --field JPEG >cat-local.bin
cmp cat-s3.bin cat-local.bin || fail "cat s3:// $key differs"
s3cmd ls "$U/ds/" | grep -E "\.tmp|journal" && fail "temp objects left under $U/ds"
expect_exit 0 "$DSPACK" verify "$U/up-ds"
pass "convert to s3://; verify/info/ls/cat read it as the local dataset"

# --- virtual-host addressing (BUCKET.HOST/KEY, as AWS itself is addressed): the fixture's
# `rgw dns name` is localhost, and curl resolves BUCKET.localhost to the loopback itself. The
# gateway's access log shows the bucket left the path; path-style reads what it wrote.
VH=http://localhost:$S3_RGW_PORT
expect_exit 0 env AWS_ENDPOINT_URL="$VH" "$DSPACK" convert tree "$U/vh?addressing=virtual" \
  --shard-size 1MiB --label-from-dir -q
expect_exit 0 env AWS_ENDPOINT_URL="$VH" "$DSPACK" verify "$U/vh?addressing=virtual"
grep -qF "$N records" "$WORK/last.out" || fail "verify, virtual-host: not $N records"
grep -q '"GET /vh/manifest.json' "$S3_DIR"/log/*rgw*.log ||
  fail "the gateway logged no virtual-host GET /vh/manifest.json"
expect_exit 0 "$DSPACK" verify "$U/vh"
expect_exit 2 "$DSPACK" info "$U/vh?addressing=virtual"  # the fixture's endpoint is 127.0.0.1
expect_err "is an IP address"
pass "virtual-host addressing: convert and verify as BUCKET.localhost; path-style reads it; an IP endpoint refused"

for f in wds tfrecord recordio; do
  expect_exit 0 "$DSPACK" convert tree "$U/out-$f" --format "$f" --shard-size 1MiB --label-from-dir -q
  expect_exit 0 "$DSPACK" verify "$U/out-$f"
  s3cmd sync -q "$U/out-$f/" "got-$f/"  # what another client downloads is the same dataset
  expect_exit 0 "$DSPACK" verify "got-$f"
done
expect_exit 2 "$DSPACK" convert tree "$U/out-lmdb" --format lmdb --label-from-dir -q
expect_err "LMDB needs a local file"
pass "wds, tfrecord and recordio written to s3:// verify there and after s3cmd's download; lmdb refused"

# --- dssync from a bucket, then again: nothing recopied. The listing's size and ETag open each
# object (Storage::OpenListed): the gateway's log shows GETs of the shards and no HEAD of one.
# shard_requests METHOD: the requests of that method for ds/'s shards the gateway has logged.
shard_requests() { cat "$S3_DIR"/log/*rgw*.log | grep -c "\"$1 /[^ ]*/ds/shard-" || true; }
heads=$(shard_requests HEAD) gets=$(shard_requests GET)
expect_exit 0 "$DSSYNC" "$U/ds" staged
"$DSPACK" verify staged -q
for f in local-ds/shard-*; do cmp "$f" "staged/${f#local-ds/}" || fail "dssync: $f differs"; done
[ "$(shard_requests GET)" -ge $((gets + $(ls local-ds/shard-* | wc -l))) ] ||
  fail "the gateway logged fewer GETs than shards: its log is not the request bill"
[ "$(shard_requests HEAD)" = "$heads" ] || fail "dssync sent a HEAD per shard, not the listing's ETag"
expect_exit 0 "$DSSYNC" "$U/ds" staged
grep -qE "^staged 0 files .* 0 recopied" "$WORK/last.out" || { cat "$WORK/last.out"; fail "rerun recopied"; }
pass "dssync s3:// stages the dataset byte for byte, a GET per shard and no HEAD; a rerun copies nothing"

# --- dsbench replay against the bucket
expect_exit 0 "$DSBENCH" replay "$U/ds" --epochs 1 --output-format json
"$PY" - "$WORK/last.out" "$N" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
assert str(sys.argv[2]) in json.dumps(r), "replay JSON lacks the epoch's samples"
EOF
pass "dsbench replay reads s3://"

# --- a batch at a time: streamed, a batch's neighbouring records are one ranged GET; every sample
# is read once, byte for byte the bytes of a sample-at-a-time epoch
expect_exit 0 "$DSBENCH" replay "$U/ds" --epochs 1 --mode stream --batch 32 --batch-reads 8 \
  --output-format json
cp "$WORK/last.out" batch.json
expect_exit 0 "$DSBENCH" replay "$U/ds" --epochs 1 --mode stream --batch 32 --output-format json
"$PY" - batch.json "$WORK/last.out" "$N" <<'EOF'
import json, sys
b, one = (json.load(open(p))["replay"] for p in sys.argv[1:3])
n = int(sys.argv[3])
eb, eo = b["epochs"][0], one["epochs"][0]
assert b["batch_reads"] == 8 and eb["samples"] == n and eb["bytes"] == eo["bytes"], (eb, eo)
reads = eb["storage_ops"]["read"]
assert 0 < reads <= n / 4, f"{reads} GETs for {n} samples: a batch's records were not joined"
EOF
pass "replay --batch-reads over s3://: every sample once, a batch's records in a few GETs"

# --- dsbench compare of a dataset in the bucket: stream it, or stage it first?
expect_exit 0 "$DSBENCH" compare "$U/ds" --stage-dir stg --epochs 1 --train-epochs 20 --output-format json
"$PY" - "$WORK/last.out" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))["stage_or_stream"]
d = r["decision"]
assert r["stream"]["epoch_seconds"] > 0 and r["local"]["epoch_seconds"] > 0 and r["stage_seconds"] > 0, r
be = d["break_even_epochs"]
assert (be is None and not d["stage"]) or (be > 0 and d["stage"] == (20 > be)), d
assert d["recommendation"].startswith("stage for 20 epochs" if d["stage"] else "stream"), d
EOF
[ ! -e stg ] || fail "compare left the staged copy"
expect_exit 2 "$DSBENCH" compare "$U/ds"
expect_err "needs --stage-dir"
mkdir stg-there
expect_exit 2 "$DSBENCH" compare "$U/ds" --stage-dir stg-there
expect_err "already exists"
pass "dsbench compare s3://: stream vs dssync-then-local, a recommendation with the break-even; bad --stage-dir"

# --- dsbench s3: warp's operations against the bucket, its figures, verdict and cleanup
expect_exit 0 "$DSBENCH" s3 "$U/bench" --obj-size 64KiB --objects 64 --duration 2s --json
"$PY" - "$WORK/last.out" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
g = r["ops"]["get"]
assert g["ops"] > 0 and g["errors"] == 0 and g["bytes"] == g["ops"] * 65536, g
for k in ("ttfb_ns", "ttlb_ns"):
    p = g[k]["percentile"]
    assert set(p) == {"50.000000", "90.000000", "99.000000", "99.900000"}, p
    assert 0 < p["50.000000"] <= p["99.900000"], p
assert g["ttfb_ns"]["mean"] <= g["ttlb_ns"]["mean"], g
seg = r["summary"]["segments"]
assert seg["count"] == 2 and seg["fastest"]["ops_per_s"] >= seg["slowest"]["ops_per_s"] > 0, seg
EOF
expect_exit 0 "$DSBENCH" s3 "$U/bench" --op mixed --obj-size 4KiB:64KiB --objects 64 --ops 400 --concurrency 8 --json
"$PY" - "$WORK/last.out" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
ops = r["ops"]
assert set(ops) == {"get", "put", "stat", "delete"}, ops.keys()
assert sum(o["ops"] for o in ops.values()) == 400 and r["summary"]["errors"] == 0, r["summary"]
EOF
for op in put stat list delete; do
  expect_exit 0 "$DSBENCH" s3 "$U/bench" --op $op --obj-size 4KiB --objects 32 --ops 32 --concurrency 4 --json
  grep -q "\"$op\": {" "$WORK/last.out" || fail "dsbench s3 --op $op reported no $op"
done
expect_exit 1 "$DSBENCH" s3 "$U/bench" --op stat --objects 16 --duration 1s --min-iops 1e9 --max-ttfb-p99 10s
grep -q "^FAIL: .* ops/s (bar " "$WORK/last.out" || fail "no FAIL line for --min-iops"
grep -q "^PASS: TTFB p99 " "$WORK/last.out" || fail "no PASS line for --max-ttfb-p99"
if [ "${DSPACK_MPI:-1}" = 1 ] && command -v mpirun >/dev/null; then  # (sanitizer builds: no MPI)
  expect_exit 0 env OMPI_MCA_btl_vader_single_copy_mechanism=none \
    timeout -k 10 120 mpirun --allow-run-as-root --oversubscribe -n 2 \
    -x AWS_ENDPOINT_URL -x AWS_ACCESS_KEY_ID -x AWS_SECRET_ACCESS_KEY -x AWS_REGION \
    "$DSBENCH" s3 "$U/bench" --obj-size 16KiB --objects 32 --ops 200 --concurrency 4 --json
  "$PY" - "$WORK/last.out" <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))
s = r["summary"]
assert len(r["ranks"]) == 2 and s["ops"] == 400, s
assert 0 < s["first_done"]["seconds"] <= s["last_done"]["seconds"], s
EOF
fi
expect_exit 0 "$DSBENCH" s3 "$U/exist" --op put --ops 8 --obj-size 4KiB --keep
grep -q "^kept the objects under $U/exist/dsbench-s3\." "$WORK/last.out" || fail "--keep did not say where"
expect_exit 0 "$DSBENCH" s3 "$U/exist" --existing --ops 16 --json
grep -q '"bytes": 65536,' "$WORK/last.out" || fail "--existing did not read 16 objects of 4 KiB"
[ "$(s3cmd ls -r "$U/exist/" | wc -l)" -eq 8 ] || fail "--existing changed the objects"
expect_exit 2 "$DSBENCH" s3 "$U/exist" --existing --op delete
expect_err "reads only"
expect_exit 2 env AWS_SECRET_ACCESS_KEY=not-the-secret "$DSBENCH" s3 "$U/bench" --duration 1s
expect_err "access denied"
grep -q "not-the-secret" "$WORK/last.err" && fail "dsbench s3 echoed the secret"
expect_exit 2 "$DSBENCH" s3 "$S3_URL-missing/bench" --duration 1s
expect_err "no bucket"
[ -z "$(s3cmd ls -r "$U/bench/")" ] || { s3cmd ls -r "$U/bench/" | head; fail "dsbench s3 left objects"; }
pass "dsbench s3: get, mixed, put/stat/list/delete, --existing, a verdict, 2 ranks; wrong keys exit 2; no objects left"

if [ "$have_py" = 1 ]; then
# --- the Python package: dspack.open, read_batch, a DataLoader with workers
env PYTHONPATH="$PYMOD" "$PY" - "$U/ds" local-ds "$N" <<'EOF'
import sys
import dspack
from dspack.torch import MapDataset
import torch
url, local, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
r, l = dspack.open(url), dspack.open(local)
assert len(r) == n, (len(r), n)
for i in (0, n // 2, n - 1):
    assert r[i] == l[i], i
idx = list(range(0, n, 3))
assert r.read_batch(idx) == l.read_batch(idx)
st = r.last_batch_stats()  # the backend's own engine: the batch's GETs in flight at once
assert st["engine"] == "s3" and st["peak_inflight"] > 1, st
dl = torch.utils.data.DataLoader(MapDataset(url), batch_size=16, num_workers=2,
                                 collate_fn=lambda x: x)
assert sum(len(b) for b in dl) == n
EOF
pass "dspack.open(s3://) reads as the local dataset, read_batch through the s3 engine; a DataLoader's workers read it"
fi

# --- bad input: each one line, exit 2, the secret never echoed
expect_exit 2 env AWS_SECRET_ACCESS_KEY=not-the-secret-42 "$DSPACK" info "$U/ds"
expect_err "access denied"
grep -q "not-the-secret-42\|$AWS_SECRET_ACCESS_KEY" "$WORK/last.err" && fail "a secret was echoed"
[ "$(wc -l <"$WORK/last.err")" -eq 1 ] || fail "wrong keys: not one line"
expect_exit 2 "$DSPACK" info s3://no-such-bucket-x/ds
expect_err "no bucket no-such-bucket-x"
expect_exit 2 env AWS_ENDPOINT_URL=http://127.0.0.1:1 "$DSPACK" info "$U/ds?retries=1"
expect_err "cannot reach http://127.0.0.1:1"
expect_exit 2 env -u AWS_ACCESS_KEY_ID -u AWS_SECRET_ACCESS_KEY HOME="$WORK" "$DSPACK" info "$U/ds"
expect_err "no S3 credentials"
expect_exit 2 "$DSSYNC" s3://no-such-bucket-x/ds nowhere
expect_err "no bucket no-such-bucket-x"
[ -e nowhere ] && fail "dssync left a destination for a missing bucket"
pass "wrong keys, a missing bucket, a wrong endpoint, no credentials: one line each, exit 2"

# --- the commit point: a dataset without its metadata object is no dataset
expect_exit 0 "$DSPACK" convert tree "$U/half" --shard-size 1MiB --label-from-dir -q
s3_curl -X DELETE "$AWS_ENDPOINT_URL/$S3_BUCKET/half/manifest.json"
expect_exit 1 "$DSPACK" info "$U/half"
pass "no manifest object: no dataset"

if [ "$have_py" = 1 ]; then
# --- an object replaced under a reader: named, never a mix of two objects; then the gateway
# killed under a reader: bounded retries, then the object and the range named
env PYTHONPATH="$PYMOD" "$PY" - "$U/up-ds?retries=2" "$N" <<'EOF' >reader.out 2>&1 &
import os, sys, time
import dspack
url, n = sys.argv[1], int(sys.argv[2])
r = dspack.open(url)
r[0]
open("ready", "w").close()
while not os.path.exists("go"):
    time.sleep(0.05)
try:
    r[1]
except Exception as e:
    assert "changed since it was opened" in str(e) and "shard-000000.dsr" in str(e), str(e)
else:
    raise AssertionError("a replaced object was read")
open("ready2", "w").close()
while not os.path.exists("go2"):
    time.sleep(0.05)
try:
    r[n - 1]
except Exception as e:
    msg = str(e)
    assert "cannot reach" in msg and "after 3 tries" in msg and "bytes " in msg, msg
    assert ".dsr" in msg, msg
else:
    raise AssertionError("read with the gateway down")
print("reader ok")
EOF
reader=$!
for _ in $(seq 200); do [ -e ready ] && break; kill -0 $reader 2>/dev/null || break; sleep 0.1; done
head -c 1000 /dev/urandom >new.bin
s3_curl -X PUT --data-binary @new.bin "$AWS_ENDPOINT_URL/$S3_BUCKET/up-ds/shard-000000.dsr" >/dev/null
touch go
for _ in $(seq 200); do [ -e ready2 ] && break; kill -0 $reader 2>/dev/null || break; sleep 0.1; done
s3_stop_gateway
touch go2
wait $reader || { cat reader.out; fail "the reader under a replaced object and a dead gateway"; }
grep -q "reader ok" reader.out || { cat reader.out; fail "reader"; }
pass "an object replaced under a reader is named; radosgw down under it: the range named after 3 tries"
fi
s3_stop_gateway  # (again, where the reader above did not)

expect_exit 2 "$DSPACK" verify "$U/ds?retries=1"
expect_err "cannot reach"
s3_start_gateway
expect_exit 0 "$DSPACK" verify "$U/ds"
pass "radosgw down: verify exits 2 in one line; up again: verify passes"

# --- radosgw killed under an upload: no dataset under the final name; the next run aborts the
# multipart upload left behind, and writes the dataset whole. One 64 MiB shard: 8 parts.
uploads() { s3_curl "$AWS_ENDPOINT_URL/$S3_BUCKET?prefix=big%2F&uploads=" | grep -o "<UploadId>" | wc -l; }
"$DSPACK" convert tree "$U/big?retries=0" --shard-size 64MiB --label-from-dir -q 2>big.err &
conv=$!
for _ in $(seq 300); do [ "$(uploads)" -gt 0 ] && break; kill -0 $conv 2>/dev/null || break; sleep 0.05; done
[ "$(uploads)" -gt 0 ] || fail "no multipart upload was seen in flight"
s3_stop_gateway
set +e; wait $conv; rc=$?; set -e
[ "$rc" -eq 2 ] || { cat big.err; fail "convert under a dead gateway: exit $rc, want 2"; }
[ "$(wc -l <big.err)" -eq 1 ] || { cat big.err; fail "convert under a dead gateway: not one line"; }
s3_start_gateway
expect_exit 1 "$DSPACK" info "$U/big"
[ "$(uploads)" -gt 0 ] || fail "the killed upload left no multipart upload to clean"
expect_exit 0 "$DSPACK" convert tree "$U/big" --shard-size 64MiB --label-from-dir --force
grep -q "aborted 1 unfinished multipart upload" "$WORK/last.err" || { cat "$WORK/last.err"; fail "no abort said"; }
[ "$(uploads)" -eq 0 ] || fail "an orphaned multipart upload survived the next run"
expect_exit 0 "$DSPACK" verify "$U/big"
pass "radosgw killed under an upload: no dataset; the next run aborts the orphan and writes it whole"


# --- through the delay line (the fixture's s3_delay: a client namespace 2 x 2 ms away), as the
# S3 benchmark runs a store across a network (tools/peers/s3_vs_peers.sh)
if [ "$(id -u)" = 0 ] && [ -x "${DELAY_LINE:-}" ]; then
  s3_delay 2000
  expect_exit 0 s3_client env AWS_ENDPOINT_URL="$S3_DELAYED_ENDPOINT" "$DSPACK" verify "$U/ds"
  grep -qF "$N records" "$WORK/last.out" || fail "verify through the delay line did not check $N records"
  t0=$(date +%s%N)
  s3_client curl -s -o /dev/null "$S3_DELAYED_ENDPOINT/"
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))  # a connection and a request: two round trips
  [ "$ms" -ge 8 ] || fail "a request through a 4 ms round trip took $ms ms"
  pass "through the delay line: verify from a client namespace; a request pays the round trips"

  # The answer cut mid-body: the line paused for 2.5 s under dssync's GETs of a 24 MiB object
  # (held to 12 MB/s, so the pause lands mid-transfer); each stalled transfer is cut after a
  # second without bytes (?timeout=1) and sent again, never taken for a short object.
  mkdir -p cutsrc
  head -c $((24 << 20)) /dev/urandom >cutsrc/big.bin
  s3cmd put -q cutsrc/big.bin "$U/cut/big.bin"
  t0=$(date +%s%N)
  s3_client env AWS_ENDPOINT_URL="$S3_DELAYED_ENDPOINT" "$DSSYNC" "$U/cut?timeout=1&retries=8" \
    staged-cut -q --bwlimit 12MB/s >cut.out 2>&1 &
  pid=$!
  sleep 0.6
  kill -STOP "$S3_DELAY_PID"
  sleep 2.5
  kill -CONT "$S3_DELAY_PID"
  wait $pid || { cat cut.out; fail "dssync under a cut transfer"; }
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  [ "$ms" -ge 2500 ] || fail "dssync ended in $ms ms: the pause did not land under it"
  cmp cutsrc/big.bin staged-cut/big.bin || fail "a transfer cut mid-body gave other bytes"
  pass "an answer cut mid-body (the line paused 2.5 s): retried after the stall timeout; the copy is whole"
fi
