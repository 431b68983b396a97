#!/usr/bin/env bash
# `mpirun -n N dspack convert` (docs/mpi.md#partitioned-packing) through the real mpirun: the
# output is byte-identical to a one-process convert for N = 1, 2, 3 and 5 (5 does not divide the
# shard count), in wds, tfrecord and recordio for N = 2 and 3, for N larger than the shard count (idle ranks) and for an empty tree; a kill -9
# of one rank followed by --resume with another N gives the same bytes; what does not partition
# is refused with exit 2 and a reason, leaving nothing behind; a bad file on one rank ends the
# job with exit 1 naming it, within 10 s, and removes what every rank made. Registered only in an
# MPI build.
source "$(dirname "$0")/lib.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
export OMPI_MCA_btl_vader_single_copy_mechanism=none
command -v mpirun >/dev/null || fail "needs mpirun (openmpi-bin, scripts/deps.sh)"
run() { timeout 120 mpirun --oversubscribe -n "$@"; }
same() {  # same REF OUT WHAT: every file byte-identical, and nothing else in OUT
  diff -r "$1" "$2" > diff.txt || { sed -n 1,10p diff.txt; fail "$3: differs from one process"; }
  "$DSPACK" verify "$2" -q || fail "$3: verify"
}

"$DSPACK" synth imagenet-like src --samples 800 --seed 4 -q
OPTS=(--shard-size 1MiB --label-from-dir --align 4k --shuffle-seed 7)
"$DSPACK" convert src ref "${OPTS[@]}" --threads 4 -q
shards=$(ls ref | grep -c '^shard-')
[ "$shards" -gt 20 ] && [ $((shards % 5)) != 0 ] || fail "want > 20 shards, not a multiple of 5: $shards"
for n in 1 2 3 5; do
  run "$n" "$DSPACK" convert src "out$n" "${OPTS[@]}" --threads "$n" --json > "out$n.json" || fail "mpirun -n $n convert"
  same ref "out$n" "$n ranks"
  $PY -c 'import json,sys; j=json.load(open(sys.argv[1])); assert j["ranks"] == int(sys.argv[2]) and j["samples"] == 800 and j["shards"] == int(sys.argv[3]), j' \
    "out$n.json" "$([ "$n" = 1 ] && echo 1 || echo "$n")" "$shards" || fail "$n ranks: the JSON report"
done
pass "800 samples, $shards shards, shuffled, labelled, 4k-aligned: byte-identical with 1, 2, 3 and 5 ranks"

# The sharded interop layouts: the same plan rule, their sidecars and metadata, byte for byte.
for f in wds tfrecord recordio; do
  IOPTS=(--shard-size 1MiB --label-from-dir --shuffle-seed 7 --format "$f")
  "$DSPACK" convert src "ref-$f" "${IOPTS[@]}" -q
  for n in 2 3; do
    run "$n" "$DSPACK" convert src "$f$n" "${IOPTS[@]}" --threads 2 -q || fail "$f: mpirun -n $n"
    same "ref-$f" "$f$n" "$f, $n ranks"
  done
done
pass "wds, tfrecord, recordio (imagenet schema, int64 labels): byte-identical with 2 and 3 ranks"

mkdir -p small/a empty
for i in 1 2 3; do head -c 1000 /dev/urandom > "small/a/$i.bin"; done
"$DSPACK" convert small small-ref -q && run 4 "$DSPACK" convert small small-out -q
same small-ref small-out "4 ranks, 1 shard"
"$DSPACK" convert empty empty-ref -q && run 3 "$DSPACK" convert empty empty-out -q
same empty-ref empty-out "3 ranks, an empty tree"
pass "more ranks than shards (idle ranks) and an empty tree: byte-identical"

# kill -9 of one rank (mpirun ends the job), then --resume with another N: the same bytes.
start=$(date +%s%N)
run 2 "$DSPACK" convert src timing "${OPTS[@]}" --threads 1 -q
ms=$(( ($(date +%s%N) - start) / 1000000 ))
killed_mid=0
for round in 1 2 3 4; do
  rm -rf k
  run 3 "$DSPACK" convert src k "${OPTS[@]}" --threads 1 -q 2> /dev/null & mp=$!
  victim=$((round % 3))
  sleep "$(awk "BEGIN { print ($RANDOM % ($ms + 1)) / 1000 }")"
  for p in $(pgrep -f "dspack convert src k " || true); do
    r=$(tr '\0' '\n' < "/proc/$p/environ" 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p')
    [ "$r" = "$victim" ] && kill -9 "$p" 2>/dev/null || true
  done
  wait "$mp" 2>/dev/null || true
  [ -f k/manifest.json ] || killed_mid=$((killed_mid + 1))
  if [ -d k ] && [ ! -f k/manifest.json ] && [ -n "$(ls -A k)" ]; then
    expect_exit 2 "$DSPACK" convert src k "${OPTS[@]}"
    expect_err "--resume"
  fi
  resume_n=$(( round % 2 ? 2 : 4 ))
  run "$resume_n" "$DSPACK" convert src k "${OPTS[@]}" --resume -q || fail "round $round: --resume -n $resume_n"
  same ref k "round $round (rank $victim killed, resumed with $resume_n ranks)"
done
[ "$killed_mid" -gt 0 ] || fail "no round killed a rank mid-run (a run took $ms ms)"
pass "kill -9 of one rank ($killed_mid of 4 rounds mid-run), --resume with 2 or 4 ranks: byte-identical"

# What does not partition: refused by every rank before any work, OUT not created.
tar -cf src.tar -C src .
for args in "src.tar no1" "src no2 --format lmdb" "src no3 --on-error skip"; do
  # shellcheck disable=SC2086
  expect_exit 2 run 2 "$DSPACK" convert $args
  [ ! -e "$(echo "$args" | cut -d' ' -f2)" ] || fail "$args: OUT was created"
done
expect_exit 2 run 2 "$DSPACK" convert src.tar no1
expect_err "reads a directory tree"
expect_exit 2 run 2 "$DSPACK" convert src no2 --format lmdb
expect_err "an LMDB is one B-tree file"
expect_exit 2 run 2 "$DSPACK" convert src no3 --on-error skip
expect_err "--on-error skip with several ranks"
expect_exit 2 run 2 "$DSPACK" convert src out2
expect_err "rank 0 of 2: out2: already holds a dspack dataset"
run 2 "$DSPACK" convert src out2 "${OPTS[@]}" --force -q
same ref out2 "--force with 2 ranks"
pass "archive SRC, lmdb, --on-error skip, an existing OUT: exit 2 with the reason; --force replaces"

# A file no rank can read (a dangling link, sized by one rank): exit 1 naming it, in time, and
# nothing left behind.
cp -r src bad && ln -s missing-target bad/n01440764/broken.JPEG
t0=$(date +%s)
expect_exit 1 run 3 "$DSPACK" convert bad bad-out -q
grep -Eq "dspack: rank [0-9] of 3: bad(/|: )n01440764/broken.JPEG" last.err || { cat last.err; fail "no message naming the link"; }
[ $(( $(date +%s) - t0 )) -le 10 ] || fail "the failed job took more than 10 s"
[ ! -e bad-out ] || { ls -A bad-out; fail "bad-out left behind"; }
pass "a dangling link: exit 1 naming it within 10 s, nothing left behind"
