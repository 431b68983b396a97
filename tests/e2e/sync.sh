#!/usr/bin/env bash
# dssync end to end: staging a native dataset and a plain tree, verify, unchanged skip, --delete,
# rank subsets, versioned staging; and the bad inputs: a corrupt shard, a source that changes
# or vanishes mid-copy, ENOSPC (up front and mid-copy), unreadable entries, DST inside SRC,
# symlinks leaving SRC, kill -9 at random points then resume (docs/dssync.md).
source "$(dirname "$0")/lib.sh"
: "${DSSYNC:?set DSSYNC to the dssync binary}"
N=${DSPACK_E2E_SAMPLES:-2000}
[ "$N" -gt 2000 ] && N=2000
"$DSPACK" synth imagenet-like tree --samples "$N" --seed 3 -q
"$DSPACK" convert tree ds --shard-size 2MiB --label-from-dir -q
nshards=$(ls ds | grep -c '^shard-')
same() { diff -r -x '.dssync-*' "$1" "$2" >/dev/null || { diff -r -x '.dssync-*' "$1" "$2" | sed -n 1,10p; fail "$2 differs from $1"; }; }
jget() { $PY -c "import json,sys; print(json.loads(open(sys.argv[1]).read().splitlines()[-1])[sys.argv[2]])" "$WORK/last.out" "$1"; }

# --- happy path: a native dataset, verified against manifest.json
expect_exit 0 "$DSSYNC" ds st --json
same ds st
[ -f st/.dssync-ready ] || fail "no ready marker"
[ "$(jget verified)" = $((nshards + 2)) ] || fail "verified $(jget verified), want $((nshards + 2)) (shards, index, classes)"
expect_exit 0 "$DSSYNC" verify st
"$DSPACK" verify st -q
expect_exit 2 "$DSSYNC" verify tree
expect_err "not a directory staged by dssync"
expect_exit 0 "$DSSYNC" ds st --json
[ "$(jget skipped_unchanged)" = $((nshards + 3)) ] && [ "$(jget files)" = 0 ] || fail "rerun copied: $(cat last.out)"
expect_exit 0 "$DSSYNC" ds st --json --checksum
[ "$(jget files)" = 0 ] || fail "--checksum rerun copied files"
pass "native dataset staged, verified against its manifest, rerun skips everything"

# --- a plain tree: dssync writes its own manifest; verify catches a flipped byte
expect_exit 0 "$DSSYNC" tree tt -q --threads 7 --chunk-size 64k
same tree tt
grep -q '"xxh3"' tt/.dssync-manifest.json || fail "no .dssync-manifest.json"
victim=$(cd tt && set -- n*/*; echo "$1")
printf 'X' | dd of="tt/$victim" bs=1 seek=100 conv=notrunc status=none
expect_exit 1 "$DSSYNC" verify tt
expect_err "$victim: xxh3"
expect_exit 0 "$DSSYNC" tree tt -q --checksum   # --checksum sees through the same size+mtime
expect_exit 0 "$DSSYNC" verify tt
pass "plain tree: own manifest written; verify reports a corrupt staged file; --checksum repairs it"

# --- --delete: only what SRC no longer holds, only under DST, dssync's own files kept
gone=$(cd tree && set -- n*/*; echo "$2")
rm "tree/$gone"
echo keep > outside.txt
ln -s "$WORK/outside.txt" tt/link-out
expect_exit 0 "$DSSYNC" tree tt --delete --json
[ ! -e "tt/$gone" ] && [ ! -L tt/link-out ] || fail "--delete left files"
[ "$(cat outside.txt)" = keep ] && [ -f tt/.dssync-manifest.json ] && [ -f tt/.dssync-ready ] || fail "--delete removed too much"
same tree tt
pass "--delete removes what SRC lost, never through a symlink, never its own metadata"

