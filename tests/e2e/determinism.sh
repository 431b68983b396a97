#!/usr/bin/env bash
# The same input and options give byte-identical datasets for any --threads.
source "$(dirname "$0")/lib.sh"
"$DSPACK" synth imagenet-like src --samples 1500 --seed 5 -q
for t in 1 2 7 32; do
  "$DSPACK" convert src "out$t" --threads "$t" --label-from-dir --shuffle-seed 3 --shard-size 16MiB \
    --align 4k -q
done
for t in 2 7 32; do
  diff -r out1 "out$t" >/dev/null || fail "--threads $t output differs from --threads 1"
done
ls out1 | grep -c '^shard-' | grep -v '^1$' >/dev/null || fail "expected several shards"
pass "byte-identical output for --threads 1, 2, 7, 32"
