#!/usr/bin/env bash
# dsbench watch's cost to the job it watches (docs/watch.md#overhead): a real training loader,
# torch's DataLoader (4 workers, batch 32, shuffled) over dspack.torch.MapDataset of a native
# dataset of SAMPLES ImageNet-like files, EPOCHS warm epochs, run alone and under
# `dsbench watch --interval 1s`, interleaved ROUNDS times. Prints each run's samples/s (the
# loader's own clock), the medians, the ratio watched/alone, and watch's CPU per sample taken.
# Goal: the job's samples/s within 1 % of the unwatched run's.
#   tools/peers/watch_overhead.sh [SAMPLES=4000] [EPOCHS=24] [ROUNDS=3]
# Needs python3-torch and a built build/ (dspack, dsbench, the Python package in build/python).
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-4000}
EPOCHS=${2:-24}
ROUNDS=${3:-3}
DSPACK=${DSPACK:-$PWD/build/pack/dspack}
DSBENCH=${DSBENCH:-$PWD/build/bench/dsbench}
PYPATH=${DSPACK_PYTHONPATH:-$PWD/build/python}
W=$(mktemp -d "${TMPDIR:-/tmp}/dspack-watch-overhead-XXXXXX")
trap 'rm -rf "$W"' EXIT
"$DSPACK" synth imagenet-like "$W/tree" --samples "$N" --seed 1 -q
"$DSPACK" convert "$W/tree" "$W/ds" --label-from-dir -q
cat > "$W/loader.py" <<'PY'
import sys, time, torch
import dspack.torch as dt
ds = dt.MapDataset(sys.argv[1])
loader = torch.utils.data.DataLoader(ds, batch_size=32, num_workers=4, shuffle=True,
                                     collate_fn=list, persistent_workers=True)
for batch in loader:  # the first epoch warms the page cache and the workers
    pass
n, t = 0, time.perf_counter()
for epoch in range(1, int(sys.argv[2]) + 1):
    for batch in dt.epoch_marker(loader, epoch, count=len):
        n += len(batch)
print(n / (time.perf_counter() - t))
PY
results=$W/results.txt
: > "$results"
for round in $(seq "$ROUNDS"); do
  alone=$(PYTHONPATH="$PYPATH" /usr/bin/python3 "$W/loader.py" "$W/ds" "$EPOCHS")
  watched=$(PYTHONPATH="$PYPATH" "$DSBENCH" watch --interval 1s --json --output "$W/r.json" -- \
    /usr/bin/python3 "$W/loader.py" "$W/ds" "$EPOCHS")
  cpu=$(/usr/bin/python3 -c "import json; r = json.load(open('$W/r.json')); \
print(r['watch_cpu_seconds'], r['samples'], r['seconds'], r['max_processes'])")
  echo "$round $alone $watched $cpu" | tee -a "$results"
done
/usr/bin/python3 - "$results" <<'PY'
import statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
alone = statistics.median(float(r[1]) for r in rows)
watched = statistics.median(float(r[2]) for r in rows)
cpu = statistics.median(float(r[3]) / int(r[4]) * 1e3 for r in rows)
share = statistics.median(float(r[3]) / float(r[5]) * 100 for r in rows)
print(f"samples/s alone {alone:.0f}, watched {watched:.0f} (medians of {len(rows)}): "
      f"watched/alone {watched / alone:.3f}")
print(f"watch's CPU: {cpu:.2f} ms a sample of {rows[0][6]} processes, {share:.2f} % of one core")
PY
