#!/usr/bin/env bash
# dsbench replay's bad inputs (issue: replay and compare): a path of the wrong layout, a corrupt
# record mid-replay (stop or skip per --on-error), an empty dataset, more workers than batches,
# cold mode without permission to drop caches, a worker sweep, and the slow file system wrapped
# around a replay. Each case asserts the exit code and a one-line message naming the thing.
source "$(dirname "$0")/lib.sh"
DSBENCH=${DSBENCH:?set DSBENCH}
N=200
"$DSPACK" synth imagenet-like tree --samples $N --seed 5 -q
"$DSPACK" convert tree nat -q

# A path of another layout is detected: a plain tar of the tree replays as wds (members grouped
# by key, as webdataset reads it). One that is no layout is reported with the fix: a text file,
# random bytes named .tfrecord.
tar -cf t.tar tree
"$DSBENCH" replay t.tar --epochs 1 --output-format json > tar.json
$PY -c 'import json; r=json.load(open("tar.json"))["replay"]; assert r["layout"] == "wds" and r["dataset_samples"] == 200, r'
echo hello > plain.txt
expect_exit 1 "$DSBENCH" replay plain.txt --epochs 1
expect_err "plain.txt: not a dataset"
expect_err "dspack convert plain.txt"
head -c 100000 /dev/urandom > junk.tfrecord
set +e; "$DSBENCH" replay junk.tfrecord --epochs 1 > /dev/null 2> last.err; rc=$?; set -e
[ $rc -eq 1 ] || [ $rc -eq 2 ] || fail "junk.tfrecord: exit $rc"
expect_err "junk.tfrecord"
[ "$(wc -l < last.err)" -eq 1 ] || { cat last.err; fail "not one line"; }
pass "a tar is detected as wds; a text file and random bytes named .tfrecord are reported in one line naming them"

# An empty dataset: an empty tree.
mkdir empty
expect_exit 1 "$DSBENCH" replay empty --epochs 1
expect_err "empty: no samples to replay"
pass "an empty dataset is refused as bad data (exit 1, as dspack)"

