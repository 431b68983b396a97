#!/usr/bin/env bash
# The same jobs with fio and with dsbench on the same file, interleaved, in one run; prints the
# median IOPS / bandwidth of each and the ratio dsbench/fio, plus CPU per IO.
#   tools/peers/fio_parity.sh [DIR=/tmp/dspack-parity] [RUNTIME=10] [ROUNDS=3] [SIZE=2G]
# The last job is the runbook's storage check word for word (no --time_based: each of the 4 jobs
# reads SIZE or stops at RUNTIME); `tools/peers/fio_parity.sh /scratch/p 30 3 20G` is exactly
#   fio --name=seq_read --filename=F --rw=read --bs=1M --size=20G --direct=1 --ioengine=libaio
#       --numjobs=4 --runtime=30 --group_reporting
set -euo pipefail
cd "$(dirname "$0")/../.."
DIR=${1:-/tmp/dspack-parity}; RT=${2:-10}; ROUNDS=${3:-3}; SIZE=${4:-2G}
DSBENCH=${DSBENCH:-$PWD/build/bench/dsbench}
mkdir -p "$DIR"
F="$DIR/parity.dat"
want=$(numfmt --from=iec "$SIZE")
[ -f "$F" ] && [ "$(stat -c %s "$F")" -ge "$want" ] ||
  fio --name=lay --filename="$F" --size="$SIZE" --rw=write --bs=1M --direct=1 --refill_buffers --output=/dev/null
out="$DIR/parity.txt"; : > "$out"
# Each job is given to fio and to dsbench as the same words (dsbench io takes fio's options).
# The 4-job cases are the runbook's `--numjobs=4 --group_reporting` (4 jobs on one file).
jobs=(
  "rand4k-qd32-io_uring|--rw=randread --bs=4k --iodepth=32 --ioengine=io_uring --direct=1"
  "rand4k-qd32-libaio|--rw=randread --bs=4k --iodepth=32 --ioengine=libaio --direct=1"
  "rand4k-qd1-psync|--rw=randread --bs=4k --iodepth=1 --ioengine=psync --direct=1"
  "seq1m-qd8-io_uring|--rw=read --bs=1M --iodepth=8 --ioengine=io_uring --direct=1"
  "seq1m-4jobs-libaio|--rw=read --bs=1M --ioengine=libaio --direct=1 --numjobs=4 --group_reporting"
  "seq1m-4jobs-io_uring|--rw=read --bs=1M --ioengine=io_uring --direct=1 --numjobs=4 --group_reporting"
  "rand-bssplit-zipf-io_uring|--rw=randread --bssplit=4k/70:64k/30 --random_distribution=zipf:1.2 --iodepth=16 --ioengine=io_uring --direct=1"
  "runbook|--rw=read --bs=1M --direct=1 --ioengine=libaio --numjobs=4 --group_reporting"
)
for r in $(seq 1 "$ROUNDS"); do
  for j in "${jobs[@]}"; do
    name=${j%%|*}; args=${j#*|}
    # shellcheck disable=SC2086
    tb=--time_based; jn=p
    [ "$name" = runbook ] && tb= && jn=seq_read  # word for word: runtime caps, no time_based
    # shellcheck disable=SC2086
    fio --name=$jn --filename="$F" --size="$SIZE" $args --runtime="$RT" $tb --output-format=json > "$DIR/fio.json"
    # shellcheck disable=SC2086
    "$DSBENCH" io --name=$jn --filename="$F" --size="$SIZE" $args --runtime="$RT" $tb --output-format=json > "$DIR/ds.json"
    /usr/bin/python3 - "$name" "$DIR/fio.json" "$DIR/ds.json" >> "$out" <<'PY'
import json, sys
name, f, d = sys.argv[1:4]
def get(path):
    j = json.load(open(path))["jobs"][0]
    r = j["read"]; secs = j["read"]["runtime"] / 1000 or 1
    cpu = (j["usr_cpu"] + j["sys_cpu"]) / 100 * secs / max(r["total_ios"], 1) * 1e6  # us per IO
    return r["iops"], r["bw_bytes"], cpu
fi, fb, fc = get(f); di, db, dc = get(d)
print(name, fi, fb, fc, di, db, dc)
PY
  done
done
/usr/bin/python3 - "$out" "$ROUNDS" "$RT" <<'PY'
import statistics, sys
rows = {}
for line in open(sys.argv[1]):
    n, *v = line.split(); rows.setdefault(n, []).append([float(x) for x in v])
print(f"median of {sys.argv[2]} interleaved runs of {sys.argv[3]} s each, same file, O_DIRECT")
print(f"{'job':<22}{'fio IOPS':>11}{'dsbench IOPS':>14}{'ratio':>8}{'fio MB/s':>10}{'ds MB/s':>9}{'fio us/IO':>11}{'ds us/IO':>10}")
for n, v in rows.items():
    m = [statistics.median(c) for c in zip(*v)]
    print(f"{n:<22}{m[0]:>11.0f}{m[3]:>14.0f}{m[3]/m[0]:>8.3f}{m[1]/1e6:>10.1f}{m[4]/1e6:>9.1f}{m[2]:>11.2f}{m[5]:>10.2f}")
PY
