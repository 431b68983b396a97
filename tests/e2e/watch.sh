#!/usr/bin/env bash
# dsbench watch and dsbench probe on real processes (docs/watch.md): a leaking and a flat Python
# process, a job's exit code, Ctrl-C over a tree whose workers ignore SIGINT, a --pid that exits
# mid-watch, dsbench replay's epoch markers, the baseline alone, and the bad inputs (exit 2).
source "$(dirname "$0")/lib.sh"
: "${DSBENCH:?set DSBENCH to the dsbench binary}"
HERE="$SRC_DIR/tests/e2e/watch"

# The leak and the flat process, watched at once (10 s at 0.5 s; 6 s): the leak is found with
# its rate within 20 % of the true 10 MiB/s, the flat one gets no verdict.
"$DSBENCH" watch --interval 0.5s --log leak.jsonl --json -- "$PY" "$HERE/leak.py" 10 \
  > leak.json 2> leak.err &
leak=$!
"$DSBENCH" watch --interval 0.5s --log flat.jsonl -- "$PY" "$HERE/flat.py" 6 2> flat.err &
flat=$!
wait $leak || { cat leak.err; fail "watch of the leak: exit $?"; }
wait $flat || { cat flat.err; fail "watch of the flat process: exit $?"; }
"$PY" - <<'EOF'
import json
true_rate = (1 << 20) / 0.1 * 3600  # bytes per hour
r = json.load(open("leak.json"))
leaks = [v for v in r["verdicts"] if v["kind"] == "memory.leak"]
assert leaks, r["verdicts"]
for v in leaks:
    rate = v["evidence"]["slope_bytes_per_hour"]
    assert abs(rate - true_rate) <= 0.2 * true_rate, (rate, true_rate)
    lo, hi = v["evidence"]["ci95_bytes_per_hour"]
    assert lo > 0 and lo <= rate <= hi and v["evidence"]["samples"] >= 10, v
