#!/usr/bin/env bash
# LMDB on damaged bytes through the real binaries (issue 15 #3; docs/formats/lmdb.md "Bad
# input"): the two offsets that crashed every reader (8209: SIGBUS, 8218: SIGSEGV), the meta-page
# flips that made the dataset look empty with exit 0, and a byte set to 0xff at 128 offsets on
# pages 2-3. Every command exits 1 with one line naming data.mdb, never with a signal, and never
# answers 0 samples; and a seeded corpus of 500 single-byte mutants anywhere in data.mdb through
# verify, ls and extract, none ending by a signal. With DSPACK_LMDB_MUTANT_STRIDE=N (test.sh's
# ASan pass sets it) the corpus and the 128-offset scan take every Nth: under ASan each command
# is a 0.2 s process, and the scan alone took 62 s of that pass.
# tests/formats/lmdb_damage_test.cc runs a 500-mutant corpus in process; tests/python/test_read.py
# the same through the Python reader.
source "$(dirname "$0")/lib.sh"
"$DSPACK" synth tiny-files d --samples 6 --seed 1 -q
"$DSPACK" convert d good --format lmdb -q

# mutate OFFSET XOR|=VALUE: a copy of good in bad with one byte changed.
mutate() {
  rm -rf bad && cp -a good bad
  /usr/bin/python3 - "$1" "$2" <<'PY'
import sys
off, op = int(sys.argv[1]), sys.argv[2]
with open("bad/data.mdb", "r+b") as f:
    f.seek(off); b = f.read(1)[0]
    v = b ^ int(op[1:], 16) if op[0] == "^" else int(op[1:], 16)
    f.seek(off); f.write(bytes([v]))
PY
}

# every_reader DESC: each reading command on bad exits 1 with one line naming data.mdb.
every_reader() {
  local cmd
  for cmd in "verify bad" "ls bad" "info bad" "extract bad x" "cat bad 0"; do
    rm -rf x
    # shellcheck disable=SC2086
    expect_exit 1 "$DSPACK" $cmd
    # verify lists its problems on stdout and counts them on stderr
    grep -q "data.mdb" last.out last.err || { cat last.out last.err; fail "$1: $cmd: data.mdb not named"; }
    [ "$(wc -l < last.err)" = 1 ] || { cat last.err; fail "$1: $cmd: not one error line"; }
  done
  expect_exit 1 "$DSBENCH" replay bad --epochs 1 --workers 2 --batch 4
  expect_err "data.mdb"
}

for off in 8209 8218; do
  mutate "$off" =ff
  every_reader "0xff at $off"
  grep -q "page 2 (offset 8192)" last.err || { cat last.err; fail "$off: the page is not named"; }
done
pass "0xff at 8209 (was SIGBUS) and 8218 (was SIGSEGV): verify, ls, info, extract, cat, replay exit 1 naming data.mdb page 2"

for off in 144 148 4136; do
  for x in 01 80; do
    mutate "$off" "^$x"
    every_reader "bit 0x$x flipped at $off"
  done
done
pass "a flipped meta-page bit (offsets 144, 148, 4136) is exit 1 naming data.mdb, never 0 samples with exit 0"

# __meta__ rewritten through liblmdb (python3-lmdb) with a field of the wrong JSON type: the
# reader once threw nlohmann's type_error from m.value("layout", ...) and aborted.
for bad_meta in '"layout": 5' '"label_field": [1]'; do
  rm -rf bad && cp -a good bad
  /usr/bin/python3 - "$bad_meta" <<'PY'
import json, lmdb, sys
env = lmdb.open("bad", subdir=True)
with env.begin(write=True) as t:
    m = json.loads(t.get(b"__meta__"))
    m.update(json.loads("{" + sys.argv[1] + "}"))
    t.put(b"__meta__", json.dumps(m).encode())
env.close()
PY
  for cmd in "verify bad" "info bad" "ls bad"; do
    # shellcheck disable=SC2086
    expect_exit 1 "$DSPACK" $cmd
    grep -q "__meta__ is not dspack's JSON metadata" last.out last.err ||
      { cat last.out last.err; fail "$bad_meta: $cmd: __meta__ not named"; }
  done
done
pass "__meta__ with a layout or label_field of the wrong JSON type: exit 1 naming __meta__, no abort"

signals=0 scanned=0
stride=${DSPACK_LMDB_MUTANT_STRIDE:-1}
[ "$stride" -ge 1 ] || fail "DSPACK_LMDB_MUTANT_STRIDE=$stride: want a whole number of at least 1"
for off in $(seq 8192 $((64 * stride)) 16383); do
  mutate "$off" =ff
  scanned=$((scanned + 1))
  for cmd in verify ls; do
    set +e; "$DSPACK" $cmd bad > /dev/null 2> scan.err; rc=$?; set -e
    if [ "$rc" -gt 2 ]; then signals=$((signals + 1)); echo "offset $off: $cmd exit $rc" >&2; fi
    [ "$cmd" = ls ] || [ "$rc" = 0 ] || grep -q "data.mdb\|problems found" scan.err \
      || { cat scan.err; fail "offset $off: $cmd: the error names nothing"; }
  done
done
[ "$signals" = 0 ] || fail "$signals crashes in the 128-offset scan of pages 2-3"
pass "0xff at $scanned of 128 offsets on pages 2-3: verify and ls never crash"

# 500 seeded mutants (offset anywhere in data.mdb, a byte XORed with a non-zero value) through
# the CLIs, as the issue's guarantee asks: no signal, and verify always finds the damage.
$PY - "$DSPACK" "$stride" <<'PY' || fail "the 500-mutant corpus through the CLIs"
import os, random, shutil, subprocess, sys
dspack, stride = sys.argv[1], int(sys.argv[2])
good = open("good/data.mdb", "rb").read()
shutil.rmtree("bad", ignore_errors=True)
shutil.copytree("good", "bad")
rng = random.Random(15)
mutants = [(rng.randrange(len(good)), rng.randrange(1, 256)) for _ in range(500)]
bad = 0
for off, x in mutants[::stride]:
    data = bytearray(good)
    data[off] ^= x
    with open("bad/data.mdb", "wb") as f:
        f.write(data)
    for cmd in (["verify", "bad"], ["ls", "bad"], ["extract", "bad", "x"]):
        shutil.rmtree("x", ignore_errors=True)
        p = subprocess.run([dspack, *cmd], capture_output=True, text=True, timeout=120)
        if p.returncode not in (0, 1, 2):
            bad += 1
            print(f"offset {off} ^{x:#x}: {cmd[0]} exit {p.returncode}", file=sys.stderr)
        if cmd[0] == "verify" and p.returncode != 1:
            bad += 1
            print(f"offset {off} ^{x:#x}: verify exit {p.returncode}, not 1", file=sys.stderr)
print(f"{len(mutants[::stride])} mutants x 3 commands")
sys.exit(1 if bad else 0)
PY
pass "a 500-mutant corpus of data.mdb through verify, ls and extract: no signal, verify finds each"

