#!/usr/bin/env bash
# Every read verified in every interop layout dspack writes (issue 15; docs/formats/README.md
# "Per-sample checksums"): one payload byte changed in a wds, recordio or lmdb dataset makes
# cat, extract, convert and dsbench replay exit 1 with one line naming the file and the
# sample key (before: exit 0 with the corrupt bytes). verify names a changed, cut or deleted
# sidecar or classes.txt, and a deleted dspack.json is a damaged dataset, not foreign data.
source "$(dirname "$0")/lib.sh"
mkdir -p src/c0 src/c1
for i in 0 1 2 3 4 5; do
  printf 'MARK%s-%02000d' "$i" 0 > "src/c$((i % 2))/s$i.bin"
done
for f in wds recordio lmdb tfrecord; do "$DSPACK" convert src "d.$f" --format "$f" --label-from-dir -q; done

flip() {  # flip FILE NEEDLE: changes the byte 10 after NEEDLE
  /usr/bin/python3 - "$1" "$2" <<'PY'
import sys
path, needle = sys.argv[1], sys.argv[2].encode()
b = bytearray(open(path, "rb").read())
at = b.index(needle) + 10
b[at] ^= 1
open(path, "wb").write(b)
PY
}

for f in wds recordio lmdb; do
  rm -rf bad && cp -a "d.$f" bad
  file=$(grep -l MARK3- bad/* | head -1)
  flip "$file" MARK3-
  key=c1/s3
  for cmd in "cat bad $key --field bin" "extract bad x" "convert bad x.nat"; do
    rm -rf x x.nat
    # shellcheck disable=SC2086
    expect_exit 1 "$DSPACK" $cmd
    expect_err "$(basename "$file")"
    expect_err "CRC32C"
    expect_err "$key"
    [ "$(wc -l < last.err)" = 1 ] || { cat last.err; fail "$f: $cmd: not one error line"; }
  done
  expect_exit 1 "$DSBENCH" replay bad --epochs 1 --workers 2 --batch 2
  expect_err "CRC32C"
  expect_exit 1 "$DSPACK" verify bad
done
pass "a changed payload byte in wds, recordio, lmdb: cat, extract, convert and replay exit 1 naming file, key and CRC"

for case in recordio:shard-000000.lst recordio:shard-000000.idx tfrecord:shard-000000.idx \
            wds:classes.txt lmdb:classes.txt; do
  f=${case%%:*} name=${case#*:}
  for how in flip cut delete; do
    rm -rf bad && cp -a "d.$f" bad
    case $how in
      flip) /usr/bin/python3 -c 'import sys; p=sys.argv[1]; b=bytearray(open(p,"rb").read()); b[len(b)//2]^=4; open(p,"wb").write(b)' "bad/$name" ;;
      cut) truncate -s -1 "bad/$name" ;;
      delete) rm "bad/$name" ;;
    esac
    expect_exit 1 "$DSPACK" verify bad
    grep -q "$name" last.out || { cat last.out; fail "$f: $how $name: verify does not name it"; }
  done
done
pass "verify names a flipped, cut or deleted .lst, .idx and classes.txt (exit 1)"

for f in wds recordio lmdb tfrecord; do
  rm -rf bad && cp -a "d.$f" bad && rm bad/dspack.json
  for cmd in "ls bad" "verify bad"; do
    expect_exit 1 "$DSPACK" $cmd
    grep -q "dspack.json: missing" last.out last.err || { cat last.out last.err; fail "$f: $cmd"; }
  done
done
pass "a deleted dspack.json: ls and verify exit 1 naming it, in every interop layout"
