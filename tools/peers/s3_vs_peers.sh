#!/usr/bin/env bash
# dspack against a real S3 server (docs/s3.md): Ceph's RADOS Gateway on a one-OSD memstore
# cluster on 127.0.0.1 (tests/e2e/s3_fixture.sh). Medians of ROUNDS, the runs interleaved, in one
# invocation:
#   S3  dsbench replay of the native dataset (streamed, as its loader reads it) against the tree it
#       was packed from (map: random files), both from the bucket: samples/s, and the request
#       bill (storage operations per sample) of each.
#   S4  dssync s3://… → local against `s3cmd sync` of the same prefix: the tree and the native
#       shards.
#   S1  (single object) dssync of one 256 MiB object against `curl` of it (one GET) and
#       `s3cmd get`.
#   S3 at a delay (S3_DELAY_US microseconds each way, default 5000: a 10 ms round trip, as a
#       store across a network answers; 0 skips it): the same replays from a client namespace
#       through the delay line (tests/e2e/delay_line.c; needs root).
# The OSD is memstore: the server's data is in RAM, so every run is "warm" at the server; there
# is no client page cache on s3://.
#   tools/peers/s3_vs_peers.sh [SAMPLES=2000] [ROUNDS=3]
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
timed() {  # timed NAME CMD...: into a fresh $WORK/out
  local name=$1; shift
  rm -rf "$WORK/out"; sync
  local t0 ms
  t0=$(date +%s%N)
  "$@" >"$WORK/run.out" 2>"$WORK/run.err" || { cat "$WORK/run.err"; fail "$name failed"; }
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '%s %d.%03d 0\n' "$name" $((ms / 1000)) $((ms % 1000)) >>"$results"
}
replay() {  # replay LAYOUT ROUND MODE [PREFIX...]: each as its loader reads it (compare's "natural")
  local layout=$1 round=$2 mode=$3
  shift 3
  "$@" "$DSBENCH" replay "$U/$layout" --epochs 1 --mode "$mode" --output-format json \
    >"$WORK/replay-$layout-$round.json" 2>"$WORK/run.err" || [ $? -eq 1 ] || { cat "$WORK/run.err"; fail "replay $layout"; }
}
for r in $(seq 1 "$ROUNDS"); do
  replay tree "$r" map
  replay ds "$r" stream
  timed tree-dssync "$DSSYNC" "$U/tree" "$WORK/out" -q
  timed tree-s3cmd s3cmd sync -q "$U/tree/" "$WORK/out/"
  timed shards-dssync "$DSSYNC" "$U/ds" "$WORK/out" -q
  timed shards-s3cmd s3cmd sync -q "$U/ds/" "$WORK/out/"
  timed big-dssync "$DSSYNC" "$U/big" "$WORK/out" -q
  timed big-curl s3_curl -o "$WORK/out.bin" "$AWS_ENDPOINT_URL/$S3_BUCKET/big/big.bin"
  timed big-s3cmd s3cmd get -q "$U/big/big.bin" "$WORK/out.bin" --force
  rm -f "$WORK/out.bin"
done

if [ "$S3_DELAY_US" -gt 0 ]; then
  s3_delay "$S3_DELAY_US"
  for r in $(seq 1 "$ROUNDS"); do
    replay tree "d$r" map s3_client env AWS_ENDPOINT_URL="$S3_DELAYED_ENDPOINT"
    replay ds "d$r" stream s3_client env AWS_ENDPOINT_URL="$S3_DELAYED_ENDPOINT"
  done
fi

PYTHONPATH=tools/peers /usr/bin/python3 - "$WORK" "$results" "$N" "$BYTES" "$SBYTES" "$ROUNDS" "$S3_DELAY_US" <<'PY'
import json, statistics, sys
from runs import load
work, path, n, b, sb, rounds, delay = sys.argv[1:8]
n, b, sb, rounds, delay = int(n), int(b), int(sb), int(rounds), int(delay)
med, _ = load(path)
def rep(layout, tag=""):
    runs = [json.load(open(f"{work}/replay-{layout}-{tag}{r}.json"))["replay"] for r in range(1, rounds + 1)]
    sps = statistics.median(run["epochs"][0]["samples_per_sec"] for run in runs)
    return sps, runs[-1]
print("Ceph 16 radosgw (beast, one memstore OSD) on 127.0.0.1, libcurl SigV4;")
print(f"{n} ImageNet-like files ({b/1e6:.0f} MB); native dataset {sb/1e6:.0f} MB; medians of {rounds}, interleaved")
tree, tree_run = rep("tree")
nat, nat_run = rep("ds")
print(f"S3 replay: tree {tree:.0f} samples/s, native {nat:.0f} samples/s: native/tree {nat/tree:.1f}x")
for name, run in (("tree", tree_run), ("native", nat_run)):
    e = run["epochs"][0]
    ops = e["storage_ops"]
    per = {k: ops[k] / e["samples"] for k in ("open", "stat", "list", "read") if ops[k]}
    print(f"   {name} storage calls per sample: {ops['per_sample']:.2f} ("
          + ", ".join(f"{k} {v:.3f}" for k, v in per.items())
          + f"), {ops['read_bytes'] / e['samples'] / 1e3:.0f} KB read per sample;"
          + " an open is a HEAD, a stat a HEAD (+ a LIST for a prefix), a list a LIST page, a read a GET")
if delay > 0:
    dt, _ = rep("tree", "d")
    dn, _ = rep("ds", "d")
    print(f"S3 through a {2 * delay / 1000:g} ms round trip: tree {dt:.0f} samples/s, native {dn:.0f} samples/s: "
          f"native/tree {dn/dt:.1f}x")
print(f"S4 dssync tree {med['tree-dssync']:.2f} s, s3cmd sync {med['tree-s3cmd']:.2f} s: "
      f"dssync {med['tree-s3cmd']/med['tree-dssync']:.1f}x")
print(f"   shards: dssync {med['shards-dssync']:.2f} s ({sb/med['shards-dssync']/1e6:.0f} MB/s), "
      f"s3cmd sync {med['shards-s3cmd']:.2f} s: dssync {med['shards-s3cmd']/med['shards-dssync']:.1f}x")
big = 256 * 2**20
print(f"S1 one 256 MiB object: dssync {big/med['big-dssync']/1e6:.0f} MB/s, curl {big/med['big-curl']/1e6:.0f} MB/s, "
      f"s3cmd get {big/med['big-s3cmd']/1e6:.0f} MB/s: dssync/curl {med['big-curl']/med['big-dssync']:.2f}")
PY