# --- rank subsets: shard i of the manifest goes to rank i % world
expect_exit 0 "$DSSYNC" ds r1 --rank 1 --world 3 --assign round-robin -q
want=$($PY -c "import json; s=json.load(open('ds/manifest.json'))['shards']; print(' '.join(x['name'] for i,x in enumerate(s) if i%3==1))")
got=$(cd r1 && ls shard-* | tr '\n' ' ' | sed 's/ $//')
[ "$got" = "$want" ] || fail "rank 1 of 3: got $got, want $want"
[ -f r1/manifest.json ] && [ -f r1/index.dsi ] && [ -f r1/classes.txt ] || fail "metadata not staged"
SLURM_PROCID=2 SLURM_NTASKS=3 expect_exit 0 "$DSSYNC" ds r2 --max-bytes 5MiB --assign round-robin
grep -q "rank 2 of 3 (SLURM_PROCID/SLURM_NTASKS)" last.out || fail "SLURM rank not used: $(cat last.out)"
first=$($PY -c "import json; s=json.load(open('ds/manifest.json'))['shards']; print(s[2]['name'])")
[ "$(ls r2 | grep -c '^shard-')" -ge 1 ] && [ -f "r2/$first" ] || fail "--max-bytes prefix wrong: $(ls r2)"
[ "$(du -cb r2/shard-* | tail -1 | cut -f1)" -le $((5 << 20)) ] || fail "--max-bytes exceeded"
expect_exit 2 "$DSSYNC" ds r3 --rank 3 --world 3
expect_err "rank 3 of world 3"
pass "rank assignment (round-robin: i % world; bytes: python/tests), SLURM env, --max-bytes prefix, metadata always staged"

# --- versioned staging: DST/current switches atomically
expect_exit 0 "$DSSYNC" ds vs --version-name v1 -q
[ "$(readlink vs/current)" = v1 ] || fail "current does not point at v1"
expect_exit 0 "$DSSYNC" ds vs --version-name v2 -q
[ "$(readlink vs/current)" = v2 ] && [ -f vs/v2/.dssync-ready ] || fail "current not switched"
expect_exit 0 "$DSSYNC" verify vs
expect_exit 2 "$DSSYNC" ds vs --version-name ../x
pass "--version-name stages beside and switches DST/current"

# --- a corrupt source shard: reported, named, not staged
cp -a ds bad
printf 'Z' | dd of=bad/shard-000001.dsr bs=1 seek=5000 conv=notrunc status=none
touch -r ds/shard-000001.dsr bad/shard-000001.dsr
expect_exit 1 "$DSSYNC" bad sb -q
expect_err "shard-000001.dsr: xxh3"
[ ! -e sb/shard-000001.dsr ] && [ -z "$(ls -A sb | grep dssync-tmp || true)" ] || fail "corrupt shard staged"
[ ! -e sb/.dssync-ready ] || fail "ready marker after an error"
[ -f sb/shard-000000.dsr ] || fail "good shards not staged"
pass "a corrupt source shard is reported and not staged; no ready marker"

# --- DST inside SRC, SRC inside DST
expect_exit 2 "$DSSYNC" tree tree/sub
expect_err "inside SRC"
expect_exit 2 "$DSSYNC" tree/n01440764 tree
expect_err "inside DST"
expect_exit 2 "$DSSYNC" tree .
pass "DST inside SRC and SRC inside DST refused"

# --- symlinks leaving SRC; unreadable entries (as root: a fifo, a dangling symlink)
mkdir -p sl/d && echo in > sl/d/a.txt && echo secret > secret.txt
ln -s "$WORK/secret.txt" sl/out.txt
ln -s d/a.txt sl/in.txt
expect_exit 0 "$DSSYNC" sl sl1 -q
expect_err "out.txt: symlink to"
[ ! -e sl1/out.txt ] && [ "$(cat sl1/in.txt)" = in ] || fail "symlink policy"
expect_exit 0 "$DSSYNC" sl sl2 -q --follow-symlinks
[ "$(cat sl2/out.txt)" = secret ] || fail "--follow-symlinks did not copy the target"
mkfifo sl/pipe
ln -s nowhere sl/dangling
expect_exit 1 "$DSSYNC" sl sl3 -q
expect_err "pipe: unreadable: a fifo"
expect_err "dangling: unreadable: dangling symlink"
[ -f sl3/d/a.txt ] && [ ! -e sl3/pipe ] && [ ! -e sl3/.dssync-ready ] || fail "unreadable handling"
pass "symlinks out of SRC skipped (copied with --follow-symlinks); fifo and dangling link reported"

