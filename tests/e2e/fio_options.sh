#!/usr/bin/env bash
# dsbench io's fio options beyond the first set (issue 16 #1), each beside a real fio 3.33 run of
# the same job where fio can run it here: nrfiles/filesize/file_service_type (fio's file names
# and sizes, IO counts), bsrange/bssplit/random_distribution (job options echoed as fio echoes
# them), lat_percentiles and gtod_reduce (the JSON fio writes), verify=crc32c|md5, fallocate,
# hipri, --eta and --status-interval, trim/randtrim on a loop device; and the bad inputs of each:
# exit 2 naming the option.
source "$(dirname "$0")/lib.sh"
DSBENCH=${DSBENCH:?set DSBENCH}
command -v fio >/dev/null || fail "fio is not installed (scripts/deps.sh installs it)"
mkdir fd dd
jq() { $PY -c "import json,sys; d=json.load(open(sys.argv[1]))
for k in sys.argv[2].split('/'): d=d[int(k)] if k.isdigit() else d[k]
print(d)" "$@"; }

# --- nrfiles: fio's NAME.N.F files, size split over them (or filesize each), the same IOs
cat > nf.fio <<EOF
[global]
rw=randread
bs=4k
ioengine=psync
unlink=0

[split]
size=1M
nrfiles=4
file_service_type=random

[each]
filesize=128k
nrfiles=3
file_service_type=sequential
EOF
fio nf.fio --directory="$WORK/fd" --output-format=json --output=fio.json >/dev/null || fail "fio nrfiles"
"$DSBENCH" io nf.fio --directory="$WORK/dd" --output-format=json --output=ds.json || fail "dsbench nrfiles"
(cd fd && stat -c '%n %s' * | sort) >fio.files
(cd dd && stat -c '%n %s' * | sort) >ds.files
cmp fio.files ds.files || { diff fio.files ds.files; fail "nrfiles: files differ from fio's"; }
grep -q "^split.0.3 262144$" ds.files && grep -q "^each.0.2 131072$" ds.files || fail "sizes: $(cat ds.files)"
$PY - fio.json ds.json <<'PY' || fail "nrfiles: not fio's IO counts or options"
import json, sys
f, d = (json.load(open(p)) for p in sys.argv[1:])
for a, b in zip(d["jobs"], f["jobs"]):
    assert a["read"]["total_ios"] == b["read"]["total_ios"], (a["jobname"], a["read"]["total_ios"])
    assert a["job options"] == b["job options"], (a["job options"], b["job options"])
g = dict(d["global options"]); g.pop("directory"); h = dict(f["global options"]); h.pop("directory")
assert g == h, (g, h)
PY
pass "nrfiles: fio's file names and sizes (size split, or filesize each), fio's IO counts, file_service_type"

# --- bsrange, bssplit, random_distribution: fio runs the same job; we echo what it echoes
cat > mix.fio <<EOF
[global]
directory=$WORK/dd
size=4M
ioengine=psync

[range]
rw=read
bsrange=4k-64k

[split]
rw=randread
bssplit=4k/50:64k/30:1m
random_distribution=zipf:1.2

[skew]
rw=randread
bs=4k
random_distribution=pareto:0.9
EOF
fio mix.fio --output-format=json --output=fio2.json >/dev/null || fail "fio mix.fio"
"$DSBENCH" io mix.fio --output-format=json --output=ds2.json || fail "dsbench mix.fio"
$PY - fio2.json ds2.json <<'PY' || fail "mix.fio"
import json, sys
f, d = (json.load(open(p))["jobs"] for p in sys.argv[1:])
for a, b in zip(d, f):
    assert a["job options"] == b["job options"], (a["job options"], b["job options"])
rd = d[0]["read"]
assert 4 << 20 <= rd["io_bytes"] < (4 << 20) + (64 << 10), rd["io_bytes"]
assert rd["total_ios"] > 4 * 1024 * 1024 // (64 << 10), rd["total_ios"]  # smaller IOs than 64k
assert d[2]["read"]["total_ios"] == f[2]["read"]["total_ios"] == 1024
PY
pass "bsrange, bssplit, random_distribution=zipf/pareto: fio's job options, sizes in range"

# --- lat_percentiles and gtod_reduce: the JSON fio writes for them
for opt in lat_percentiles gtod_reduce; do
  fio --name=l --directory="$WORK/fd" --size=1M --rw=randread --bs=4k --$opt=1 \
    --output-format=json+ --output=f.$opt >/dev/null || fail "fio $opt"
  "$DSBENCH" io --name=l --directory="$WORK/dd" --size=1M --rw=randread --bs=4k --$opt=1 \
    --output-format=json+ --output=d.$opt || fail "dsbench $opt"
done
$PY - <<'PY' || fail "lat_percentiles / gtod_reduce JSON"
import json
f, d = (json.load(open(p))["jobs"][0]["read"] for p in ("f.lat_percentiles", "d.lat_percentiles"))
assert "percentile" in f["lat_ns"] and "percentile" in d["lat_ns"], d["lat_ns"].keys()
# fio's key order too (numeric, not the text order "1.0, 10.0, ..., 5.0"), as clat's and bins
for k in ("clat_ns", "lat_ns"):
    assert list(f[k]["percentile"]) == list(d[k]["percentile"]), (k, list(d[k]["percentile"]))
    assert [float(x) for x in d[k]["bins"]] == sorted(float(x) for x in d[k]["bins"]), k
f, d = (json.load(open(p))["jobs"][0]["read"] for p in ("f.gtod_reduce", "d.gtod_reduce"))
for r in (f, d):
    assert r["clat_ns"]["N"] == r["lat_ns"]["N"] == 0 and r["bw_samples"] == 0, r
    assert r["total_ios"] == 256 and r["iops"] > 0, r
PY
pass "lat_percentiles: lat_ns percentiles in fio's keys; gtod_reduce: no latencies or samples, totals kept (as fio)"

# --- verify: what a write job wrote is read back and checked
for v in crc32c md5; do
  expect_exit 0 "$DSBENCH" io dd --name=v$v --rw=randwrite --bs=4k --size=2M --verify=$v --numjobs=2
  grep -q "verify ($v): [0-9]* blocks written were read back and checked: OK" last.out ||
    { cat last.out; fail "verify=$v said nothing"; }
done
expect_exit 0 "$DSBENCH" io dd --name=vd --rw=write --bs=64k --size=2M --verify=crc32c --direct=1
grep -q "verify (crc32c): 32 blocks" last.out || fail "direct verify: $(grep verify last.out)"
fio --name=v --directory="$WORK/fd" --rw=randwrite --bs=4k --size=2M --verify=crc32c >/dev/null ||
  fail "fio verify=crc32c (the peer) failed"
expect_exit 2 "$DSBENCH" io dd --name=vr --rw=read --size=1M --verify=md5
expect_err "verify checks the blocks a job writes"
expect_exit 2 "$DSBENCH" io dd --name=vb --rw=write --size=1M --bsrange=4k-8k --verify=md5
expect_err "verify needs one block size"
expect_exit 2 "$DSBENCH" io dd --name=vx --rw=write --size=1M --verify=sha512
expect_err "--verify=sha512: choose crc32c or md5"
pass "verify=crc32c|md5 reads back every block written (buffered and direct); read jobs, mixed sizes and other checksums refused"

# --- fallocate, hipri
for m in none posix keep native truncate; do
  expect_exit 0 "$DSBENCH" io dd --name=fa$m --rw=read --size=1M --fallocate=$m --keep
  [ "$(stat -c %s dd/fa$m.0.0)" = 1048576 ] || fail "fallocate=$m: size $(stat -c %s dd/fa$m.0.0)"
done
expect_exit 2 "$DSBENCH" io dd --name=fb --rw=read --size=1M --fallocate=sometimes
expect_err "--fallocate=sometimes: choose none, posix, keep, native or truncate"
expect_exit 2 "$DSBENCH" io dd --name=hp --rw=randread --size=1M --hipri
expect_err "hipri (polled completions) is an io_uring option here"
set +e
"$DSBENCH" io dd --name=hu --rw=randread --size=1M --ioengine=io_uring --hipri --direct=1 \
  --runtime=1 >hu.out 2>hu.err
rc=$?
set -e
# This virtio disk has no poll queues: fio fails with EOPNOTSUPP, and so must we, saying why.
if [ "$rc" != 0 ]; then
  grep -q "hipri: this device or file system cannot poll" hu.err || { cat hu.err; fail "hipri error"; }
  [ "$(wc -l <hu.err)" = 1 ] || fail "hipri: not one line: $(cat hu.err)"
fi
pass "fallocate modes lay out whole files; hipri off io_uring refused; hipri where polling fails: one line saying why (rc $rc)"

# --- nrfiles, file_service_type refusals
expect_exit 2 "$DSBENCH" io --name=nf --filename="$WORK/one" --size=1M --nrfiles=2
expect_err "nrfiles=2 makes the files nf.N.F in a directory"
expect_exit 2 "$DSBENCH" io dd --name=fs --size=1M --nrfiles=2 --file_service_type=zipf
expect_err "--file_service_type=zipf: choose roundrobin, random or sequential"
[ -e "$WORK/one" ] && fail "a refused run created its file"
pass "nrfiles with one file, and fio's file choices we do not have: exit 2 naming the option"

# --- --eta and --status-interval
expect_exit 0 "$DSBENCH" io dd --name=e --rw=randread --size=1M --runtime=1.3 --time_based \
  --eta=always --status-interval=0.5
[ "$(grep -c '^Jobs: 1: \[' last.err)" -ge 1 ] || { cat last.err; fail "--eta=always printed no line"; }
[ "$(grep -c '^status at ' last.out)" -ge 2 ] || { cat last.out; fail "--status-interval: no reports"; }
grep -q "^  e.0: .* so far; .* IOPS over the last" last.out || fail "status report: $(cat last.out)"
grep -q $'\033' last.err last.out && fail "terminal escapes off a terminal"
expect_exit 0 "$DSBENCH" io dd --name=e --rw=randread --size=1M --runtime=0.6 --time_based --eta=never
grep -q '^Jobs:' last.err && fail "--eta=never printed the line"
expect_exit 2 "$DSBENCH" io dd --name=e --size=1M --status-interval=1 --output-format=json
expect_err "--status-interval prints text reports on stdout"
expect_exit 2 "$DSBENCH" io dd --name=e --size=1M --eta=sometimes
expect_err "--eta=sometimes: choose auto, always or never"
pass "--eta=always|never and --status-interval reports (text, not into a JSON stdout)"

# --- trim and randtrim: BLKDISCARD on a block device (a loop device over a file here: its
# discards punch holes in the file), beside fio; a regular file is refused as fio fails on it.
expect_exit 2 "$DSBENCH" io dd --name=tr --size=1M --rw=randtrim
expect_err "not a block device; rw=randtrim discards blocks with BLKDISCARD"
[ -e dd/tr.0.0 ] && fail "a refused trim left its file"
truncate -s 16M loop.img
if loop=$(losetup -f --show loop.img 2>/dev/null); then
  trap 'losetup -d "$loop" 2>/dev/null || true; cleanup' EXIT
  dd if=/dev/urandom of="$loop" bs=1M count=8 oflag=direct status=none
  before=$(du -k loop.img | cut -f1)
  "$DSBENCH" io --name=t --filename="$loop" --size=8M --rw=trim --bs=64k --allow-device \
    --output-format=json >dt.json || fail "dsbench trim"
  after=$(du -k loop.img | cut -f1)
  [ "$after" -lt "$before" ] || fail "trim discarded nothing: ${before}k -> ${after}k allocated"
  fio --name=t --filename="$loop" --size=8M --rw=randtrim --bs=64k --output-format=json \
    --output=ft.json >/dev/null || fail "fio randtrim"
  "$DSBENCH" io --name=t --filename="$loop" --size=8M --rw=randtrim --bs=64k --allow-device \
    --output-format=json >drt.json || fail "dsbench randtrim"
  $PY - ft.json drt.json dt.json <<'PY' || fail "trim JSON"
import json, sys
f, d, seq = (json.load(open(p))["jobs"][0]["trim"] for p in sys.argv[1:])
assert f["total_ios"] == d["total_ios"] == seq["total_ios"] == 128, (f["total_ios"], d["total_ios"])
assert d["io_bytes"] == 8 << 20 and d["clat_ns"]["N"] == 128 and d["bw"] > 0, d
PY
  expect_exit 2 "$DSBENCH" io --name=t --filename="$loop" --size=8M --rw=trim
  expect_err "a block device; dsbench refuses to touch one unless --allow-device"
  pass "trim/randtrim: BLKDISCARD on a block device (the loop file's blocks freed), fio's trim counts"
else
  echo "note - no loop device here (losetup failed): trim on a block device not exercised"
fi
