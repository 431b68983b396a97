#!/usr/bin/env bash
# The one list of dspack's prerequisites (Debian 12 packages), and an idempotent installer.
# Sourced by demo.sh and test.sh; run directly to install: `bash scripts/deps.sh`.
DSPACK_APT_PACKAGES=(
  build-essential cmake pkg-config
  libnfs-dev libcurl4-openssl-dev liburing-dev libaio-dev liblmdb-dev libarchive-dev libtbb-dev libcli11-dev catch2 libbenchmark-dev
  libxxhash-dev nlohmann-json3-dev libfmt-dev libzstd-dev zlib1g-dev libfuse3-dev fuse3
  fio rsync tar zip unzip zstd xz-utils bzip2 time util-linux python3 python3-lmdb python3-xxhash
  python3-crcmod  # C CRC-32C for tests/e2e/layout_readers.py (its pure-Python one is ~100x slower)
  chromium  # headless: renders the dsbench compare report in tests/e2e/check_report.py
  # the Python package (python/, docs/python.md) and its tests; Debian's torch is CPU-only
  pybind11-dev python3-dev python3-numpy python3-torch python3-torchvision python3-pytest
  python3-pil
  protobuf-compiler python3-protobuf  # tests/e2e/schema.sh parses tf.train.Example with protoc's code
  gnuplot-nox  # fio's fio2gnuplot/fio_generate_plots plot our logs in tests/e2e/fio_compat.sh
  help2man dpkg-dev  # man pages from --help (cmake/install.cmake); cpack's dpkg-shlibdeps
  mmdebstrap  # tests/e2e/install.sh installs the .deb into a clean Debian 12 chroot
  libopenmpi-dev openmpi-bin  # MPI ranks (mpi/, docs/mpi.md); tests/e2e/mpi.sh runs mpirun
  # the real NFS server of tests/e2e/nfs_fixture.sh (docs/nfs.md) and libnfs's own client tools
  nfs-ganesha nfs-ganesha-vfs rpcbind libnfs-utils iproute2
  # the real S3 server of tests/e2e/s3_fixture.sh (docs/s3.md): Ceph's RADOS Gateway; s3cmd, a peer
  ceph-mon ceph-osd radosgw ceph-common curl s3cmd
)

dspack_install_deps() {
  local missing=()
  for p in "${DSPACK_APT_PACKAGES[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local sudo=""
  [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "installing: ${missing[*]}" >&2
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# configure+build into $1 with extra cmake args; -j2 by default (override with JOBS).
dspack_build() {
  local dir=$1; shift
  cmake -S "$(dirname "${BASH_SOURCE[0]}")/.." -B "$dir" -DCMAKE_BUILD_TYPE=${BUILD_TYPE:-RelWithDebInfo} "$@" >/dev/null
  cmake --build "$dir" -j"${JOBS:-2}"
}

if [ "${BASH_SOURCE[0]}" = "$0" ]; then set -euo pipefail; dspack_install_deps; fi