assert any("runs out in" in v["text"] for v in leaks)
assert r["exit_status"] == 0 and r["samples"] >= 18, r["samples"]
lines = [json.loads(l) for l in open("leak.jsonl")]
assert lines[0]["type"] == "baseline" and lines[-1]["type"] == "report", lines[-1]["type"]
samples = [l for l in lines if l["type"] == "sample"]
assert len(samples) == r["samples"]
p = samples[len(samples) // 2]["processes"][0]
assert "pss" in samples[0]["processes"][0]  # every 10th sample, the first
for k in ("rss", "vm_peak", "majflt", "cpu_seconds", "state", "read_bytes", "write_bytes"):
    assert k in p, k
for k in ("mem_available", "swap_free", "dirty", "writeback", "psi"):
    assert k in samples[0]["system"], k
assert "memory" in lines[0]["probe"] and "mem_available" in lines[0]["system"]
f = json.loads(open("flat.jsonl").readlines()[-1])["report"]
assert not [v for v in f["verdicts"] if v["kind"] == "memory.leak"], f["verdicts"]
assert f["job_memory_peak"] >= 50 << 20, f["job_memory_peak"]
EOF
grep -q "^dsbench watch: .* exit 0" flat.err || { cat flat.err; fail "no text report (flat)"; }
grep -q "verdict memory.leak" flat.err && { cat flat.err; fail "a leak verdict for a flat process"; }
pass "a leak of 10 MiB/s is found at its rate (within 20 %), with a 95 % interval; a flat process is not"

expect_exit 7 "$DSBENCH" watch --interval 1s -- sh -c 'exit 7'
grep -q "exit 7" "$WORK/last.err" || fail "the report lacks the exit status"
expect_exit 137 "$DSBENCH" watch --interval 1s -- sh -c 'kill -9 $$'
pass "the command's exit code passes through (128+N for a signal)"

# Ctrl-C (SIGINT to watch): the final report, and no process left behind, even workers that
# ignore SIGINT.
"$DSBENCH" watch --interval 0.2s --log ctrlc.jsonl -- "$PY" "$HERE/tree.py" pids 2> ctrlc.err &
w=$!
for _ in $(seq 100); do [ -s pids ] && break; sleep 0.05; done
[ -s pids ] || fail "the watched tree did not start"
sleep 0.5
kill -INT $w
set +e
wait $w
rc=$?
set -e
[ $rc -eq 130 ] || { cat ctrlc.err; fail "watch after SIGINT: exit $rc, want 130 (the job's)"; }
for p in $(cat pids); do
  kill -0 "$p" 2>/dev/null && fail "process $p left behind after Ctrl-C"
done
"$PY" - <<'EOF'
import json
r = json.loads(open("ctrlc.jsonl").readlines()[-1])["report"]
assert r["stopped"] and r["max_processes"] == 3 and r["exit_status"] == 130, r
assert any("SIGTERM" in n for n in r["notes"]), r["notes"]
EOF
grep -q "stopped (SIGINT/SIGTERM)" ctrlc.err || { cat ctrlc.err; fail "no final report"; }
pass "Ctrl-C: a final report, the job's exit code, its workers (which ignore SIGINT) ended"

# --pid of a process that exits mid-watch: a clean report, exit 0; the process is not signalled.
"$PY" -c 'import time; time.sleep(2)' &
p=$!
"$DSBENCH" watch --pid $p --interval 0.25s --json > pid.json 2> pid.err ||
  { cat pid.err; fail "watch --pid: exit $?"; }
wait $p || fail "the watched process did not end normally: exit $?"
"$PY" - <<'EOF'
import json
r = json.load(open("pid.json"))
assert "exit_status" not in r and not r["stopped"] and r["samples"] >= 4 and r["max_processes"] == 1, r
EOF
pass "--pid: the process exits mid-watch, the report is clean, exit 0"

# An MPI job on this node: mpirun's ranks are below it, so watch sees them.
if command -v mpirun >/dev/null; then
  "$DSBENCH" watch --interval 0.2s --json --output mpi.json -- timeout -k 10 60 \
    mpirun --allow-run-as-root --oversubscribe -n 2 "$PY" -c 'import time; time.sleep(2)' \
    2> mpi.err || { cat mpi.err; fail "watch of an mpirun job: exit $?"; }
  "$PY" - <<'EOF'
import json
r = json.load(open("mpi.json"))
ranks = [p for p in r["processes"] if p["comm"].startswith("python")]
assert len(ranks) == 2 and r["exit_status"] == 0, r["processes"]
EOF
  pass "the ranks of an mpirun job on this node are watched"
fi

# dsbench replay marks its epochs: the per-epoch table, with samples, bytes and data wait.
"$DSPACK" synth imagenet-like tree --samples 200 --seed 3 -q
"$DSPACK" convert tree ds --label-from-dir -q
"$DSBENCH" watch --interval 0.2s --json --output replay.json -- "$DSBENCH" replay ds --epochs 2 \
  --workers 2 --step-time 50ms --cache warm > replay.out 2> replay.err || { cat replay.err; fail "watch replay"; }
"$PY" - <<'EOF'
import json
r = json.load(open("replay.json"))
e = r["epochs"]
assert [x["epoch"] for x in e] == [1, 2], e
for x in e:
    assert x["samples"] == 200 and x["bytes"] > 0 and x["seconds"] > 0, x
    assert 0 <= x["data_wait_share"] <= 1 and x["markers"] == 1, x
EOF
grep -q "epoch 2" replay.out || fail "replay's own report did not reach stdout"
pass "dsbench replay marks its epochs: samples, bytes, data wait per epoch"

# dsbench probe --log: the baseline alone, as JSON, written whole.
"$DSBENCH" probe . --log base.json
"$PY" -c '
import json; b = json.load(open("base.json"))
assert b["type"] == "baseline" and b["system"]["mem_total"] > 0 and b["probe"]["path"] == "."
'
pass "probe --log writes the baseline"

# Bad input: one line each, exit 2.
expect_exit 2 "$DSBENCH" watch --pid 999999999
expect_err "--pid 999999999: no such process"
expect_exit 2 "$DSBENCH" watch --log /nonexistent-dir/w.jsonl -- true
expect_err "--log /nonexistent-dir/w.jsonl: cannot open for writing"
expect_exit 2 "$DSBENCH" watch --interval 0 -- true
expect_err "--interval must be above 0"
expect_exit 2 "$DSBENCH" watch
expect_err "give the command to run (after --) or a --pid to watch"
expect_exit 2 "$DSBENCH" watch -- /nonexistent/cmd
expect_err "cannot run \`/nonexistent/cmd\`"
expect_exit 2 "$DSBENCH" watch --output /nonexistent-dir/r.json -- true
expect_err "--output /nonexistent-dir/r.json: its directory cannot be written"
expect_exit 2 "$DSBENCH" probe --log /nonexistent-dir/b.json
for f in "$WORK"/last.err; do [ "$(wc -l < "$f")" -eq 1 ] || fail "not one line: $(cat "$f")"; done
pass "bad input: a PID that does not exist, an unwritable log, --interval 0, no command: exit 2"
