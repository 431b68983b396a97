#!/usr/bin/env bash
# dspack against a real S3 server (docs/s3.md): Ceph's RADOS Gateway on a one-OSD memstore
# cluster on 127.0.0.1 (tests/e2e/s3_fixture.sh). Medians of ROUNDS, the runs interleaved, in one
# invocation:
#   S3  dsbench replay of the native dataset against the tree it was packed from, both from the
#       bucket: samples/s, and the request bill (storage operations per sample) of each. The tree
#       as ImageFolder reads it (map: a file at a time per worker) and with a batch read by 16
#       threads per worker (--batch-reads 16: a __getitems__ of the user's own); the native
#       dataset streamed a sample at a time (shard order, the object read ahead), streamed a
#       batch at a time (a batch's neighbouring records are one ranged GET of up to 8 MiB), and
#       in map mode a batch at a time (MapDataset(batch_reads=True, inflight=16): 16 ranged
#       GETs in flight per worker).
#   S4  dssync s3://… → local against `s3cmd sync` of the same prefix: the tree and the native
#       shards.
#   S1  (single object) dssync of one 256 MiB object against `curl` of it (one GET), the same
#       made durable (`sync -f`, as dssync's copy is), and `s3cmd get`.
#   S3 and S4 at a delay (S3_DELAY_US microseconds each way, default 5000: a 10 ms round trip,
#       as a store across a network answers; 0 skips it): the same replays, and dssync and
#       s3cmd sync of the tree and of the shards, from a client namespace through the delay line
#       (tests/e2e/delay_line.c; needs root).
# The OSD is memstore: the server's data is in RAM, so every run is "warm" at the server; there
# is no client page cache on s3://.
#   tools/peers/s3_vs_peers.sh [SAMPLES=2000] [ROUNDS=3]
# REPLAY_ONLY=1 skips S4 and S1 (the dssync, s3cmd and curl runs); SYNC_ONLY=1 skips the replays.
# Needs Ceph (ceph-mon, ceph-osd, radosgw), s3cmd, curl and the built tools (override with
# DSPACK, DSSYNC, DSBENCH).
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-2000}
ROUNDS=${2:-3}
DSPACK=${DSPACK:-$PWD/build/pack/dspack}
DSSYNC=${DSSYNC:-$PWD/build/sync/dssync}
DSBENCH=${DSBENCH:-$PWD/build/bench/dsbench}
DELAY_LINE=${DELAY_LINE:-$PWD/build/tests/dspack-delay-line}
S3_DELAY_US=${S3_DELAY_US:-5000}
REPLAY_ONLY=${REPLAY_ONLY:-0}
SYNC_ONLY=${SYNC_ONLY:-0}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dspack-s3-bench-XXXXXX")
fail() { echo "FAIL: $*" >&2; exit 1; }
source tests/e2e/s3_fixture.sh
trap 's3_stop; rm -rf "$WORK"' EXIT
s3_start
U=$S3_URL
"$DSPACK" synth imagenet-like "$WORK/tree" --samples "$N" --seed 1 -q
"$DSPACK" convert "$WORK/tree" "$WORK/ds" --label-from-dir -q
mkdir -p "$WORK/big"
dd if=/dev/urandom of="$WORK/big/big.bin" bs=1M count=256 status=none
s3cmd sync -q "$WORK/tree/" "$U/tree/"
s3cmd sync -q "$WORK/ds/" "$U/ds/"
s3cmd sync -q "$WORK/big/" "$U/big/"
BYTES=$(du -sb --apparent-size "$WORK/tree" | cut -f1)
SBYTES=$(du -sb --apparent-size "$WORK/ds" | cut -f1)
rm -rf "$WORK/tree" "$WORK/ds" "$WORK/big"

results=$WORK/results.txt
: >"$results"
# curl_durable FILE URL: curl's GET into a fresh FILE, then made durable (sync -f: the file
# system's syncfs), as dssync makes every copy durable before its final name.
curl_durable() {
  rm -f "$1"
  s3_curl -o "$1" "$2" && sync -f "$1"
}

timed() {  # timed NAME CMD...: into a fresh $WORK/out
  local name=$1; shift
  rm -rf "$WORK/out"; sync
  local t0 ms
  t0=$(date +%s%N)
  "$@" >"$WORK/run.out" 2>"$WORK/run.err" || { cat "$WORK/run.err"; fail "$name failed"; }
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '%s %d.%03d 0\n' "$name" $((ms / 1000)) $((ms % 1000)) >>"$results"
}
replay() {  # replay NAME LAYOUT ROUND MODE BATCH_READS [PREFIX...]
  local name=$1 layout=$2 round=$3 mode=$4 br=$5
  shift 5
  "$@" "$DSBENCH" replay "$U/$layout" --epochs 1 --mode "$mode" --batch-reads "$br" \
    --output-format json >"$WORK/replay-$name-$round.json" 2>"$WORK/run.err" ||
    [ $? -eq 1 ] || { cat "$WORK/run.err"; fail "replay $name"; }
}
replays() {  # replays ROUND [PREFIX...]: the five loaders, interleaved
  local round=$1
  shift
  replay tree tree "$round" map 0 "$@"
  replay tree-batch tree "$round" map 16 "$@"
  replay ds ds "$round" stream 0 "$@"
  replay ds-stream-batch ds "$round" stream 16 "$@"
  replay ds-batch ds "$round" map 16 "$@"
}
for r in $(seq 1 "$ROUNDS"); do
  [ "$SYNC_ONLY" = 1 ] || replays "$r"
  [ "$REPLAY_ONLY" = 1 ] && continue
  timed tree-dssync "$DSSYNC" "$U/tree" "$WORK/out" -q
  timed tree-s3cmd s3cmd sync -q "$U/tree/" "$WORK/out/"
  timed shards-dssync "$DSSYNC" "$U/ds" "$WORK/out" -q
  timed shards-s3cmd s3cmd sync -q "$U/ds/" "$WORK/out/"
  timed big-dssync "$DSSYNC" "$U/big" "$WORK/out" -q
  timed big-curl s3_curl -o "$WORK/out.bin" "$AWS_ENDPOINT_URL/$S3_BUCKET/big/big.bin"
  timed big-curl-sync curl_durable "$WORK/out.bin" "$AWS_ENDPOINT_URL/$S3_BUCKET/big/big.bin"
  timed big-s3cmd s3cmd get -q "$U/big/big.bin" "$WORK/out.bin" --force
  rm -f "$WORK/out.bin"
