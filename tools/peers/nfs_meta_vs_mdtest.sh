#!/usr/bin/env bash
# N2 of the NFS issue (docs/nfs.md): `dsbench meta nfs://…` against mdtest's LIBNFS backend, both
# through libnfs to the same export of the fixture's real server (nfs-ganesha in a network
# namespace, tests/e2e/nfs_fixture.sh), one process, one thread, FILES empty files in one
# directory (mdtest -F -u -n FILES, its default -w 0 -e 0; dsbench --file-size 0), phases create,
# stat, read (open + close), remove; interleaved ROUNDS times, optionally through the delay line
# (DELAY_US each way; 0: the plain veth link). Prints the median ops/s of each per phase, the
# ratio dsbench/mdtest (goal: within +-10 %), and dsbench's RPC bill per file of each phase.
#   tools/peers/nfs_meta_vs_mdtest.sh [FILES=1000] [ROUNDS=5] [DELAY_US=0]
# mdtest is built from ../shared/peers' IOR archive with `./configure --with-libnfs` (IOR's
# build-ior.sh leaves the LIBNFS backend out) into IOR_NFS_DIR (default /work/peers-bin-libnfs).
# Needs root (namespaces), nfs-ganesha, libnfs-dev, and a built build/ (DSBENCH, DELAY_LINE).
set -euo pipefail
cd "$(dirname "$0")/../.."
FILES=${1:-1000}
ROUNDS=${2:-5}
DELAY=${3:-0}
DSBENCH=${DSBENCH:-$PWD/build/bench/dsbench}
DELAY_LINE=${DELAY_LINE:-$PWD/build/tests/dspack-delay-line}
IOR_NFS_DIR=${IOR_NFS_DIR:-/work/peers-bin-libnfs}
if [ ! -x "$IOR_NFS_DIR/mdtest" ]; then
  src=$(mktemp -d)
  tar -xzf ../shared/peers/ior-*.tar.gz -C "$src"
  mkdir -p "$IOR_NFS_DIR"
  (cd "$src/ior" && ./bootstrap && ./configure --with-libnfs && make -j2) >"$IOR_NFS_DIR/build.log" 2>&1 ||
    { echo "mdtest (LIBNFS) build failed: see $IOR_NFS_DIR/build.log" >&2; exit 1; }
  cp "$src/ior/src/mdtest" "$IOR_NFS_DIR/"
  rm -rf "$src"
fi
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dspack-nfs-meta-XXXXXX")
source tests/e2e/nfs_fixture.sh
trap 'nfs_stop; rm -rf "$WORK"' EXIT
nfs_start
U=$NFS_URL
if [ "$DELAY" -gt 0 ]; then nfs_delay "$DELAY"; U=$NFS_DELAYED_URL; fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
results=$WORK/results.txt
: >"$results"
for round in $(seq "$ROUNDS"); do
  # mdtest's URL names a directory with a trailing slash (it splits the URL with
  # nfs_parse_url_full); -d is a path inside the export.
  nfs_client "$IOR_NFS_DIR/mdtest" -a LIBNFS --libnfs.url="$U/" -n "$FILES" -d /md -F -u \
    >"$WORK/mdtest.log" 2>&1 || { cat "$WORK/mdtest.log"; exit 1; }
  awk '/File creation/ {print "mdtest create", $3} /File stat/ {print "mdtest stat", $3}
       /File read/ {print "mdtest read", $3} /File removal/ {print "mdtest remove", $3}' \
    "$WORK/mdtest.log" >>"$results"
  rm -rf "$NFS_EXPORT_DIR/md"
  nfs_client "$DSBENCH" meta "$U" --threads 1 --files "$FILES" --files-per-dir "$FILES" \
    --file-size 0 --phases create,stat,read,remove --output-format json >"$WORK/ds-$round.json"
  /usr/bin/python3 -c '
import json, sys
for p in json.load(open(sys.argv[1]))["meta"]["phases"]:
    print("dsbench", p["name"], p["ops_per_sec"])' "$WORK/ds-$round.json" >>"$results"
done
/usr/bin/python3 - "$results" "$WORK/ds-$ROUNDS.json" "$FILES" "$ROUNDS" "$DELAY" <<'PY'
import json, statistics, sys
rows = [l.split() for l in open(sys.argv[1])]
bills = {p["name"]: p["rpc_bill"] for p in json.load(open(sys.argv[2]))["meta"]["phases"]}
print(f"nfs-ganesha 4.3 (VFS), libnfs NFSv3, delay {sys.argv[5]} us each way; {sys.argv[3]} empty "
      f"files, 1 process; medians of {sys.argv[4]}, interleaved")
for phase in ("create", "stat", "read", "remove"):
    med = {t: statistics.median(float(r[2]) for r in rows if r[0] == t and r[1] == phase)
           for t in ("mdtest", "dsbench")}
    ops = bills[phase]["ops"]
    bill = " + ".join(f"{o['per_file']:.2f} {n}" for n, o in
                      sorted(ops.items(), key=lambda kv: -kv[1]["count"]))
    print(f"{phase:<7} mdtest {med['mdtest']:>8.0f} ops/s  dsbench {med['dsbench']:>8.0f} ops/s  "
          f"ratio {med['dsbench'] / med['mdtest']:.3f}   dsbench RPCs per file: {bill}")
PY