# --- a source that changes or vanishes during the copy
mkdir -p grow && head -c 6M /dev/urandom > grow/a.bin && echo z > grow/z.txt
( for i in $(seq 60); do head -c 4096 /dev/urandom >> grow/a.bin; sleep 0.1; done ) & writer=$!
expect_exit 1 "$DSSYNC" grow g1 --bwlimit 2MB/s --threads 1 -q  # each attempt >= 1 s
kill "$writer" 2>/dev/null || true; wait "$writer" 2>/dev/null || true
expect_err "a.bin: changed during copy"
[ ! -e g1/a.bin ] && [ -f g1/z.txt ] || fail "a changing file was staged"
( sleep 0.6; rm grow/z.txt ) &  # after the plan, while a.bin (>= 1 s) is copied
expect_exit 1 "$DSSYNC" grow g2 --bwlimit 2MB/s --threads 1 -q
wait
expect_err "z.txt: vanished during the copy"
[ -f g2/a.bin ] && [ ! -e g2/z.txt ] || fail "vanished file handling"
pass "a file appended during the copy is recopied then reported; a vanished file is reported"

# --- ENOSPC: the space check up front, and a real ENOSPC mid-copy
if mkdir -p small && mount -t tmpfs -o size=8m tmpfs small 2>/dev/null; then
  MOUNTS+=("$WORK/small")
  mkdir -p fat && head -c 5M /dev/urandom > fat/a.bin && head -c 5M /dev/urandom > fat/b.bin
  expect_exit 2 "$DSSYNC" fat small/d
  expect_err "not enough space: need 10.0 MiB"
  [ -z "$(ls -A small/d | grep -v '^\.dssync-journal$' || true)" ] || fail "files left after the space check"
  expect_exit 2 "$DSSYNC" fat small/d --no-space-check --threads 1 -q
  expect_err "No space left on device"
  [ -f small/d/a.bin ] && [ ! -e small/d/b.bin ] || fail "ENOSPC: $(ls -A small/d)"
  cmp fat/a.bin small/d/a.bin
  [ -z "$(ls -A small/d | grep dssync-tmp || true)" ] || fail "tmp file left after ENOSPC"
  pass "ENOSPC refused up front with figures; mid-copy ENOSPC leaves no partial final file"
else
  echo "skip - ENOSPC cases (cannot mount tmpfs)"
fi

# --- kill -9 at random points, then resume: never a wrong file under a final name
mkdir -p ks && cp ds/* ks/ && head -c 48M /dev/urandom > ks/big.bin
OPTS=(--chunk-size 4MiB --bwlimit 40MB/s --threads 4 -q)
killed=0
for round in 1 2 3 4 5; do
  rm -rf kd
  "$DSSYNC" ks kd "${OPTS[@]}" & pid=$!
  sleep "0.$((RANDOM % 9 + 1))"
  kill -9 "$pid" 2>/dev/null && killed=$((killed + 1)) || true
  wait "$pid" 2>/dev/null || true
  for f in $(ls kd 2>/dev/null | grep -v '^\.dssync-' || true); do
    cmp -s "ks/$f" "kd/$f" || fail "round $round: $f under its final name differs from the source"
  done
  if [ $((round % 2)) = 0 ]; then  # kill the resumed run too
    "$DSSYNC" ks kd "${OPTS[@]}" & pid=$!
    sleep 0.5; kill -9 "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
  fi
  expect_exit 0 "$DSSYNC" ks kd --chunk-size 4MiB --json
  same ks kd
  expect_exit 0 "$DSSYNC" verify kd
  [ -z "$(ls -A kd | grep -E 'dssync-(tmp|journal)' || true)" ] || fail "round $round: leftovers $(ls -A kd)"
done
[ "$killed" -gt 0 ] || fail "no round killed dssync mid-run"
# One large file, fewer files than threads: its chunks are copied in parallel and resumed.
mkdir -p kb && cp ks/big.bin kb/
"$DSSYNC" kb kbd --chunk-size 2MiB --bwlimit 40MB/s --threads 4 -q & pid=$!
# Kill once a chunk is journaled, not after a fixed sleep: under ASan on a slow host the start
# alone can take longer than any fixed delay.
for _ in $(seq 600); do
  grep -qs '^C ' kbd/.dssync-journal && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.05
done
kill -9 "$pid" 2>/dev/null || true; wait "$pid" 2>/dev/null || true
[ ! -e kbd/big.bin ] || cmp -s kb/big.bin kbd/big.bin || fail "partial big.bin under its final name"
expect_exit 0 "$DSSYNC" kb kbd --chunk-size 2MiB --threads 4 --json
[ "$(jget resumed_bytes)" -gt 0 ] || fail "no chunk of big.bin reused: $(cat last.out)"
cmp kb/big.bin kbd/big.bin
expect_exit 0 "$DSSYNC" verify kbd
pass "5 kill -9 rounds ($killed mid-run): no bad final file; resumed copies verify"
