#!/usr/bin/env bash
# A 2^32+ byte input (a sparse file, so the source costs no disk): the format holds it (u64 field
# sizes, 40-bit record lengths in the index), it streams through bounded memory, and it
# round-trips byte-exact.
source "$(dirname "$0")/lib.sh"
need=$((10 * 1024 * 1024))  # KiB: shard (4.1 GiB) + extracted copy (4.1 GiB) + slack
avail=$(df -Pk "$WORK" | awk 'NR==2 {print $4}')
if [ "$avail" -lt "$need" ]; then echo "skip - needs 10 GiB free in $WORK"; exit 77; fi
mkdir src
truncate -s 4400000000 src/huge.bin
printf 'head' | dd of=src/huge.bin conv=notrunc status=none
printf 'tail' | dd of=src/huge.bin bs=1 seek=4399999996 conv=notrunc status=none
echo small > src/small.txt
/usr/bin/time -f "%M" -o rss "$DSPACK" convert src out -q
[ "$(cat rss)" -lt 262144 ] || fail "peak RSS $(cat rss) KiB for a 4.4 GB file: memory must not follow file size"
"$DSPACK" ls -l out | grep "bin=4400000000" >/dev/null || fail "size not recorded as 4400000000"
"$DSPACK" verify out -q
"$DSPACK" extract out ex -q
cmp src/huge.bin ex/huge.bin || fail "4.4 GB file differs after the round trip"
pass "4.4 GB (> 2^32) file: packed with $(($(cat rss) / 1024)) MiB peak RSS, verified, extracted byte-exact"
