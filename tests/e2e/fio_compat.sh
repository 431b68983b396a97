#!/usr/bin/env bash
# dsbench io speaks fio (issue 16 #1): a fio job file runs as is; fio's own runbook command runs
# unchanged; the JSON has every key path a real fio 3.33 run of the same job file has (json and
# json+); fio's fio_jsonplus_clat2csv reads our json+; a job file is never a test target; an
# option we do not support is refused by name (exit 2); time_based without runtime is refused.
source "$(dirname "$0")/lib.sh"
DSBENCH=${DSBENCH:?set DSBENCH}
command -v fio >/dev/null || fail "fio is not installed (scripts/deps.sh installs it)"
mkdir d
cat > job.fio <<EOF
; three groups, as a runbook writes them
[global]
directory=$WORK/d
size=4M
bs=4k
# psync unless a job says otherwise
ioengine=psync

[seqread]
rw=read
numjobs=2

[randrw]
stonewall
rw=randrw
rwmixread=70
ioengine=io_uring
iodepth=4

[seqwrite]
new_group
rw=write
fsync=64
EOF
cp job.fio job.orig
for fmt in json json+; do
  rm -f d/*  # fio's files: dsbench writes only to files it laid out (or --allow-overwrite)
  "$DSBENCH" io job.fio --output-format="$fmt" --output="ds.$fmt" || fail "dsbench io job.fio"
  fio job.fio --output-format="$fmt" --output="fio.$fmt" > /dev/null || fail "fio $fmt"
  $PY - "fio.$fmt" "ds.$fmt" <<'PY' || fail "$fmt: key paths differ from fio's"
import json, sys

def paths(o, p=""):
    if isinstance(o, dict):
        for k, v in o.items():
            if k in ("percentile", "bins"):  # keys are values (percentiles, bucket ns)
                yield p + "/" + k
            else:
                yield from paths(v, p + "/" + k)
    elif isinstance(o, list):
        for x in o:
            yield from paths(x, p + "/[]")
    else:
        yield p

fio, ds = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
missing = sorted(set(paths(fio)) - set(paths(ds)))
assert not missing, f"{len(missing)} fio key paths missing: {missing[:20]}"
# The same jobs, groups and IO counts (fio's and ours do the same work on the same sizes).
assert [(j["jobname"], j["groupid"]) for j in ds["jobs"]] == \
       [(j["jobname"], j["groupid"]) for j in fio["jobs"]], (ds["jobs"], fio["jobs"])
for a, b in zip(ds["jobs"], fio["jobs"]):
    ios = lambda j: j["read"]["total_ios"] + j["write"]["total_ios"]
    assert ios(a) == ios(b) == 1024, (a["jobname"], ios(a), ios(b))
    assert a["job options"] == b["job options"], (a["job options"], b["job options"])
    if a["jobname"] == "seqwrite":  # 1024 writes: an fsync after each 64th but the last
        assert a["sync"]["total_ios"] == b["sync"]["total_ios"] == 15, (a["sync"], b["sync"])
assert ds["global options"] == fio["global options"]
if sys.argv[2].endswith("+"):
    assert all(ds["jobs"][0]["read"]["clat_ns"]["bins"].values())
PY
done
cmp job.fio job.orig || fail "running job.fio changed it"
[ "$(ls d | sort | tr '\n' ' ')" = "randrw.0.0 seqread.0.0 seqread.1.0 seqwrite.0.0 " ] ||
  fail "fio's file names, fio's run leaves them: $(ls d)"
pass "a fio job file ([global], sections, stonewall, new_group, comments): every fio 3.33 key path (json, json+), same jobs, groups, IOs, job options and fsyncs"

# terse v3: the same number of fields per line as fio's, each of the same kind, in order.
rm -f d/*
"$DSBENCH" io job.fio --output-format=terse --output=ds.terse || fail "dsbench terse"
fio job.fio --output-format=terse --output=fio.terse > /dev/null || fail "fio terse"
rm -f d/*
$PY - fio.terse ds.terse <<'PY' || fail "terse differs from fio's"
import re, sys
def kind(x):
    for k, p in (("int", r"-?\d+"), ("float", r"-?\d+\.\d+"), ("pct", r"-?[\d.]+%"),
                 ("pctl", r"[\d.]+%=\d+")):
        if re.fullmatch(p, x):
            return k
    return "str"
f, d = ([l.split(";") for l in open(p).read().splitlines()] for p in sys.argv[1:])
assert len(f) == len(d) == 4, (len(f), len(d))
for a, b in zip(f, d):
    assert len(a) == len(b) and len(a) in (121, 130), (len(a), len(b))
    diff = [(i + 1, x, y) for i, (x, y) in enumerate(zip(a, b)) if kind(x) != kind(y)]
    assert not diff and a[2:4] == b[2:4], diff
PY
pass "terse v3: fio's fields, count and kinds, per job"

# fio's own tool reads our json+ (it once died with KeyError: 'trim').
$PY "$(command -v fio_jsonplus_clat2csv)" ds.json+ clat > clat.out || fail "fio_jsonplus_clat2csv"
for n in 0 1 2 3; do
  [ "$(wc -l < "clat_job$n")" -gt 2 ] || fail "clat_job$n: no latency rows"
done
grep -q "^nsec, read_slat_ns_count" clat_job0 || fail "clat_job0: not fio's CSV header"
pass "fio_jsonplus_clat2csv turns our json+ into a CSV per job"

# The runbook command, unchanged but for its size; --filename: one file shared by the 4 jobs,
# created by the run and kept (fio's default), then read again.
"$DSBENCH" io --name=seq_read --filename="$WORK/F" --rw=read --bs=1M --size=32M --direct=1 \
  --ioengine=libaio --numjobs=4 --runtime=30 --group_reporting --output-format=json > rb.json ||
  fail "the runbook command"
$PY -c 'import json; j=json.load(open("rb.json"))["jobs"]; assert len(j)==1 and j[0]["read"]["io_bytes"]==4*32<<20, j[0]["read"]' ||
  fail "runbook: 4 jobs x 32 MiB in one group"
pass "fio's runbook command (libaio, numjobs=4, group_reporting) runs as is"

# Command-line options override the files' (dsbench's rule; fio lets a section win) and the echo
# says what ran: the overridden key among the "global options", not the job's. Two job files run
# one after the other (fio stonewalls the first job of each later file). A section that gives no
# option has no "job options", as in fio.
mkdir jf
printf '[global]\ndirectory=%s/jf\nsize=1M\nbs=4k\n[j1]\nrw=read\n' "$WORK" > one.fio
printf '[k1]\ndirectory=%s/jf\nsize=1M\n' "$WORK" > two.fio
"$DSBENCH" io one.fio --rw=write --output-format=json > ov.json || fail "one.fio --rw=write"
"$DSBENCH" io one.fio two.fio --output-format=json > two.json || fail "two job files"
fio one.fio two.fio --output-format=json > fio-two.json 2> /dev/null || fail "fio, two job files"
rm -f jf/*
$PY - ov.json two.json fio-two.json <<'PY' || fail "overrides, echo, two job files"
import json, sys
ov, two, fio2 = (json.load(open(p)) for p in sys.argv[1:4])
j = ov["jobs"][0]
assert j["write"]["total_ios"] == 256 and j["read"]["total_ios"] == 0, (j["write"], j["read"])
assert ov["global options"]["rw"] == "write" and "rw" not in j.get("job options", {}), (ov["global options"], j.get("job options"))
groups = lambda d: [(x["jobname"], x["groupid"]) for x in d["jobs"]]
assert groups(two) == groups(fio2) == [("j1", 0), ("k1", 1)], (groups(two), groups(fio2))
k1 = [x for x in two["jobs"] if x["jobname"] == "k1"][0]
f1 = [x for x in fio2["jobs"] if x["jobname"] == "k1"][0]
assert ("job options" in k1) == ("job options" in f1), (k1.get("job options"), f1.get("job options"))
PY
pass "command-line overrides echoed as global options; two job files in two groups, as fio"

# A job file is never a target, whatever the options say (one was once overwritten).
expect_exit 0 "$DSBENCH" io job.fio --rw=write --size=1M
cmp job.fio job.orig || fail "dsbench io job.fio --rw write changed the job file"
printf '[x]\nrw=read\n' > plain.ini
cp plain.ini plain.orig
expect_exit 2 "$DSBENCH" io --filename=plain.ini --rw=write --size=1M --allow-overwrite
expect_err "a fio job file, never a test target"
expect_exit 2 "$DSBENCH" io plain.ini --rw=write --size=1M
cmp plain.ini plain.orig || fail "a file starting with '[' was written"
pass "a job file (.fio, or text starting with '[') is never written, even with --allow-overwrite"

before=$(ls d)
expect_exit 2 "$DSBENCH" io d --size=1M --verify_pattern=0xff
expect_err "'verify_pattern' is not an option dsbench io supports"
expect_exit 2 "$DSBENCH" io d --size=1M --bsrang=4k-8k
expect_err "'bsrang' is not an option dsbench io supports (\`dsbench io --help\` lists them); did you mean bsrange?"
printf '[global]\nsize=1M\n[j]\ndirectory=d\nexitall_on_error\n' > bad.fio
expect_exit 2 "$DSBENCH" io bad.fio
expect_err "bad.fio:5: 'exitall_on_error' is not an option"
expect_exit 2 timeout 10 "$DSBENCH" io d --size=1M --time_based
expect_err "job 'dsbench': --time_based needs --runtime (fio refuses it too), e.g. --runtime=30s"
expect_exit 2 "$DSBENCH" io d --size=1M --runtime=2parsecs
expect_err "--runtime=2parsecs"
expect_exit 2 "$DSBENCH" io no-such.fio
expect_err "no-such.fio: no such job file"
[ "$(ls d)" = "$before" ] || fail "a refused run left files: $(ls d)"
pass "unsupported options refused by name (command line and job file:line), time_based without runtime, bad units: exit 2, nothing written"

# fio's logs, read by fio's own plotting tools (they find gnuplot; run under Debian's python3).
mkdir logs
( cd logs
  "$DSBENCH" io "$WORK/d" --name=lg --rw=randrw --bs=4k --size=4M --runtime=1.2 --time_based \
    --write_bw_log --write_iops_log --write_lat_log=lg --log_avg_msec=200 --numjobs=2 > /dev/null ||
    exit 1
  for n in 1 2; do
    for kind in bw iops lat clat; do
      [ "$(wc -l < "lg_$kind.$n.log")" -ge 8 ] || { echo "lg_$kind.$n.log is short"; exit 1; }
    done
  done
  # fio's layout: "time_ms, value, ddir, bs, offset", ddir 0 and 1, times rising by ~200 ms.
  $PY - <<'PY' || exit 1
rows = [[int(x) for x in l.split(", ")] for l in open("lg_bw.1.log")]
assert all(len(r) == 5 and r[2] in (0, 1) and r[1] > 0 for r in rows), rows
times = sorted({r[0] for r in rows})
assert all(150 <= b - a <= 260 for a, b in zip(times, times[1:-1])), times
PY
  $PY "$(command -v fio2gnuplot)" -b -g > f2g.out 2>&1 || { cat f2g.out; exit 1; }
  ls ./*.png > /dev/null 2>&1 || { cat f2g.out; echo "fio2gnuplot made no image"; exit 1; }
  fio_generate_plots lg > fgp.out 2>&1 || { cat fgp.out; exit 1; }
  [ -s lg-bw.svg ] && [ -s lg-lat.svg ] || { ls; echo "fio_generate_plots made no svg"; exit 1; }
) || fail "fio's logs"
[ "$(ls d)" = "$before" ] || fail "the logged run left files: $(ls d)"
pass "write_bw_log/write_iops_log/write_lat_log with log_avg_msec: fio's log layout; fio2gnuplot and fio_generate_plots plot them"
