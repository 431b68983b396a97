#!/usr/bin/env bash
# Damage a dataset on disk; verify and the readers must report shard, offset and key, never crash.
source "$(dirname "$0")/lib.sh"
"$DSPACK" synth imagenet-like src --samples 200 --seed 2 -q
"$DSPACK" convert src ds --shard-size 4MiB --align 4k -q
"$DSPACK" verify ds -q

flip() {  # flip FILE OFFSET
  $PY - "$1" "$2" <<'PYEOF'
import sys
path, off = sys.argv[1], int(sys.argv[2])
with open(path, "r+b") as f:
    f.seek(off); b = f.read(1); f.seek(off); f.write(bytes([b[0] ^ 0x5A]))
PYEOF
}

cp -a ds pristine
shard=ds/shard-000001.dsr
size=$(stat -c %s "$shard")
for off in 0 13 61 4096 4100 4110 4200 $((size / 2)) $((size - 40)) $((size - 5)); do
  rm -rf ds && cp -a pristine ds
  flip "$shard" "$off"
  expect_exit 1 "$DSPACK" verify ds
  grep -q "shard-000001.dsr: offset" "$WORK/last.out" || { cat "$WORK/last.out"; fail "verify must name shard and offset (flip at $off)"; }
done
pass "verify reports flips in header, record, payload, index and footer (exit 1)"

# A payload flip names the key, and cat of that key fails cleanly.
rm -rf ds && cp -a pristine ds
flip "$shard" $((4096 + 200))
expect_exit 1 "$DSPACK" verify ds
key=$(grep -o '(key [^)]*)' "$WORK/last.out" | sed -n 1p | sed 's/(key \(.*\))/\1/')
[ -n "$key" ] || fail "verify output names no key"
grep -q "offset 4096 (key $key): data checksum mismatch" "$WORK/last.out" || fail "wrong location"
expect_exit 1 "$DSPACK" cat ds "$key"
expect_err "data checksum mismatch"
expect_exit 1 "$DSPACK" extract ds ex
expect_err "data checksum mismatch"
[ -e "ex/$key.JPEG" ] && fail "extract left the damaged file under its final name"
pass "payload damage: verify names key $key; cat and extract refuse it"

# Truncation.
rm -rf ds && cp -a pristine ds
truncate -s $((size - 100)) "$shard"
expect_exit 1 "$DSPACK" verify ds
grep -q "manifest says $size" "$WORK/last.out" || fail "truncation not explained"
expect_exit 1 "$DSPACK" extract ds ex2
expect_err "truncated"
pass "truncated shard reported by verify and extract"

# Missing manifest: a damaged dataset, bad data (exit 1) in verify as everywhere else (issue 15:
# verify said 2, ls/cat/extract 1); a DIR that does not exist stays a usage error (2).
rm -rf ds && cp -a pristine ds && rm ds/manifest.json
expect_exit 1 "$DSPACK" verify ds
grep -q "but no manifest.json: a damaged or unfinished dataset" "$WORK/last.out" || { cat "$WORK/last.out"; fail "verify: missing manifest not named"; }
for cmd in ls extract; do
  rm -rf ex3
  # shellcheck disable=SC2046
  expect_exit 1 "$DSPACK" $cmd ds $([ $cmd = extract ] && echo ex3)
done
expect_exit 2 "$DSPACK" verify no-such-dir
rm -rf ds && cp -a pristine ds && echo '{"format": "dspack-native", "version"' > ds/manifest.json
expect_exit 1 "$DSPACK" verify ds
expect_err "malformed manifest"
pass "missing manifest: exit 1 in verify, ls and extract; malformed manifest exit 1; no DIR exit 2"

# A deleted shard or index.dsi is bad data (exit 1) in verify, ls, cat and extract alike.
for victim in "$(basename "$shard")" index.dsi; do
  rm -rf ds && cp -a pristine ds && rm "ds/$victim"
  expect_exit 1 "$DSPACK" verify ds
  rm -rf ex4
  expect_exit 1 "$DSPACK" extract ds ex4
  expect_err "$victim: missing, but manifest.json lists it"
  if [ "$victim" = index.dsi ]; then
    expect_exit 1 "$DSPACK" ls ds
    expect_err "index.dsi: missing, but manifest.json lists it"
  fi
  expect_exit 1 "$DSPACK" cat ds "$key"
done
pass "deleted shard / index.dsi: exit 1 in verify, ls, cat and extract, naming the file"
