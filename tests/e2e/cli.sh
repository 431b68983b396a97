#!/usr/bin/env bash
# --help everywhere, usage errors exit 2, human sizes, --json is valid JSON.
source "$(dirname "$0")/lib.sh"
"$DSPACK" --help | grep convert >/dev/null || fail "--help lists subcommands"
for sub in convert verify info ls cat extract synth; do
  "$DSPACK" "$sub" --help >/dev/null || fail "$sub --help"
done
"$DSPACK" --version | grep '^dspack ' >/dev/null || fail "--version"
expect_exit 2 "$DSPACK"
expect_exit 2 "$DSPACK" convert
expect_exit 2 "$DSPACK" frobnicate
expect_err "unknown command 'frobnicate' (commands: convert, verify, info, ls, cat, extract, synth"
mkdir src; echo x > src/a.txt
expect_exit 2 "$DSPACK" convert src out --formt lmdb
expect_err "did you mean --format?"
expect_exit 2 "$DSPACK" verify nosuch
expect_err "nosuch: no such file or directory; give the dataset directory"
expect_exit 1 "$DSPACK" info /etc/passwd
expect_err "/etc/passwd: not a directory"
expect_exit 2 "$DSBENCH" frobnicate
expect_err "unknown command 'frobnicate' (commands: io, storage, meta"
expect_exit 2 "$DSPACK" convert src out --shard-size 12parsecs
expect_err "invalid size '12parsecs'"
expect_exit 2 "$DSPACK" convert src out --align 3k
expect_err "power of two"
expect_exit 2 "$DSPACK" convert src out --on-error maybe
expect_exit 2 "$DSPACK" convert no-such-dir out
expect_err "no-such-dir"
expect_exit 2 "$DSPACK" convert src src/inner
expect_err "inside SRC"
[ -e src/inner ] && fail "a refused OUT inside SRC must not be left behind"
expect_exit 2 "$DSPACK" synth imagenet-like x --samples 1 --seed 1 --threads 1 --bogus
pass "usage errors exit 2 with a message"

"$DSPACK" convert src out --json --shard-size 1MiB > summary.json
$PY -c 'import json; d=json.load(open("summary.json")); assert d["samples"]==1 and d["files"]==1, d'
"$DSPACK" info out --json | $PY -c 'import json,sys; d=json.load(sys.stdin); assert d["shard_size"]==1048576'
"$DSPACK" verify out --json | $PY -c 'import json,sys; d=json.load(sys.stdin); assert d["ok"] is True'
"$DSPACK" convert src out2 > human.txt
grep -q "converted 1 files" human.txt || fail "human summary"
grep -q $'\r' human.txt && fail "no progress bar when stderr is not a terminal"
pass "--json outputs parse; human summary; no progress bar off a terminal"

# On a terminal (emulated with script(1)), a progress bar with rate and ETA goes to stderr.
if command -v script >/dev/null; then
  "$DSPACK" synth tiny-files tty_src --samples 2000 --seed 1 -q
  script -qec "$DSPACK convert tty_src tty_out --threads 1" /dev/null > tty.txt
  grep -q "files/s" tty.txt && grep -q "ETA" tty.txt || { cat -v tty.txt; fail "no progress bar on a terminal"; }
  grep -q "converted 2000 files" tty.txt || fail "summary after the progress bar"
  pass "progress bar (files/s, MB/s, ETA) on a terminal only"
fi