# A corrupt record in the middle of a shard: flip one payload byte of sample 100.
cp -a nat bad
off=$("$DSPACK" ls -l nat --json 2>/dev/null | $PY -c '
import json, sys
rows = [json.loads(l) for l in sys.stdin if l.strip()]
r = rows[100]
print(r["offset"] + r["length"] // 2)' 2>/dev/null || true)
if [ -z "$off" ]; then
  # ls has no offsets: corrupt the middle of the shard instead.
  size=$(stat -c %s bad/shard-000000.dsr)
  off=$((size / 2))
fi
printf '\xff' | dd of=bad/shard-000000.dsr bs=1 seek="$off" conv=notrunc status=none
b=$(dd if=nat/shard-000000.dsr bs=1 skip="$off" count=1 status=none | od -An -tx1 | tr -d ' ')
[ "$b" != ff ] || printf '\x00' | dd of=bad/shard-000000.dsr bs=1 seek="$off" conv=notrunc status=none
expect_exit 1 "$DSBENCH" replay bad --epochs 1 --cache warm
expect_err "shard-000000.dsr: sample"
expect_err "at offset"
expect_err "(key "
expect_err "checksum mismatch"
[ "$(wc -l < last.err)" -eq 1 ] || { cat last.err; fail "the error is not one line"; }
expect_exit 1 "$DSBENCH" replay bad --epochs 2 --cache warm --on-error skip --output-format json
$PY - <<'PY'
import json
r = json.load(open("last.out"))["replay"]
assert r["error_count"] == 2 and len(r["errors"]) == 2, r["errors"]
assert "checksum mismatch" in r["errors"][0] and "shard-000000.dsr" in r["errors"][0]
assert all(e["samples"] == 199 and e["errors"] == 1 for e in r["epochs"]), r["epochs"]
PY
expect_exit 2 "$DSBENCH" replay bad --on-error ignore
expect_err "--on-error: stop or skip"
pass "a corrupt record mid-replay: --on-error stop exits 1 naming shard, offset and key; skip counts it and goes on"

# More workers than batches: reduced, with a note.
"$DSBENCH" replay nat --epochs 1 --workers 64 --batch 16 --cache warm > many.txt
grep -q "note: 64 workers for 13 batches of 16 samples: the extra workers would only idle; using 13" many.txt ||
  { cat many.txt; fail "more workers than batches: no note"; }
grep -q "workers=13" many.txt || { cat many.txt; fail "workers not reduced"; }
pass "more workers than batches: reduced to the batch count with a note"

# Cold mode without permission to drop caches: falls back to fadvise with a note (as nobody).
chmod 755 "$WORK"
chmod -R a+rX nat
# ThreadSanitizer reads its suppressions as nobody too: a copy nobody can read (a clone under a
# 0700 directory, as mktemp -d makes, is not; CI once failed here on that).
if [[ "${TSAN_OPTIONS:-}" == *suppressions=* ]]; then
  supp=$(sed -n 's/.*suppressions=\([^:]*\).*/\1/p' <<< "$TSAN_OPTIONS")
  cp "$supp" "$WORK/tsan.supp" && chmod 644 "$WORK/tsan.supp"
  export TSAN_OPTIONS=${TSAN_OPTIONS/suppressions=$supp/suppressions=$WORK/tsan.supp}
fi
if setpriv --reuid=65534 --regid=65534 --clear-groups true 2>/dev/null; then
  setpriv --reuid=65534 --regid=65534 --clear-groups "$DSBENCH" replay "$WORK/nat" --epochs 1 \
    --drop-caches > nobody.txt 2> nobody.err || { cat nobody.txt nobody.err; fail "replay as nobody"; }
  grep -q "note: cannot drop caches (writing /proc/sys/vm/drop_caches needs root): evicting" nobody.txt ||
    { cat nobody.txt; fail "no fallback note"; }
  grep -q "^epoch 1 (cold" nobody.txt || { cat nobody.txt; fail "no cold epoch"; }
  pass "--drop-caches without root falls back to fadvise with a note"
else
  echo "skip: setpriv cannot switch to nobody here"
fi

# A worker sweep with a required rate: one run per count, and the pick.
"$DSBENCH" replay nat --epochs 1 --workers 1,2 --samples-per-sec 1 --cache warm > sweep.txt
grep -q "fewest workers that feed the job: 1" sweep.txt || { cat sweep.txt; fail "sweep pick"; }
[ "$(grep -c '^replay ' sweep.txt)" -eq 2 ] || { cat sweep.txt; fail "sweep: not one run per count"; }
"$DSBENCH" replay nat --epochs 1 --workers 1,2 --output-format json > sweep.json
$PY -c 'import json; r=json.load(open("sweep.json"))["replay_sweep"]; assert [x["workers"] for x in r] == [1, 2], r'
expect_exit 2 "$DSBENCH" replay nat --workers 1,0
expect_err "--workers '1,0'"
pass "worker sweep: a run per count, the fewest that meet the rate, JSON per run; a bad list is refused"

# The slow file system around a replay (needs /dev/fuse): the tree pays round trips per file.
if [ -e /dev/fuse ] && command -v fusermount3 >/dev/null; then
  "$DSBENCH" replay tree --epochs 1 --meta-latency 2ms --workers 2 --output-format json > slow.json
  $PY - <<'PY'
import json
r = json.load(open("slow.json"))["replay"]
assert r["slowfs"]["meta_latency_s"] == 0.002, r["slowfs"]
assert any("slow file system" in n for n in r["notes"]), r["notes"]
e = r["epochs"][0]
# The open of each file costs a 2 ms round trip (lookups may be cached from the scan): a
# sample's read cannot be faster than that.
assert e["sample_lat_ns"]["percentile"]["50.000000"] >= 2e6, e["sample_lat_ns"]
assert e["samples"] == 200
PY
  grep "dsbench-slowfs" /proc/mounts | grep -F "$WORK" >/dev/null && fail "a slowfs mount was left behind"
  expect_exit 2 "$DSBENCH" replay tree --meta-latency fast
  expect_err "invalid duration 'fast'"
  pass "--meta-latency wraps the dataset in the slow file system (each file pays the round trips), unmounted after"

  # dsbench slowfs: a user-facing mount until SIGINT.
  mkdir mnt
  "$DSBENCH" slowfs tree mnt --meta-latency 1ms > slowfs.out 2>&1 &
  pid=$!
  for _ in $(seq 100); do mountpoint -q mnt && break; sleep 0.05; done
  mountpoint -q mnt || { cat slowfs.out; fail "dsbench slowfs did not mount"; }
  [ "$(find mnt -type f | wc -l)" -eq "$(find tree -type f | wc -l)" ] || fail "slowfs: files differ"
  cmp <(cat mnt/*/*.JPEG | md5sum) <(cat tree/*/*.JPEG | md5sum) || fail "slowfs: bytes differ"
  kill -INT $pid
  wait $pid || fail "dsbench slowfs: exit $? after SIGINT"
  mountpoint -q mnt && fail "still mounted after SIGINT"
  grep -q "unmounted" slowfs.out || { cat slowfs.out; fail "no unmount message"; }
  # The daemon dies under it: dsbench says so, and the dead mount is taken down.
  "$DSBENCH" slowfs tree mnt > killed.out 2>&1 &
  pid=$!
  for _ in $(seq 100); do mountpoint -q mnt && break; sleep 0.05; done
  pkill -9 -f "dsbench-slowfs tree $WORK/mnt" || fail "no dsbench-slowfs daemon to kill"
  set +e; wait $pid; rc=$?; set -e
  [ $rc -eq 2 ] || { cat killed.out; fail "daemon killed: exit $rc"; }
  grep -q "dsbench-slowfs ended (killed by signal 9), $WORK/mnt unmounted" killed.out ||
    { cat killed.out; fail "daemon killed: message"; }
  grep -qF "$WORK/mnt" /proc/mounts && fail "a dead slowfs mount was left behind"
  expect_exit 2 "$DSBENCH" slowfs tree no/such/mnt
  expect_err "no/such/mnt"
  pass "dsbench slowfs serves the tree read-only with latency until SIGINT, then unmounts; a killed daemon is reported and its mount taken down"
else
  echo "skip: no /dev/fuse or fusermount3: slow file system cases not run"
fi

# A native dataset whose manifest.json was deleted is damaged, not a plain tree (issue 15: it was
# benchmarked as one, exit 0): exit 1, naming what is there and what is missing.
rm -rf dm dmtree
mkdir dmtree; for i in 1 2 3 4; do head -c 3000 /dev/urandom > "dmtree/$i.bin"; done
"$DSPACK" convert dmtree dm -q
rm dm/manifest.json
expect_exit 1 "$DSBENCH" replay dm --epochs 1
expect_err "holds native dataset files"
expect_err "but no manifest.json: a damaged or unfinished dataset"
expect_err "finish the convert that made it (resume it), or restore manifest.json"
pass "replay of a native dataset without its manifest: exit 1, damaged, not a plain tree"