done

if [ "$S3_DELAY_US" -gt 0 ]; then
  s3_delay "$S3_DELAY_US"
  far() { s3_client env AWS_ENDPOINT_URL="$S3_DELAYED_ENDPOINT" S3_DIR="$S3_DIR" "$@"; }
  far_s3cmd() { far bash -c "$(declare -f s3cmd); s3cmd $*"; }
  for r in $(seq 1 "$ROUNDS"); do
    [ "$SYNC_ONLY" = 1 ] || replays "d$r" far
    [ "$REPLAY_ONLY" = 1 ] && continue
    timed tree-dssync-d far "$DSSYNC" "$U/tree" "$WORK/out" -q
    timed tree-s3cmd-d far_s3cmd sync -q "$U/tree/" "$WORK/out/"
    timed shards-dssync-d far "$DSSYNC" "$U/ds" "$WORK/out" -q
    timed shards-s3cmd-d far_s3cmd sync -q "$U/ds/" "$WORK/out/"
  done
fi

PYTHONPATH=tools/peers /usr/bin/python3 - "$WORK" "$results" "$N" "$BYTES" "$SBYTES" "$ROUNDS" "$S3_DELAY_US" "$REPLAY_ONLY" "$SYNC_ONLY" <<'PY'
import json, statistics, sys
from runs import load, replay_table
work, path, n, b, sb, rounds, delay, replay_only, sync_only = sys.argv[1:10]
n, b, sb, rounds, delay = int(n), int(b), int(sb), int(rounds), int(delay)
med, _ = load(path) if replay_only != "1" else ({}, None)
print("Ceph 16 radosgw (beast, one memstore OSD) on 127.0.0.1, libcurl SigV4;")
print(f"{n} ImageNet-like files ({b/1e6:.0f} MB); native dataset {sb/1e6:.0f} MB; medians of {rounds}, interleaved")
LOADERS = (("tree", "tree, a file at a time (ImageFolder)"),
           ("tree-batch", "tree, a batch by 16 threads per worker"),
           ("ds", "native, streamed (shard order, read ahead)"),
           ("ds-stream-batch", "native, streamed, a batch at once (runs)"),
           ("ds-batch", "native, map, a batch at once (16 GETs in flight)"))
def calls(run):
    e = run["epochs"][0]
    ops = e["storage_ops"]
    per = {k: ops[k] / e["samples"] for k in ("open", "stat", "list", "read") if ops[k]}
    return f"calls/sample {ops['per_sample']:.2f} (" + ", ".join(f"{k} {v:.3f}" for k, v in per.items()) + ")"
def table(tag, title):
    replay_table(work, rounds, LOADERS, tag, title, calls)
if sync_only != "1":
    table("", "S3 replay on loopback, samples/s (ratio to the tree read a file at a time):")
    print("   an open is a HEAD, a stat a HEAD (+ a LIST for a prefix), a list a LIST page, a read a GET")
    if delay > 0:
        table("d", f"S3 replay through a {2 * delay / 1000:g} ms round trip:")
if replay_only == "1":
    sys.exit(0)
print(f"S4 dssync tree {med['tree-dssync']:.2f} s, s3cmd sync {med['tree-s3cmd']:.2f} s: "
      f"dssync {med['tree-s3cmd']/med['tree-dssync']:.1f}x")
print(f"   shards: dssync {med['shards-dssync']:.2f} s ({sb/med['shards-dssync']/1e6:.0f} MB/s), "
      f"s3cmd sync {med['shards-s3cmd']:.2f} s: dssync {med['shards-s3cmd']/med['shards-dssync']:.1f}x")
big = 256 * 2**20
print(f"S1 one 256 MiB object: dssync {big/med['big-dssync']/1e6:.0f} MB/s, curl {big/med['big-curl']/1e6:.0f} MB/s, "
      f"curl + sync -f {big/med['big-curl-sync']/1e6:.0f} MB/s, s3cmd get {big/med['big-s3cmd']/1e6:.0f} MB/s: "
      f"dssync/curl {med['big-curl']/med['big-dssync']:.2f}, "
      f"dssync/durable curl {med['big-curl-sync']/med['big-dssync']:.2f}")
if delay > 0:
    print(f"S4 through a {2 * delay / 1000:g} ms round trip: dssync tree {med['tree-dssync-d']:.2f} s, "
          f"s3cmd sync {med['tree-s3cmd-d']:.2f} s: dssync {med['tree-s3cmd-d']/med['tree-dssync-d']:.1f}x; "
          f"shards: dssync {med['shards-dssync-d']:.2f} s, s3cmd sync {med['shards-s3cmd-d']:.2f} s: "
          f"dssync {med['shards-s3cmd-d']/med['shards-dssync-d']:.1f}x")
PY
