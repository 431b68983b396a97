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
# -k: an mpirun that a TERM does not end is killed. Open MPI 4.1's mpirun was seen (CI of 37ef7df)
# deadlocked in its own teardown (orte_finalize -> PMIx_server_finalize, a mutex in libpmix)
# after a rank was killed, its ranks all gone, and it ignored timeout's TERM for good.
run() { timeout -k 10 "${MPI_TIMEOUT:-120}" mpirun --oversubscribe -n "$@"; }
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
  # A rank killed: mpirun ends the job at once, or is stuck in its teardown (above) for good.
  MPI_TIMEOUT=60 run 3 "$DSPACK" convert src k "${OPTS[@]}" --threads 1 -q 2> /dev/null & mp=$!
  victim=$((round % 3))
  sleep "$(awk "BEGIN { print ($RANDOM % ($ms + 1)) / 1000 }")"
  for p in $(pgrep -f "dspack convert src k " || true); do
    # The process may end between pgrep and here: no environ, no rank.
    r=$({ tr '\0' '\n' < "/proc/$p/environ"; } 2>/dev/null | sed -n 's/^OMPI_COMM_WORLD_RANK=//p' || true)
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

# OUT that exists on every node but is not shared storage (issue 34 item 2): each rank gets its own
# tmpfs at the same path (a mount namespace per rank), so rank 0 cannot see rank 1's shards. The
# root must refuse to commit (exit 2, naming a shard it does not see), not exit 0 with half of them.
if unshare -m true 2>/dev/null; then
  mkdir -p private
  cat > private.sh <<'SH'
#!/usr/bin/env bash
set -e
mount -t tmpfs none "$PRIV"
mkdir "$PRIV/out"
rc=0
"$@" || rc=$?
ls "$PRIV/out" > "$PRIV.rank${OMPI_COMM_WORLD_RANK}.ls" 2>/dev/null || true
exit $rc
SH
  for fmt in native wds tfrecord; do
    set +e
    PRIV="$WORK/private" run 2 unshare -m bash private.sh "$DSPACK" convert src "$WORK/private/out" \
      --format "$fmt" --shard-size 1MiB --label-from-dir --force 2> private.err
    rc=$?
    set -e
    [ "$rc" = 2 ] || { cat private.err; fail "$fmt: OUT not shared: exit $rc, not 2"; }
    grep -q "OUT must be on storage every process of the job sees" private.err \
      || { cat private.err; fail "$fmt: the error does not say OUT must be shared"; }
    ! grep -q "dspack.json\|manifest.json" "$WORK/private.rank0.ls" \
      || { cat "$WORK/private.rank0.ls"; fail "$fmt: rank 0 committed a dataset it cannot see whole"; }
  done
  pass "OUT not shared between ranks: native, wds and tfrecord refuse to commit (exit 2) and say why"

  # Ranks that see different versions of SRC under the same names (issue 34 item 3): rank 1 sees a
  # copy bind-mounted over SRC (a stale NFS cache) with every tenth file 4 bytes longer, or with
  # one file's mtime alone changed. Exit 1 naming a file, and no dataset.
  cat > stale.sh <<'SH'
#!/usr/bin/env bash
set -e
[ "$OMPI_COMM_WORLD_RANK" != 1 ] || mount --bind "$STALE" "$STALE_AT"
exec "$@"
SH
  rm -rf stale-size stale-mtime
  cp -a src stale-size
  cp -a src stale-mtime
  find stale-size -type f -name '*.JPEG' | sort | awk 'NR % 10 == 0' | while read -r f; do
    printf 'more' >> "$f"
  done
  touch -d '2001-02-03 04:05:06' "$(find stale-mtime -type f -name '*.JPEG' | sort | tail -1)"
  for stale in stale-size stale-mtime; do
    set +e
    STALE="$WORK/$stale" STALE_AT="$WORK/src" run 2 unshare -m bash stale.sh "$DSPACK" convert "$WORK/src" stale-out \
      --format wds --shard-size 1MiB --label-from-dir --force 2> stale.err
    rc=$?
    set -e
    [ "$rc" = 1 ] || { cat stale.err; fail "$stale: ranks with different SRCs: exit $rc, not 1"; }
    grep -Eq "src/.*JPEG: [0-9]+ bytes, modified .*every rank must see the same SRC" stale.err \
      || { cat stale.err; fail "$stale: the error does not name the file that differs"; }
    [ ! -e stale-out/dspack.json ] || fail "$stale: a dataset mixed from two SRCs was committed"
  done
  pass "ranks that see different sizes or mtimes under the same names: exit 1 naming a file"
else
  echo "note: no mount namespaces here; the unshared-OUT case did not run"
fi
