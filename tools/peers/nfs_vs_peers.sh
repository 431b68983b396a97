#!/usr/bin/env bash
# dspack over a real NFS server (docs/nfs.md): nfs-ganesha in a network namespace of its own
# (tests/e2e/nfs_fixture.sh), reached through a delay line of DELAY_US each way (default 500 us:
# 1 ms round trip). Medians of ROUNDS, the runs interleaved, in one invocation:
#   N3  dsbench replay --cache cold of the native dataset against the tree it was packed from:
#       samples/s, and the RPC bill of each (RPCs per sample, per NFS procedure). Map mode; each
#       layout read a sample at a time per worker (ImageFolder, MapDataset) and a batch at once
#       (--batch-reads 16: the tree by 16 threads per worker, the native dataset with 16 READs
#       in flight per worker through libnfs's async engine, as MapDataset(batch_reads=True));
#       and the native dataset streamed a batch at a time (a batch's neighbouring records are
#       one read of up to 8 MiB).
#   N4  dssync of the tree from nfs:// against nfs-cp of each file in a shell loop (what a node
#       without a mount has: one client process per file); dssync of the native shards against
#       the link's rate (nfs-cp of one 512 MiB file).
# The server's page cache is dropped before each run (the server is on this machine).
#   tools/peers/nfs_vs_peers.sh [SAMPLES=2000] [ROUNDS=3] [DELAY_US=500]
# REPLAY_ONLY=1 skips N4 (the dssync and nfs-cp runs).
# Needs root (namespaces, drop_caches), nfs-ganesha, libnfs-utils, and the built tools
# (override with DSPACK, DSSYNC, DSBENCH, DELAY_LINE).
set -euo pipefail
cd "$(dirname "$0")/../.."
N=${1:-2000}
ROUNDS=${2:-3}
DELAY=${3:-500}
REPLAY_ONLY=${REPLAY_ONLY:-0}
DSPACK=${DSPACK:-$PWD/build/pack/dspack}
DSSYNC=${DSSYNC:-$PWD/build/sync/dssync}
DSBENCH=${DSBENCH:-$PWD/build/bench/dsbench}
DELAY_LINE=${DELAY_LINE:-$PWD/build/tests/dspack-delay-line}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dspack-nfs-bench-XXXXXX")
fail() { echo "FAIL: $*" >&2; exit 1; }
source tests/e2e/nfs_fixture.sh
trap 'nfs_stop; rm -rf "$WORK"' EXIT
nfs_start
nfs_delay "$DELAY"
E=$NFS_EXPORT_DIR
U=$NFS_DELAYED_URL
"$DSPACK" synth imagenet-like "$E/tree" --samples "$N" --seed 1 -q
"$DSPACK" convert "$E/tree" "$E/ds" --label-from-dir -q
dd if=/dev/urandom of="$E/big.bin" bs=1M count=512 status=none
BYTES=$(du -sb --apparent-size "$E/tree" | cut -f1)
SBYTES=$(du -sb --apparent-size "$E/ds" | cut -f1)
(cd "$E/tree" && find . -type f | sort) >"$WORK/files.txt"
(cd "$E/tree" && find . -type d) >"$WORK/dirs.txt"

