#!/usr/bin/env bash
# N1 of the NFS issue (docs/nfs.md): `dsbench io --ioengine nfs` against fio's own libnfs engine
# (fio engines/nfs.c; Debian's fio lacks it, tools/peers/build_fio_nfs.sh rebuilds Debian's fio
# source with it), both through libnfs to the same URL of the fixture's real server (nfs-ganesha
# in a network namespace, tests/e2e/nfs_fixture.sh; the veth link, or the delay line with
# DELAY_US each way), one job, on one FILE_MIB MiB file laid out once: 1 MiB sequential reads and
# 4 KiB random reads at iodepth 1, 16 and 64, time_based RUNTIME seconds each, every pair
# interleaved ROUNDS times. Prints the median bandwidth and IOPS of each and the ratio
# dsbench/fio (goal: within +-5 %).
#   tools/peers/nfs_io_vs_fio.sh [ROUNDS=3] [RUNTIME=5] [DELAY_US=0] [FILE_MIB=1024]
# Needs root (namespaces), nfs-ganesha, libnfs-dev, and a built build/ (DSBENCH, DELAY_LINE).
set -euo pipefail
cd "$(dirname "$0")/../.."
ROUNDS=${1:-3}
RUNTIME=${2:-5}
DELAY=${3:-0}
FILE_MIB=${4:-1024}
DSBENCH=${DSBENCH:-$PWD/build/bench/dsbench}
DELAY_LINE=${DELAY_LINE:-$PWD/build/tests/dspack-delay-line}
FIO_NFS=$(tools/peers/build_fio_nfs.sh)
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dspack-nfs-io-XXXXXX")
source tests/e2e/nfs_fixture.sh
trap 'nfs_stop; rm -rf "$WORK"' EXIT
nfs_start
U=$NFS_URL
if [ "$DELAY" -gt 0 ]; then nfs_delay "$DELAY"; U=$NFS_DELAYED_URL; fi
head -c "$((FILE_MIB << 20))" /dev/urandom >"$NFS_EXPORT_DIR/n1.dat"
results=$WORK/results.txt
: >"$results"
common=(--name=n1 --filename=n1.dat --size="${FILE_MIB}m" --time_based --runtime="$RUNTIME"
  --output-format=json)
for round in $(seq "$ROUNDS"); do
  for shape in "read 1m" "randread 4k"; do
    set -- $shape
    for depth in 1 16 64; do
      key="$1-$2-qd$depth"
      # Each run is killed past RUNTIME + 30 s: fio's nfs engine was seen to hang on an RPC
      # reply (1 MiB reads at iodepth 64); a hung run is reported as such, not waited for.
      ok_fio=1
      nfs_client timeout -s KILL "$((RUNTIME + 30))" "$FIO_NFS" --thread --ioengine=nfs \
        --nfs_url="$U" --rw="$1" --bs="$2" --iodepth="$depth" "${common[@]}" \
        >"$WORK/fio.json" 2>"$WORK/fio.err" || ok_fio=0
      nfs_client timeout -s KILL "$((RUNTIME + 30))" "$DSBENCH" io --ioengine nfs \
        --nfs_url "$U" --rw "$1" --bs "$2" --iodepth "$depth" "${common[@]}" \
        >"$WORK/ds.json" 2>"$WORK/ds.err" || { cat "$WORK/ds.err"; exit 1; }
      if [ "$ok_fio" = 0 ]; then
        echo "fio $key hung" >>"$results"
        pkill -KILL -f "^$FIO_NFS " || true  # its forked job outlives the killed parent
        sed 's/^/  fio: /' "$WORK/fio.err" | sort | uniq -c | head -3 >&2
      fi
      for t in fio ds; do
        [ "$t" = fio ] && [ "$ok_fio" = 0 ] && continue
        /usr/bin/python3 -c '
import json, sys
r = json.load(open(sys.argv[1]))["jobs"][0]["read"]
print(sys.argv[2], sys.argv[3], r["bw_bytes"], r["iops"])' "$WORK/$t.json" "$t" "$key" >>"$results"
      done
    done
  done
done
/usr/bin/python3 - "$results" "$ROUNDS" "$RUNTIME" "$DELAY" "$FILE_MIB" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
print(f"nfs-ganesha 4.3 (VFS), libnfs NFSv3, delay {sys.argv[4]} us each way; one job on one "
      f"{sys.argv[5]} MiB file, {sys.argv[3]} s each; medians of {sys.argv[2]}, interleaved")
print(f"{'workload':<18} {'fio MB/s':>9} {'dsbench MB/s':>13} {'fio IOPS':>9} "
      f"{'dsbench IOPS':>13} {'ratio':>6}")
for key in dict.fromkeys(r[1] for r in rows):
    hung = sum(1 for r in rows if r[0] == "fio" and r[1] == key and r[2] == "hung")
    done = {t: [r for r in rows if r[0] == t and r[1] == key and r[2] != "hung"]
            for t in ("fio", "ds")}
    bw = {t: statistics.median(float(r[2]) for r in v) if v else 0 for t, v in done.items()}
    io = {t: statistics.median(float(r[3]) for r in v) if v else 0 for t, v in done.items()}
    ratio = f"{io['ds'] / io['fio']:>6.3f}" if io["fio"] else "   n/a"
    note = f"  (fio hung in {hung} of {hung + len(done['fio'])} runs)" if hung else ""
    print(f"{key:<18} {bw['fio'] / 1e6:>9.1f} {bw['ds'] / 1e6:>13.1f} {io['fio']:>9.0f} "
          f"{io['ds']:>13.0f} {ratio}{note}")
PY
