#!/usr/bin/env bash
# One writer per output directory (issue 15 #4; src/dir_lock.h): two `dspack convert`s into one
# OUT, the second plain, with --resume or with --force, and two dssyncs into one DST. The loser
# gets "OUT: is being written by PID N" (exit 2) and never the advice meant for an interrupted
# run; the winner's dataset is whole (verify, sample count), in every trial. Before the lock,
# following that advice while the first convert ran gave a convert that exited 0 with missing
# shards in 2 of 9 runs.
source "$(dirname "$0")/lib.sh"
TRIALS=${DSPACK_LOCK_TRIALS:-5}
"$DSPACK" synth imagenet-like src --samples 600 --seed 3 -q
want=$(find src -type f | wc -l)

# race MODE: convert A in the background; B (MODE) into the same OUT as soon as OUT exists.
race() {
  local mode=$1 t=$2
  rm -rf out
  "$DSPACK" convert src out --shard-size 1MiB --threads 2 -q > a.out 2> a.err &
  local apid=$!
  for _ in $(seq 2000); do [ -e out ] && break; sleep 0.001; done
  set +e
  # shellcheck disable=SC2086
  "$DSPACK" convert src out --shard-size 1MiB --threads 2 -q $mode > b.out 2> b.err
  local brc=$?
  wait "$apid"
  local arc=$?
  set -e
  for who in a b; do
    local rc; [ $who = a ] && rc=$arc || rc=$brc
    if [ "$rc" != 0 ]; then
      [ "$rc" = 2 ] || { cat $who.err; fail "trial $t ($mode): $who exited $rc"; }
      grep -q "out: is being written by PID [0-9]" $who.err ||
        { cat $who.err; fail "trial $t ($mode): $who's refusal does not name the writer's PID"; }
      [ "$(wc -l < $who.err)" = 1 ] || { cat $who.err; fail "not one line"; }
      grep -q "interrupted" $who.err && fail "trial $t: advice for an interrupted run while locked"
      refused=$((refused + 1))
    fi
  done
  [ "$arc" = 0 ] || [ "$brc" = 0 ] || fail "trial $t ($mode): neither convert finished"
  "$DSPACK" verify out -q || fail "trial $t ($mode): the dataset does not verify"
  local n
  n=$("$DSPACK" info out --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["samples"])')
  [ "$n" = "$want" ] || fail "trial $t ($mode): $n samples, want $want"
}
refused=0
for t in $(seq "$TRIALS"); do
  for mode in "" --resume --force; do race "$mode" "$t"; done
done
echo "note - $refused of $((TRIALS * 3)) trials overlapped (one convert refused)"
[ "$refused" -gt 0 ] || fail "no trial overlapped: the race was not exercised"
pass "$TRIALS trials each of convert + convert / --resume / --force into one OUT: the loser exits 2 naming the PID, the dataset is whole"

# Readers while --force replaces a dataset with another: each `ls` reads the old or the new one
# whole (exit 0, its count) or is refused (exit 2: "is being written by PID N" at open, or, for
# a native shard opened later, "replaced or removed since it was opened"); never a mix of the
# two, never a half-removed or half-written dataset.
"$DSPACK" synth imagenet-like src2 --samples 300 --seed 4 -q
"$DSPACK" convert src2 ref2 --shard-size 1MiB -q
n_old=$want n_new=$("$DSPACK" ls ref2 | wc -l)
busy=0 reads=0
for t in $(seq 3); do
  rm -rf rf && "$DSPACK" convert src rf --shard-size 1MiB -q
  "$DSPACK" convert src2 rf --shard-size 1MiB --threads 2 -q --force & fpid=$!
  while kill -0 "$fpid" 2>/dev/null; do
    set +e; "$DSPACK" ls rf > r.out 2> r.err; rc=$?; set -e
    n=$(wc -l < r.out)
    if [ "$rc" = 0 ]; then
      [ "$n" = "$n_old" ] || [ "$n" = "$n_new" ] || fail "a reader saw $n samples (old $n_old, new $n_new)"
      reads=$((reads + 1))
    else
      [ "$rc" = 2 ] && grep -Eq "rf: (is being written by PID [0-9]|the dataset was replaced or removed since it was opened)" r.err ||
        { cat r.err; fail "a reader during --force exited $rc"; }
      busy=$((busy + 1))
    fi
  done
  wait "$fpid"
  [ "$busy" -gt 0 ] && break
done
echo "note - $busy readers refused, $reads read a whole dataset"
[ "$busy" -gt 0 ] || fail "no reader met the --force writer: the race was not exercised"
pass "readers during convert --force: the old or the new dataset whole, or exit 2 naming the writer"

# A lock held by a finished (or killed) run is gone with it: kill -9 mid-convert, then --resume.
"$DSPACK" convert src k --shard-size 1MiB -q & kpid=$!
for _ in $(seq 2000); do [ -e k ] && break; sleep 0.001; done
kill -9 "$kpid" 2>/dev/null || true
wait "$kpid" 2>/dev/null || true
"$DSPACK" convert src k --shard-size 1MiB -q --resume 2>/dev/null ||
  "$DSPACK" convert src k --shard-size 1MiB -q --force
"$DSPACK" verify k -q
pass "no stale lock after kill -9"

# dssync: two runs into one DST; the loser exits 2 naming the PID, DST is whole.
"$DSPACK" convert src ds --shard-size 256KiB -q
dsrefused=0
for t in $(seq "$TRIALS"); do
  rm -rf dst
  # The first run is held to 30 MB/s (about 2 s for this dataset), so that the second, started
  # once DST exists, meets it however slow its own start is (under ASan, an unthrottled first
  # run finished before the second had planned).
  "$DSSYNC" ds dst -q --bwlimit 30MB/s > a.out 2> a.err & apid=$!
  for _ in $(seq 2000); do [ -e dst ] && break; sleep 0.001; done
  set +e
  "$DSSYNC" ds dst -q > b.out 2> b.err; brc=$?
  wait "$apid"; arc=$?
  set -e
  for who in a b; do
    [ $who = a ] && rc=$arc || rc=$brc
    if [ "$rc" != 0 ]; then
      dsrefused=$((dsrefused + 1))
      [ "$rc" = 2 ] || { cat $who.err; fail "dssync trial $t: $who exited $rc"; }
      grep -q "dst: is being written by PID [0-9]" $who.err ||
        { cat $who.err; fail "dssync trial $t: $who's refusal does not name the PID"; }
    fi
  done
  [ "$arc" = 0 ] || [ "$brc" = 0 ] || fail "dssync trial $t: neither run finished"
  "$DSPACK" verify dst -q || fail "dssync trial $t: DST does not verify"
done
echo "note - $dsrefused of $TRIALS dssync trials overlapped"
[ "$dsrefused" -gt 0 ] || fail "no dssync trial overlapped: the race was not exercised"
pass "$TRIALS trials of two dssyncs into one DST: the loser exits 2 naming the PID, DST verifies"
