#!/usr/bin/env bash
# kill -9 the packer at random moments; `convert --resume` must finish the job with a result
# byte-identical to an uninterrupted run, and verify must pass. Without --resume, the half-written
# OUT is refused with a message that names --resume.
source "$(dirname "$0")/lib.sh"
ROUNDS=${DSPACK_KILL_ROUNDS:-8}
"$DSPACK" synth imagenet-like src --samples 2500 --seed 4 -q
ln -s missing-target src/n01440764/broken.JPEG   # exercised under --on-error skip
OPTS=(--shard-size 4MiB --label-from-dir --align 4k --on-error skip --shuffle-seed 7 --threads 8)

start=$(date +%s%N)
"$DSPACK" convert src ref "${OPTS[@]}" -q
ms=$(( ($(date +%s%N) - start) / 1000000 ))
"$DSPACK" verify ref -q
grep -q '"path": "n01440764/broken.JPEG"' ref/manifest.json || fail "reference lacks the skipped input"

killed_mid=0
for round in $(seq 1 "$ROUNDS"); do
  rm -rf out
  delay_ms=$(( (RANDOM * 32768 + RANDOM) % (ms + ms / 5 + 1) ))
  "$DSPACK" convert src out "${OPTS[@]}" -q & pid=$!
  sleep "$(awk "BEGIN { print $delay_ms / 1000 }")"
  kill -9 "$pid" 2>/dev/null || true
  wait "$pid" 2>/dev/null || true
  if [ ! -f out/manifest.json ]; then
    killed_mid=$((killed_mid + 1))
    if [ -d out ] && [ -n "$(ls -A out)" ]; then
      expect_exit 2 "$DSPACK" convert src out "${OPTS[@]}"
      expect_err "--resume"
    fi
    if [ $((round % 3)) = 0 ]; then  # kill the resumed run too, then resume again
      "$DSPACK" convert src out "${OPTS[@]}" --resume -q & pid=$!
      sleep 0.$((RANDOM % 9 + 1))
      kill -9 "$pid" 2>/dev/null || true
      wait "$pid" 2>/dev/null || true
    fi
  fi
  "$DSPACK" convert src out "${OPTS[@]}" --resume -q
  diff -r ref out >/dev/null || { diff -r ref out | sed -n 1,10p; fail "round $round (kill after ${delay_ms} ms): resumed output differs"; }
  "$DSPACK" verify out -q
  [ -z "$(ls -A out | grep -v -E '^(manifest\.json|index\.dsi|classes\.txt|shard-[0-9]+\.dsr)$')" ] \
    || fail "round $round: leftover files $(ls -A out)"
done
[ "$killed_mid" -gt 0 ] || fail "no round killed the packer mid-run (run took ${ms} ms)"
pass "$ROUNDS kill -9 rounds ($killed_mid mid-run): resumed output byte-identical and verified"

# Resuming with different options is refused, naming the difference.
rm -rf out
"$DSPACK" convert src out "${OPTS[@]}" -q & pid=$!
# Killed once its run record is down (a fixed sleep raced a slow start under the sanitizers:
# killed before the record, --resume had nothing to compare and rightly converted afresh).
for _ in $(seq 400); do [ -f out/.dspack-run.json ] && break; sleep 0.025; done
kill -9 "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
if [ -f out/.dspack-run.json ] && [ ! -f out/manifest.json ]; then
  expect_exit 2 "$DSPACK" convert src out --shard-size 8MiB --label-from-dir --align 4k \
    --on-error skip --shuffle-seed 7 --resume
  expect_err "options differ"
fi
expect_exit 2 "$DSPACK" convert src out --resume --force
"$DSPACK" convert src done "${OPTS[@]}" -q
expect_exit 0 "$DSPACK" convert src done "${OPTS[@]}" --resume
grep -q "nothing to resume" "$WORK/last.out" || fail "--resume on a finished dataset"
expect_exit 2 "$DSPACK" convert src done --resume
expect_err "made with other options"
pass "--resume with other options refused; --resume and --force exclude each other"
