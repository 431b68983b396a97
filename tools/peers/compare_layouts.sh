#!/usr/bin/env bash
# The figures of docs/benchmarks.md#dsbench-compare, in one invocation (issue 6's claims):
#   (a) dsbench compare over dir, zip, native, lmdb, wds, tfrecord: cold (drop_caches) and warm,
#       on local disk and through the slow file system (1 ms per metadata round trip), with a
#       worker sweep 1,2,4,8; medians of EPOCHS epochs per run;
#   (b) the same layouts through the slow file system, cold, 4 workers, with a simulated
#       accelerator that needs RATE samples/s: AU per layout;
#   (c) memory speed: the cached native shards read with dd (1 MiB blocks) to /dev/null, the
#       page cache's read bandwidth on this machine, measured in the same invocation as (a).
# Prints ratios against the directory tree and against (c).
#   tools/peers/compare_layouts.sh [SAMPLES=5000] [EPOCHS=3] [RATE=3200]
# Needs root (drop_caches, FUSE) and built build/pack/dspack, build/bench/dsbench (override with
# DSPACK, DSBENCH). Work files go to $WORK (default /tmp/dspack-compare-bench).
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-5000}
E=${2:-3}
RATE=${3:-3200}
DSPACK=${DSPACK:-$PWD/build/pack/dspack}
DSBENCH=${DSBENCH:-$PWD/build/bench/dsbench}
W=${WORK:-/tmp/dspack-compare-bench}
source tools/peers/lib.sh
bench_tree  # the imagenet-like tree of N samples, seed 1, as the other scripts: $SRC
rm -rf "$W/c"  # layouts are built afresh (compare would reuse them)
LAYOUTS=dir,zip,native,lmdb,wds,tfrecord

"$DSBENCH" compare "$SRC" --work-dir "$W/c" --layouts $LAYOUTS --label-from-dir --epochs "$E" \
  --workers 1,2,4,8 --meta-latency 1ms --drop-caches --output-format json > "$W/a.json"
# batch 32 every 32/RATE s on one GPU
step=$(/usr/bin/python3 -c "print(f'{32 / $RATE * 1000:.3f}ms')")
"$DSBENCH" compare "$SRC" --work-dir "$W/c" --layouts $LAYOUTS --epochs "$E" --workers 4 \
  --meta-latency 1ms --no-local --cache cold --drop-caches --gpus 1 --batch 32 \
  --step-time "$step" --output-format json > "$W/b.json"
: > "$W/dd.txt"
for _ in 1 2 3; do
  cat "$W"/c/native/*.dsr > /dev/null  # cached
  for f in "$W"/c/native/*.dsr; do dd if="$f" of=/dev/null bs=1M 2>&1 | tail -1; done >> "$W/dd.txt"
done

/usr/bin/python3 - "$W" "$RATE" <<'PY'
import json, re, statistics, sys
w, rate = sys.argv[1], float(sys.argv[2])
a = json.load(open(f"{w}/a.json"))["compare"]
b = json.load(open(f"{w}/b.json"))["compare"]
# dd prints "... bytes ... copied, 0.05 s, 2.3 GB/s": collect per-file rates
dd = []
for line in open(f"{w}/dd.txt"):
    m = re.search(r"(\d+) bytes.*copied, ([\d.]+) s", line)
    if m and float(m.group(2)) > 0:
        dd.append(int(m.group(1)) / float(m.group(2)))
mem = statistics.median(dd)
print(f"dataset: {a['samples']} samples, {a['source_bytes']/1e6:.0f} MB; medians of {a['job']['epochs']} epochs per run")
print(f"page cache read (dd bs=1M of the cached native shards, median of {len(dd)}): {mem/1e9:.2f} GB/s")
runs = a["runs"]
def run(layout, storage, cache, workers):
    return [r for r in runs if r["layout"] == layout and r["storage"] == storage
            and r["cache"] == cache and r["workers"] == workers][0]
layouts = [x["layout"] for x in a["builds"]]
for storage in ("local", "slowfs"):
    for cache in ("cold", "warm"):
        print(f"\n{storage} {cache}: samples/s at 1/2/4/8 workers (x dir at the same count)"
              + ("; MB/s at 8 workers vs page cache" if cache == "warm" else ""))
        for l in layouts:
            cells = []
            for wk in (1, 2, 4, 8):
                r, d = run(l, storage, cache, wk), run("dir", storage, cache, wk)
                cells.append(f"{r['samples_per_sec']:8.0f} ({r['samples_per_sec']/d['samples_per_sec']:5.2f}x)")
            extra = ""
            if cache == "warm":
                r8 = run(l, storage, cache, 8)
                extra = f"  {r8['bytes_per_sec']/1e6:6.0f} MB/s = {r8['bytes_per_sec']/mem:.2f} of dd"
            print(f"  {l:<9}" + " ".join(cells) + extra)
print(f"\nAU through slowfs, cold, 4 workers, a job needing {rate:.0f} samples/s "
      f"(batch 32, step {32/rate*1000:.1f} ms):")
for r in sorted(b["runs"], key=lambda r: -(r["au"] or 0)):
    print(f"  {r['layout']:<9} AU {r['au']*100:5.1f}%  delivered {r['samples_per_sec']:6.0f} samples/s"
          f"  capacity {r['capacity_samples_per_sec']:7.0f}  data wait p99 {r['data_wait_ns']['percentile']['99.000000']/1e6:.1f} ms")
print("\nrecommendation (a):", a["recommendation"])
PY
