#!/usr/bin/env bash
# LayoutReader::ReadBatch (K reads in flight through the IO engine) against one read after
# another (LayoutReader::Get), on the same N random samples of a native dataset, through the
# slow file system (`dsbench slowfs`, LATENCY per metadata round trip and per read: emulated
# NFS), cold (drop_caches before each run), interleaved, ROUNDS times; prints the medians and the
# ratio, and the engine's peak reads in flight. The bar (issue 12): ratio >= K/2.
#   tools/peers/batch_read_slowfs.sh [SAMPLES=2000] [ROUNDS=3] [K=16] [READS=500]
# Needs root (drop_caches, FUSE), a built build/ (dspack, dsbench, dsbench-slowfs,
# dspack_batch_read). LATENCY: 1ms.
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-2000}
ROUNDS=${2:-3}
K=${3:-16}
READS=${4:-500}
DSPACK=${DSPACK:-$PWD/build/pack/dspack}
DSBENCH=${DSBENCH:-$PWD/build/bench/dsbench}
BATCH=${BATCH:-$PWD/build/bench/dspack_batch_read}
W=${BENCH_DIR:-/tmp/dspack-bench}
LATENCY=${LATENCY:-1ms}
source tools/peers/lib.sh
bench_tree
DS="$W/batch-native-$N"
[ -f "$DS/manifest.json" ] || "$DSPACK" convert "$SRC" "$DS" -q --force
MNT="$W/mnt-batch"
mkdir -p "$MNT"
"$DSBENCH" slowfs "$DS" "$MNT" --meta-latency "$LATENCY" --read-latency "$LATENCY" \
  > "$W/slowfs.log" 2>&1 &
SLOWFS_PID=$!
trap slowfs_umount EXIT
for _ in $(seq 200); do mountpoint -q "$MNT" && break; sleep 0.05; done
mountpoint -q "$MNT" || { cat "$W/slowfs.log"; exit 1; }

out="$W/batch-results.jsonl"; : > "$out"
for r in $(seq 1 "$ROUNDS"); do
  for mode in serial batch; do
    drop
    "$BATCH" "$MNT" --samples "$READS" --inflight "$K" --mode "$mode" --seed "$r" >> "$out"
  done
done
/usr/bin/python3 - "$out" "$K" "$LATENCY" <<'PY'
import json, statistics, sys
runs = [json.loads(l) for l in open(sys.argv[1])]
k, latency = int(sys.argv[2]), sys.argv[3]
med = {m: statistics.median(r["seconds"] for r in runs if r["mode"] == m) for m in ("serial", "batch")}
batch = [r for r in runs if r["mode"] == "batch"]
n = runs[0]["samples"]
print(f"{n} random samples of a native dataset through dsbench slowfs ({latency} per metadata op "
      f"and per read), cold, medians of {len(batch)}:")
print(f"  one Get after another: {med['serial']:.2f} s ({n / med['serial']:.0f} samples/s)")
print(f"  ReadBatch, K={k}:      {med['batch']:.2f} s ({n / med['batch']:.0f} samples/s), engine "
      f"{batch[0]['engine']}, peak reads in flight {max(r['peak_inflight'] for r in batch)}")
ratio = med["serial"] / med["batch"]
print(f"  ratio {ratio:.1f}x (bar: K/2 = {k / 2:.0f}x): {'holds' if ratio >= k / 2 else 'MISSED'}")
PY
