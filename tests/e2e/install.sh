#!/usr/bin/env bash
# An installable toolkit (issue 16 #3): `cmake --install` into a temporary prefix puts the
# tools (dsbench-slowfs beside dsbench), man pages made from --help, bash completion, the
# libraries and headers with find_package(dspack) and pkg-config, and the Python package; a
# 20-line consumer builds against the prefix with find_package(dspack) and opens a dataset the
# installed dspack wrote; cpack makes a .deb whose Depends come from dpkg-shlibdeps, which
# dpkg installs, runs and removes.
source "$(dirname "$0")/lib.sh"
BUILD_DIR=${BUILD_DIR:?set BUILD_DIR to the build tree}
if [ -n "${ASAN_OPTIONS:-}${TSAN_OPTIONS:-}" ]; then
  echo "skip - a sanitizer build's static libraries need its runtime in every consumer"
  exit 77
fi
P=$WORK/prefix
cmake --install "$BUILD_DIR" --prefix "$P" > install.log || { cat install.log; fail "cmake --install"; }
for f in bin/dspack bin/dsbench bin/dsbench-slowfs bin/dssync share/man/man1/dspack.1 \
  share/man/man1/dsbench.1 share/man/man1/dssync.1 share/bash-completion/completions/dsbench \
  lib/cmake/dspack/dspackConfig.cmake lib/pkgconfig/dspack.pc include/dspack/formats/layout.h \
  include/dspack/src/status.h lib/libdspack_formats.a lib/libdspack_core.a; do
  [ -e "$P/$f" ] || fail "not installed: $f"
done
"$P/bin/dspack" --version | grep -q "^dspack " || fail "installed dspack --version"
# The man pages say what --help says: every command, and a flag of a command.
grep -q "convert" "$P/share/man/man1/dspack.1" && grep -q -- "--shard-size" "$P/share/man/man1/dspack.1" ||
  fail "dspack.1 lacks the commands' help"
grep -q -- "--mpi-stonewall" "$P/share/man/man1/dsbench.1" || fail "dsbench.1 lacks io's flags"
# Completion asks the installed binary.
( PATH=$P/bin:$PATH
  # shellcheck disable=SC1091
  source "$P/share/bash-completion/completions/dspack"
  COMP_WORDS=(dspack con); COMP_CWORD=1; _dspack_complete
  [ "${COMPREPLY[*]}" = convert ] || { echo "commands: ${COMPREPLY[*]}"; exit 1; }
  COMP_WORDS=(dsbench io --ioeng); COMP_CWORD=2; _dspack_complete
  [ "${COMPREPLY[*]}" = --ioengine ] || { echo "flags: ${COMPREPLY[*]}"; exit 1; }
) || fail "bash completion"
# Only the public headers: no internals, every quoted include of an installed header installed
# too, and each one compiles on its own against the prefix.
for internal in pack/packer_impl.h formats/interop/lmdb_common.h src/io_engine.h; do
  [ ! -e "$P/include/dspack/$internal" ] || fail "an internal header is installed: $internal"
done
( cd "$P/include/dspack" && find . -name '*.h' | sed 's|^\./||' ) | sort > headers.txt
[ "$(wc -l < headers.txt)" -ge 10 ] || fail "few headers installed: $(cat headers.txt)"
while read -r h; do
  { grep -o '^#include "[^"]*"' "$P/include/dspack/$h" || true; } | sed 's/^#include "\(.*\)"/\1/' |
    while read -r inc; do
      [ -e "$P/include/dspack/$inc" ] || { echo "$h includes $inc, which is not installed"; exit 1; }
    done || fail "the installed headers are not closed"
  echo "#include \"$h\"" > one.cc
  g++ -std=c++20 -fsyntax-only -I"$P/include/dspack" one.cc 2> one.log ||
    { cat one.log; fail "$h does not compile on its own"; }
done < headers.txt
pass "cmake --install: tools, slowfs helper, man pages from --help, bash completion, public headers only (closed, each compiles alone), CMake package, pkg-config"