drop() { sync; echo 3 >/proc/sys/vm/drop_caches; }
results=$WORK/results.txt
: >"$results"
timed() {  # timed NAME CMD...: fresh output, server cache dropped
  local name=$1; shift
  rm -rf "$WORK/out"; drop
  local t0 ms
  t0=$(date +%s%N)
  "$@" >"$WORK/run.out" 2>"$WORK/run.err" || { cat "$WORK/run.err"; fail "$name failed"; }
  ms=$(( ($(date +%s%N) - t0) / 1000000 ))
  printf '%s %d.%03d 0\n' "$name" $((ms / 1000)) $((ms % 1000)) >>"$results"
}
nfs_cp_loop() {
  mkdir -p "$WORK/out"
  (cd "$WORK/out" && xargs mkdir -p <"$WORK/dirs.txt")
  while read -r f; do nfs-cp "$U/tree/${f#./}" "$WORK/out/${f#./}" >/dev/null; done <"$WORK/files.txt"
}
replay() {  # replay NAME LAYOUT ROUND BATCH_READS [MODE]
  drop
  nfs_client "$DSBENCH" replay "$U/$2" --epochs 1 --cache cold --batch-reads "$4" --mode "${5:-map}" \
    --output-format json >"$WORK/replay-$1-$3.json" 2>"$WORK/run.err" ||
    [ $? -eq 1 ] || { cat "$WORK/run.err"; fail "replay $1"; }
}
for r in $(seq 1 "$ROUNDS"); do
  replay tree tree "$r" 0
  replay tree-batch tree "$r" 16
  replay ds ds "$r" 0
  replay ds-batch ds "$r" 16
  replay ds-stream-batch ds "$r" 16 stream
  [ "$REPLAY_ONLY" = 1 ] && continue
  timed tree-dssync nfs_client "$DSSYNC" "$U/tree" "$WORK/out" -q
  timed tree-nfs-cp nfs_client bash -c "$(declare -f nfs_cp_loop); U='$U' WORK='$WORK' nfs_cp_loop"
  timed shards-dssync nfs_client "$DSSYNC" "$U/ds" "$WORK/out" -q
  timed link-nfs-cp nfs_client nfs-cp "$U/big.bin" "$WORK/out.big"
  rm -f "$WORK/out.big"
done
# The copies are checked once: dssync's staged tree equals the source.
[ "$REPLAY_ONLY" = 1 ] || rm -rf "$WORK/out"; nfs_client "$DSSYNC" "$U/tree" "$WORK/out" -q
[ "$REPLAY_ONLY" = 1 ] || diff -r -x '.dssync-*' "$E/tree" "$WORK/out" >/dev/null || fail "dssync's copy of the tree differs"

PYTHONPATH=tools/peers /usr/bin/python3 - "$WORK" "$results" "$N" "$BYTES" "$SBYTES" "$ROUNDS" "$DELAY" "$REPLAY_ONLY" <<'PY'
import sys
from runs import load, replay_table
work, path, n, b, sb, rounds, delay, replay_only = sys.argv[1:9]
n, b, sb, rounds = int(n), int(b), int(sb), int(rounds)
print(f"nfs-ganesha 4.3 (VFS) in a network namespace, libnfs NFSv3, a delay line of {delay} us each way;")
print(f"{n} ImageNet-like files ({b/1e6:.0f} MB); native dataset {sb/1e6:.0f} MB; medians of {rounds}, interleaved")
def rpcs(run):
    bill = run["epochs"][0].get("rpc_bill")
    if not bill:
        return ""
    ops = sorted(bill["ops"].items(), key=lambda kv: -kv[1]["count"])
    return ("RPCs/sample " + " + ".join(f"{o['per_sample']:.3f} {k}" for k, o in ops)
            + f" (READ p50 {bill['ops'].get('READ', {}).get('lat_ns', {}).get('p50', 0)/1e3:.0f} us)")
replay_table(work, rounds, (("tree", "tree, a file at a time (ImageFolder)"),
                            ("tree-batch", "tree, a batch by 16 threads per worker"),
                            ("ds", "native, a sample at a time (MapDataset)"),
                            ("ds-batch", "native, a batch at once (16 READs in flight)"),
                            ("ds-stream-batch", "native, streamed, a batch at once (runs)")),
             "", "N3 replay --cache cold, samples/s (ratio to the tree a file at a time):", rpcs)
if replay_only == "1":
    sys.exit(0)
med, _ = load(path)
link = 512 * 2**20 / med["link-nfs-cp"]
print(f"N4 dssync tree {med['tree-dssync']:.2f} s ({n/med['tree-dssync']:.0f} files/s), nfs-cp loop {med['tree-nfs-cp']:.2f} s: "
      f"dssync {med['tree-nfs-cp']/med['tree-dssync']:.1f}x")
print(f"   shards: dssync {sb/med['shards-dssync']/1e6:.0f} MB/s; the link (nfs-cp of 512 MiB) {link/1e6:.0f} MB/s: "
      f"{sb/med['shards-dssync']/link*100:.0f} % of it")
PY
