#!/usr/bin/env bash
# N5 of the NFS issue (docs/nfs.md): the Python reader in a training job's loader through the
# fixture's delay line (nfs-ganesha in a network namespace, tests/e2e/nfs_fixture.sh; DELAY_US
# each way) against the same job on a local copy, once the first epoch is cached (the server's
# page cache for nfs://, the client's for the local copy): torch's DataLoader (4 workers, batch
# 32, shuffled) over dspack.torch.MapDataset of the native dataset, one sample per read and
# batch_reads=True (a batch is one read_batch), the second epoch of each run, medians of ROUNDS
# interleaved (tools/peers/torch_loader.py's children). Goal: nfs:// within 20 % of local.
#   tools/peers/nfs_torch.sh [SAMPLES=2000] [ROUNDS=3] [DELAY_US=500]
# Needs root (namespaces), nfs-ganesha, python3-torch, and a built build/ (dspack, the Python
# package in build/python, DELAY_LINE).
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-2000}
ROUNDS=${2:-3}
DELAY=${3:-500}
DSPACK=${DSPACK:-$PWD/build/pack/dspack}
DELAY_LINE=${DELAY_LINE:-$PWD/build/tests/dspack-delay-line}
PYPATH=${DSPACK_PYTHONPATH:-$PWD/build/python}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dspack-nfs-torch-XXXXXX")
source tests/e2e/nfs_fixture.sh
trap 'nfs_stop; rm -rf "$WORK"' EXIT
nfs_start
"$DSPACK" synth imagenet-like "$WORK/tree" --samples "$N" --seed 1 -q
"$DSPACK" convert "$WORK/tree" "$NFS_EXPORT_DIR/ds" --label-from-dir -q
cp -r "$NFS_EXPORT_DIR/ds" "$WORK/local-ds"
U=$NFS_URL
if [ "$DELAY" -gt 0 ]; then nfs_delay "$DELAY"; U=$NFS_DELAYED_URL; fi
results=$WORK/results.txt
: >"$results"
for round in $(seq "$ROUNDS"); do
  for kind in dl-map dl-map-batched; do
    for where in local nfs; do
      path=$WORK/local-ds
      [ "$where" = nfs ] && path=$U/ds
      nfs_client env PYTHONPATH="$PYPATH" /usr/bin/python3 tools/peers/torch_loader.py --child \
        "{\"kind\": \"$kind\", \"path\": \"$path\", \"warm\": true}" >"$WORK/out.json" \
        2>"$WORK/err.txt" || { cat "$WORK/err.txt"; exit 1; }
      echo "$kind $where $(tail -1 "$WORK/out.json")" >>"$results"
    done
  done
done
/usr/bin/python3 - "$results" "$N" "$ROUNDS" "$DELAY" <<'PY'
import json, statistics, sys
rows = [l.split(" ", 2) for l in open(sys.argv[1])]
print(f"nfs-ganesha 4.3 (VFS), libnfs NFSv3, delay {sys.argv[4]} us each way; {sys.argv[2]} "
      f"ImageNet-like samples, native; DataLoader(4 workers, batch 32), 2nd epoch; medians of "
      f"{sys.argv[3]}, interleaved")
for kind, label in (("dl-map", "MapDataset"), ("dl-map-batched", "MapDataset(batch_reads)")):
    rate = {w: statistics.median(json.loads(r[2])["samples"] / json.loads(r[2])["seconds"]
                                 for r in rows if r[0] == kind and r[1] == w)
            for w in ("local", "nfs")}
    print(f"{label:<24} local {rate['local']:>8.0f} samples/s  nfs:// {rate['nfs']:>8.0f} "
          f"samples/s  nfs/local {rate['nfs'] / rate['local']:.3f}")
PY
