#!/usr/bin/env bash
# dsbench io: fio's option names and JSON layout (with disk_util from /proc/diskstats), a test
# file that is created and removed, and a clear exit-2 error for each bad input. (Parity with fio
# is measured by a bench script, not here.)
source "$(dirname "$0")/lib.sh"
DSBENCH=${DSBENCH:?set DSBENCH}
mkdir d
for engine in psync io_uring mmap; do
  "$DSBENCH" io d --rw randread --bs 4k --size 8M --runtime 0.5 --time_based --ioengine "$engine" \
    --iodepth 8 --output-format json > "$engine.json"
  $PY - "$engine.json" <<'PY'
import json, sys
d = json.load(open(sys.argv[1]))
r = d["jobs"][0]["read"]
assert r["io_bytes"] > 0 and r["bw_bytes"] > 0 and r["iops"] > 0, r
p = r["clat_ns"]["percentile"]
assert "99.000000" in p and "50.000000" in p and p["99.000000"] >= p["50.000000"] > 0, p
assert r["clat_ns"]["min"] <= r["clat_ns"]["mean"] <= r["clat_ns"]["max"]
assert d["jobs"][0]["write"]["io_bytes"] == 0
assert d["dsbench"]["probe"]["cores"] > 0
dev = d["dsbench"]["probe"]["block_device"]["name"]
if dev:
    du = d["disk_util"][0]
    assert du["name"] == dev and 0 <= du["util"] <= 100, du
    for k in ("read_ios", "write_ios", "read_merges", "write_merges", "read_ticks", "write_ticks",
              "in_queue"):
        assert isinstance(du[k], int) and du[k] >= 0, (k, du)
else:
    assert "disk_util" not in d
PY
  [ -z "$(ls d)" ] || fail "$engine: test file left behind: $(ls d)"
done
pass "io with psync, io_uring, mmap: fio JSON layout (read.io_bytes/bw_bytes/iops/clat_ns.percentile); test file removed"

"$DSBENCH" io d --rw randrw --bs 16k --size 4M --numjobs 3 --group_reporting --output-format json > rw.json
$PY -c 'import json; d=json.load(open("rw.json")); j=d["jobs"]; assert len(j)==1 and j[0]["read"]["io_bytes"]>0 and j[0]["write"]["io_bytes"]>0'
"$DSBENCH" io d --rw read --bs 1M --size 16M --keep > human.txt
grep -q "read: IOPS=" human.txt && grep -q "clat percentiles (usec)" human.txt || fail "human summary"
grep -Eq "^disk stats (\(.+\): util=[0-9.]+% r/s=|: n/a \(no block device behind PATH\))" human.txt ||
  { cat human.txt; fail "disk stats line"; }
[ -f d/dsbench.dsbench.0 ] || fail "--keep must keep the test file"
pass "randrw with --group_reporting; fio-like human summary with disk stats; --keep"

expect_exit 2 "$DSBENCH" io no/such/dir --size 1M
expect_err "no/such/dir"
expect_exit 2 "$DSBENCH" io d --size 1M --bs 2M
expect_err "larger than --size"
expect_exit 2 "$DSBENCH" io d --size 1M --bs 1000 --direct 1
expect_err "multiple of 512"
expect_exit 2 "$DSBENCH" io d --size 1M --ioengine libaio
expect_err "unknown ioengine"
expect_exit 2 "$DSBENCH" io d --size 1P
expect_err "not enough free space"
expect_exit 2 "$DSBENCH" io /dev/null --size 1M
pass "bad inputs: missing PATH, bs > size, unaligned direct bs, unknown engine, no space: exit 2"

if mkdir -p tmpfs && mount -t tmpfs -o size=64m tmpfs tmpfs 2>/dev/null; then
  MOUNTS+=("$WORK/tmpfs")
  if dd if=/dev/zero of=tmpfs/probe bs=4k count=1 oflag=direct status=none 2>/dev/null; then
    echo "note - this kernel's tmpfs accepts O_DIRECT (Linux >= 6.6): refusal case not testable here"
  else
    expect_exit 2 "$DSBENCH" io tmpfs --size 4M --direct 1
    expect_err "refuses O_DIRECT; use --direct=0"
    [ -z "$(ls tmpfs)" ] || fail "test file left on tmpfs after the error"
  fi
  rm -f tmpfs/probe
  "$DSBENCH" storage tmpfs --quick --direct 0 --size 16M --runtime 0.3 > verdict.txt || true
  grep -Eq "sequential 1 MiB read: .* (PASS|FAIL)" verdict.txt || { cat verdict.txt; fail "storage verdict"; }
  grep -q "disk stats: n/a (no block device behind PATH)" verdict.txt || fail "tmpfs: disk stats n/a"
  [ -z "$(ls tmpfs)" ] || fail "storage left its test file: $(ls tmpfs)"
  pass "O_DIRECT refusal explained where tmpfs refuses it; storage prints a verdict, disk stats n/a"
fi