# `pip install ./python` configures as python/setup.py does (no tests, micro-benchmarks or slow
# file system), on a machine without Catch2, Google Benchmark or fuse3: CMake is told those
# packages do not exist, and pkg-config sees every .pc here but fuse3's.
SRC_DIR=${SRC_DIR:?set SRC_DIR}
mkdir pc-nofuse
for d in $(pkg-config --variable pc_path pkg-config | tr : ' '); do
  for pc in "$d"/*.pc; do
    [ -e "$pc" ] && [ "$(basename "$pc")" != fuse3.pc ] && ln -sf "$pc" pc-nofuse/
  done
done
[ ! -e pc-nofuse/fuse3.pc ] && [ -e pc-nofuse/liburing.pc ] || fail "pkg-config dir without fuse3"
PKG_CONFIG_LIBDIR=$PWD/pc-nofuse cmake -S "$SRC_DIR" -B nodeps -DDSPACK_PYTHON=ON \
  -DDSPACK_MICRO_BENCH=OFF -DDSPACK_TESTS=OFF -DDSPACK_SLOWFS=OFF \
  -DCMAKE_DISABLE_FIND_PACKAGE_Catch2=ON -DCMAKE_DISABLE_FIND_PACKAGE_benchmark=ON \
  > nodeps.log 2>&1 || { cat nodeps.log; fail "configure without Catch2, benchmark and fuse3"; }
cmake --build nodeps --target help > targets.txt || fail "the python-only build's target list"
grep -q "_dspack" targets.txt || fail "no _dspack target without the test stack"
! grep -q "dspack_tests\|dsbench-slowfs" targets.txt || fail "tests or slowfs configured: $(cat targets.txt)"
! grep -q "FUSE3_FOUND:INTERNAL=1\|Catch2_DIR:PATH=/" nodeps/CMakeCache.txt ||
  fail "the python-only configure still looked for fuse3 or Catch2"
pass "the Python package's configure needs neither Catch2, Google Benchmark nor fuse3"

"$P/bin/dspack" synth tiny-files src --samples 50 --seed 1 -q
"$P/bin/dspack" convert src ds -q
mkdir consumer
cat > consumer/CMakeLists.txt <<'EOF'
cmake_minimum_required(VERSION 3.22)
project(consumer CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(dspack REQUIRED)
add_executable(consumer main.cc)
target_link_libraries(consumer PRIVATE dspack::dspack)  # the umbrella target
EOF
cat > consumer/main.cc <<'EOF'
#include <cstdio>

#include "formats/layout.h"

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  auto reader = ds::OpenLayout(argv[1]);
  if (!reader.ok()) {
    std::fprintf(stderr, "%s\n", reader.status().message().c_str());
    return 1;
  }
  auto first = (*reader)->Get(0);
  if (!first.ok()) return 1;
  std::printf("%llu samples, first %s\n", static_cast<unsigned long long>((*reader)->size()),
              first->key.c_str());
  return 0;
}
EOF
cmake -S consumer -B consumer/build -DCMAKE_PREFIX_PATH="$P" > consumer.log 2>&1 ||
  { cat consumer.log; fail "find_package(dspack)"; }
cmake --build consumer/build -j2 >> consumer.log 2>&1 || { cat consumer.log; fail "consumer build"; }
consumer/build/consumer ds > consumer.out || fail "consumer run"
grep -q "^50 samples, first " consumer.out || fail "consumer: $(cat consumer.out)"
inc=$(PKG_CONFIG_PATH=$P/lib/pkgconfig pkg-config --cflags-only-I dspack) || fail "pkg-config"
inc=${inc%% *}
[ -f "${inc#-I}/formats/layout.h" ] || fail "pkg-config --cflags dspack: $inc"
# The same consumer, compiled and linked by pkg-config's flags alone.
# shellcheck disable=SC2046
g++ -O1 consumer/main.cc -o consumer/pc $(PKG_CONFIG_PATH=$P/lib/pkgconfig pkg-config --cflags --libs dspack) \
  > pc.log 2>&1 || { cat pc.log; fail "g++ \$(pkg-config --cflags --libs dspack)"; }
consumer/pc ds | grep -q "^50 samples, first " || fail "the pkg-config consumer"
pass "a consumer builds with find_package(dspack), and with pkg-config, and opens a dataset the installed dspack wrote"

if [ -f "$BUILD_DIR/python/dspack/__init__.py" ]; then
  PYTHONPATH=$(echo "$P"/lib/python3*/dist-packages) $PY -c \
    'import dspack, sys; ds = dspack.open(sys.argv[1]); assert len(ds) == 50, len(ds)' ds ||
    fail "the installed Python package"
  # The installed dsbench finds the installed package for its torch DataLoader child.
  env -u PYTHONPATH "$P/bin/dsbench" replay ds --loader torch --epochs 1 --workers 1 --cache warm \
    --output-format json > torch.json || fail "installed dsbench replay --loader torch"
  $PY -c 'import json; r=json.load(open("torch.json"))["replay"]; assert r["loader"]=="torch" and r["epochs"][0]["samples"]==50, r' ||
    fail "replay --loader torch: not 50 samples"
  pass "the Python package is installed with the prefix, reads the dataset, and the installed dsbench replay --loader torch uses it"
