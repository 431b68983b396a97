#!/usr/bin/env bash
# dsbench s3's GETs against the ceiling, a plain libcurl-multi harness (tools/peers/
# s3_get_multi.c), on the same objects at the same concurrency, against a real S3 server (Ceph's
# RADOS Gateway, tests/e2e/s3_fixture.sh). Medians of ROUNDS, the runs interleaved, in one
# invocation (docs/s3.md, S1 and S2):
#   S2  10,000 objects of 100 KB at concurrency 64: ops/s and CPU per request;
#   S1  256 objects of 1 MiB at concurrency 16, and 8 of 64 MiB at concurrency 4: MB/s.
# Each object is read once per run by both; dsbench picks them at random (with repeats).
#   tools/peers/s3_get_vs_curl.sh [ROUNDS=3]
# Needs Ceph (ceph-mon, ceph-osd, radosgw), curl, a C compiler and libcurl's headers, and the built
# dsbench (override with DSBENCH).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}
DSBENCH=${DSBENCH:-$PWD/build/bench/dsbench}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dspack-s3-get-XXXXXX")
fail() { echo "FAIL: $*" >&2; exit 1; }
source tests/e2e/s3_fixture.sh
trap 's3_stop; rm -rf "$WORK"' EXIT
cc -O2 -o "$WORK/s3_get_multi" tools/peers/s3_get_multi.c -lcurl
s3_start
# put SET N SIZE: N objects of SIZE under s3://BUCKET/SET/, their keys in $WORK/SET.keys
put() {
  "$DSBENCH" s3 "$S3_URL/$1" --op put --ops "$2" --obj-size "$3" --concurrency 16 --keep --json \
    >"$WORK/put.json" || fail "put $1"
  local prefix
  prefix=$(/usr/bin/python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["ranks"][0]["prefix"])' "$WORK/put.json")
  prefix=${prefix#"$S3_URL/"}
  seq 0 $(($2 - 1)) | sed "s|^|${prefix}obj.|" >"$WORK/$1.keys"
}
put s2 10000 100KB
put m1 256 1MiB
put m64 8 64MiB
results=$WORK/results.txt
: >"$results"
run() {  # run SET DEPTH
  local n
  n=$(wc -l <"$WORK/$1.keys")
  "$WORK/s3_get_multi" "$S3_BUCKET" "$WORK/$1.keys" "$2" >"$WORK/run.out" || fail "harness $1"
  awk -v s="$1" '{print s "-curl", $6, $8}' "$WORK/run.out" >>"$results"
  "$DSBENCH" s3 "$S3_URL/$1" --existing --ops "$n" --concurrency "$2" --json >"$WORK/run.json" ||
    fail "dsbench s3 $1"
  /usr/bin/python3 -c 'import json,sys
r = json.load(open(sys.argv[1])); s = r["summary"]
print(sys.argv[2] + "-dsbench", s["ops_per_s"], r["ranks"][0]["cpu"]["per_request_us"])' \
    "$WORK/run.json" "$1" >>"$results"
}
for _ in $(seq 1 "$ROUNDS"); do
  run s2 64
  run m1 16
  run m64 4
done
/usr/bin/python3 - "$results" "$ROUNDS" <<'PY'
import collections, statistics, sys
runs = collections.defaultdict(list)
for line in open(sys.argv[1]):
    name, ops, cpu = line.split()
    runs[name].append((float(ops), float(cpu)))
med = {k: (statistics.median(o for o, _ in v), statistics.median(c for _, c in v)) for k, v in runs.items()}
print(f"Ceph 16 radosgw (beast, one memstore OSD) on 127.0.0.1; medians of {sys.argv[2]}, interleaved")
for name, size, depth in (("s2", 100e3, 64), ("m1", 2**20, 16), ("m64", 64 * 2**20, 4)):
    d, c = med[name + "-dsbench"], med[name + "-curl"]
    print(f"{name}: {size/1e6:g} MB objects at concurrency {depth}: dsbench s3 {d[0]:.0f} ops/s "
          f"({d[0]*size/1e6:.0f} MB/s, {d[1]:.0f} us CPU per request), libcurl-multi {c[0]:.0f} ops/s "
          f"({c[0]*size/1e6:.0f} MB/s, {c[1]:.0f} us): dsbench/curl {d[0]/c[0]:.2f}")
PY
