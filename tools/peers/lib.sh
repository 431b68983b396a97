# Shared by the peer-comparison scripts in tools/peers/. Expects W (work dir), N (samples),
# DSPACK.
# bench_tree: synthesizes imagenet-like --samples N --seed 1 once into $W/imagenet-$N; sets SRC
#   and BYTES. drop: empties the page cache (root). run NAME CMD...: times CMD (after a sync, so
#   no writeback from the previous run is pending) and appends "NAME seconds max_rss_kb" to
#   $results. The Python side reads that file with tools/peers/runs.py.
# slowfs_mount DIR MNT LATENCY [ARGS...]: serves DIR at MNT through the slow file system
#   (`dsbench slowfs --meta-latency LATENCY ARGS`, e.g. 1ms --read-latency 1ms; needs DSBENCH and
#   FUSE) in the background and waits for the mount. slowfs_umount stops it (dsbench unmounts on SIGINT); scripts call it on EXIT.
bench_tree() {
  mkdir -p "$W"
  SRC="$W/imagenet-$N"
  if [ ! -f "$SRC.done" ]; then
    rm -rf "$SRC"
    "$DSPACK" synth imagenet-like "$SRC" --samples "$N" --seed 1 -q
    touch "$SRC.done"
  fi
  BYTES=$(du -sb --apparent-size "$SRC" | cut -f1)
}
drop() { sync; echo 3 > /proc/sys/vm/drop_caches; }
run() {
  local name=$1; shift
  rm -rf "$W/out.ds" "$W/out.tar"
  sync
  /usr/bin/time -f "%e %M" -o "$W/time.txt" "$@" >/dev/null 2>"$W/err.txt" || { cat "$W/err.txt"; exit 1; }
  echo "$name $(cat "$W/time.txt")" >> "$results"
}
slowfs_mount() {
  mkdir -p "$2"
  local src=$1 mnt=$2 latency=$3; shift 3
  "$DSBENCH" slowfs "$src" "$mnt" --meta-latency "$latency" "$@" > "$W/slowfs.log" 2>&1 &
  SLOWFS_PID=$!
  for _ in $(seq 200); do mountpoint -q "$mnt" && return 0; sleep 0.05; done
  cat "$W/slowfs.log" >&2; slowfs_umount; echo "slowfs: $mnt not mounted" >&2; exit 1
}
slowfs_umount() {
  [ -n "${SLOWFS_PID:-}" ] || return 0
  kill -INT "$SLOWFS_PID" 2>/dev/null || true
  wait "$SLOWFS_PID" 2>/dev/null || true
  SLOWFS_PID=
}