fi

# cpack .deb; dpkg install/remove only where no dspack package is installed already.
( cd "$BUILD_DIR" && cpack -G DEB -B "$WORK/deb" > "$WORK/cpack.log" 2>&1 ) ||
  { cat cpack.log; fail "cpack -G DEB"; }
deb=$(ls "$WORK"/deb/dspack_*.deb)
depends=$(dpkg-deb -f "$deb" Depends)
for lib in libarchive13 liblmdb0 libfmt9 liburing2 libaio1; do
  grep -q "$lib" <<<"$depends" || fail ".deb Depends lacks $lib (dpkg-shlibdeps): $depends"
done
if [ "$(id -u)" = 0 ] && ! dpkg -s dspack > /dev/null 2>&1; then
  dpkg -i "$deb" > dpkg.log 2>&1 || { cat dpkg.log; fail "dpkg -i"; }
  /usr/bin/dspack --version | grep -q "^dspack " || { dpkg -r dspack; fail "/usr/bin/dspack"; }
  [ -x /usr/bin/dsbench-slowfs ] && ls /usr/share/man/man1/dsbench.1* > /dev/null ||
    { dpkg -r dspack; fail "the .deb's files"; }
  dpkg -r dspack > /dev/null || fail "dpkg -r"
  [ ! -e /usr/bin/dspack ] || fail "dpkg -r left /usr/bin/dspack"
  pass "cpack .deb (Depends from dpkg-shlibdeps: $depends): dpkg -i, dspack --version, dpkg -r"
else
  pass "cpack .deb (Depends from dpkg-shlibdeps); dpkg -i skipped (not root, or dspack installed)"
fi

# The .deb in a clean Debian 12 chroot (mmdebstrap; apt fetches its Depends from the mirror):
# the three tools run there with nothing else of this machine.
if [ "$(id -u)" = 0 ] && command -v mmdebstrap > /dev/null; then
  if bash "$SRC_DIR/scripts/deb_chroot_check.sh" "$deb" > chroot.log 2>&1; then
    pass "the .deb in a clean bookworm chroot (mmdebstrap): apt installs its Depends, dspack, dsbench and dssync run"
  elif ! grep -q "running --customize-hook" chroot.log; then
    tail -3 chroot.log
    echo "note: mmdebstrap could not bootstrap bookworm here (no mirror?); the chroot check did not run"
  else
    cat chroot.log
    fail "the .deb in a clean chroot"
  fi
else
  echo "note: not root or no mmdebstrap; the clean-chroot check did not run"
fi
