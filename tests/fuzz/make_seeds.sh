#!/usr/bin/env bash
# Seed inputs for the fuzz harnesses, made small from real datasets: dspack synth, then dspack
# convert into each layout, GNU tar, zip and Python's tarfile. Usage: make_seeds.sh DSPACK OUT;
# writes OUT/<harness>/... (tools/fuzz.sh runs it; tests/fuzz/corpus/ holds a committed copy
# that ctest replays, with every crash found added to it).
set -euo pipefail
DSPACK=$1
mkdir -p "$2" && OUT=$(cd "$2" && pwd)
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
mkdir -p "$OUT"/{layout,native_shard,lmdb,zip,archive,journal,meta}
"$DSPACK" synth tiny-files "$W/t" --samples 4 --seed 1 -q
# Small payloads keep the seeds near libFuzzer's default input size.
find "$W/t" -type f | while read -r f; do head -c 200 "$f" > "$f.x" && mv "$f.x" "$f"; done
mkdir -p "$W/l/a" "$W/l/b" && printf 1 > "$W/l/a/x.txt" && printf 22 > "$W/l/b/y.txt"
"$DSPACK" convert "$W/t" "$W/nat" --shard-size 4KiB -q
cp "$W/nat/shard-000000.dsr" "$OUT/native_shard/seed.dsr"
for f in wds tfrecord recordio lmdb; do "$DSPACK" convert "$W/l" "$W/$f" --format "$f" --label-from-dir -q; done
{ printf '\0'; cat "$W/wds/shard-000000.tar"; } > "$OUT/layout/seed-wds"
{ printf '\1'; cat "$W/tfrecord/shard-000000.tfrecord"; } > "$OUT/layout/seed-tfrecord"
{ printf '\2'; cat "$W/recordio/shard-000000.rec"; } > "$OUT/layout/seed-recordio"
cp "$W/lmdb/data.mdb" "$OUT/lmdb/seed.mdb"
(cd "$W/l" && zip -qr "$OUT/zip/seed.zip" . && zip -qr -0 "$OUT/zip/stored.zip" .)
tar -cf "$OUT/archive/seed.tar" -C "$W/l" .
tar -czf "$OUT/archive/seed.tar.gz" -C "$W/l" .
cp "$OUT/zip/seed.zip" "$OUT/archive/seed.zip"
printf '{"format":"wds","version":1,"samples":1,"shards":[{"name":"s.tar","bytes":1,"samples":1,"first_sample":0,"xxh3":"00"}],"files":[{"name":"classes.txt","bytes":2,"xxh3":"ab"}]}' > "$W/m"
{ printf '\0'; cat "$W/m"; } > "$OUT/meta/seed-dspack-json"
{ printf '\1'; cat "$W/nat/manifest.json"; } > "$OUT/meta/seed-manifest"
printf 'C 100 5 0 50 0123456789abcdef a%%20b 0badc0de\nF 9 1 0 9 fedcba9876543210 x/y.bin 12345678\n' > "$OUT/journal/seed"
