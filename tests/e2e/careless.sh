#!/usr/bin/env bash
# Issue 34 (nothing lost, round three): what a careless or hostile user found, each case a check
# that failed before its fix.
source "$(dirname "$0")/lib.sh"
: "${DSBENCH:?}" "${DSSYNC:?}"
mkdir -p src/c1 src/c2
for i in 1 2 3; do head -c 5000 /dev/urandom > "src/c1/$i.jpg"; head -c 3000 /dev/urandom > "src/c2/$i.jpg"; done
"$DSPACK" convert src out -q

# 1. --output never replaces a FIFO, a device or a link's target, nor follows a planted temp path.
head -c 4096 /dev/zero > io.dat
io=("$DSBENCH" io io.dat --rw read --bs 4k --size 4k --ioengine psync --output-format json)
echo precious > victim
ln -s victim rep.json.tmp
"${io[@]}" --output rep.json
[ "$(cat victim)" = precious ] || fail "a link planted at rep.json.tmp was written through"
$PY -c 'import json; json.load(open("rep.json"))' || fail "rep.json is not the report"
mkfifo fifo
(cat fifo > from_fifo) &
"${io[@]}" --output fifo
wait
[ -p fifo ] || fail "the FIFO was replaced by a regular file"
$PY -c 'import json; json.load(open("from_fifo"))' || fail "the report did not go through the FIFO"
expect_exit 2 "${io[@]}" --output /dev/full
expect_err "/dev/full"
[ -c /dev/full ] || fail "/dev/full is no longer a character device"
pass "--output: a planted link is not followed; a FIFO is written into; /dev/full stays a device (exit 2)"

# 7. A rate wait ends at the runtime: fio stops --rate=1 --runtime=1 at about 1 s.
timeout 30 "$DSBENCH" io io.dat --rw read --bs 4k --size 4k --ioengine psync --rate 1 --runtime 1 \
  --time_based --output-format json > rate.json || fail "--rate=1 --runtime=1 ran past 30 s (rc $?)"
$PY - <<'PY'
import json
d = json.load(open("rate.json"))
rt = d["jobs"][0]["read"]["runtime"]
assert rt <= 3000, f"runtime {rt} ms for --runtime 1"
PY
pass "--rate with --runtime: the wait for the next IO ends at the runtime"

# 9. A report lost on stdout (a full disk) is exit 2, never a silent 0.
lost() {
  set +e; "$@" > /dev/full 2> lost.err; local rc=$?; set -e
  [ "$rc" -eq 2 ] || { cat lost.err; fail "exit $rc, not 2, with stdout at /dev/full: $*"; }
  grep -q "standard output" lost.err || { cat lost.err; fail "no error naming stdout: $*"; }
}
lost "$DSPACK" ls out
lost "$DSPACK" info out --json
lost "$DSPACK" verify out --json
rm -rf out2; lost "$DSPACK" convert src out2 --json
lost "$DSSYNC" out staged --json
lost "${io[@]}"
lost "$DSBENCH" replay out --epochs 1 --workers 1 --output-format json
mkdir -p meta_dir; lost "$DSBENCH" meta meta_dir --files 20 --threads 1 --output-format json
pass "stdout at /dev/full: dspack ls/info/verify/convert, dssync, dsbench io/replay/meta exit 2"

# 12. An interrupted wds/tfrecord/recordio convert leaves no shard under its final name: a loader
# that globs shard-*.tar must not find a partial dataset.
"$DSPACK" synth tiny-files many --samples 20000 --seed 2 -q
interrupted=0
for fmt in wds:tar tfrecord:tfrecord recordio:rec; do
  f=${fmt%%:*} ext=${fmt#*:}
  for sig in TERM KILL; do
    rm -rf "int_$f"
    "$DSPACK" convert many "int_$f" --format "$f" --shard-size 64KiB --threads 2 -q &
    pid=$!
    for _ in $(seq 1 400); do
      [ "$(ls "int_$f" 2>/dev/null | grep -c "\.$ext\.tmp$")" -ge 3 ] && break
      sleep 0.05
    done
    kill -"$sig" "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    [ -e "int_$f/dspack.json" ] && continue  # finished before the signal: nothing to check
    interrupted=$((interrupted + 1))
    if ls "int_$f" 2>/dev/null | grep -E "^shard-[0-9]+\.$ext$" >/dev/null; then
      ls "int_$f" | head; fail "$f convert killed by SIG$sig left shards under final names"
    fi
  done
done
[ "$interrupted" -ge 3 ] || fail "only $interrupted of 6 converts were interrupted: the check is vacuous"
pass "$interrupted wds/tfrecord/recordio converts killed by SIGTERM or SIGKILL leaves no shard-*.EXT"
