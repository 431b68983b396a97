#!/usr/bin/env bash
# fio with its libnfs engine (N1 of the NFS issue, docs/nfs.md). Debian's fio 3.33 is built
# without libnfs; its own source package has the engine (engines/nfs.c). This fetches that
# source with a private apt source list and state (the system's apt lists stay untouched),
# configures it with --enable-libnfs and builds it into FIO_NFS_DIR (default
# /work/peers-bin-fio-nfs). About 1.5 minutes on 2 cores. Prints the binary's path.
#   tools/peers/build_fio_nfs.sh
# Run the result with --thread: forked jobs of this engine hang on an RPC reply.
set -euo pipefail
FIO_NFS_DIR=${FIO_NFS_DIR:-/work/peers-bin-fio-nfs}
if [ -x "$FIO_NFS_DIR/fio" ] && "$FIO_NFS_DIR/fio" --enghelp 2>/dev/null | grep -qw nfs; then
  echo "$FIO_NFS_DIR/fio"
  exit 0
fi
mkdir -p "$FIO_NFS_DIR"
apt_dir=$(mktemp -d)
trap 'rm -rf "$apt_dir"' EXIT
mkdir -p "$apt_dir/lists/partial"
cat >"$apt_dir/sources.list" <<SRC
deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm main
SRC
apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=/dev/null"
  -o "Dir::State::Lists=$apt_dir/lists")
log=$FIO_NFS_DIR/build.log
{
  apt-get "${apt_opts[@]}" update
  (cd "$apt_dir" && apt-get "${apt_opts[@]}" source --download-only fio &&
    dpkg-source -x fio_*.dsc src)
  cd "$apt_dir/src"
  ./configure --enable-libnfs --disable-native
  make -j2 fio
} >"$log" 2>&1 || { echo "fio (libnfs) build failed: see $log" >&2; exit 1; }
"$apt_dir/src/fio" --enghelp 2>/dev/null | grep -qw nfs ||
  { echo "fio built without its nfs engine (is libnfs-dev installed?): see $log" >&2; exit 1; }
cp "$apt_dir/src/fio" "$FIO_NFS_DIR/fio"
echo "$FIO_NFS_DIR/fio"
