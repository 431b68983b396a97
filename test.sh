#!/usr/bin/env bash
# Builds dspack and runs the whole test suite (unit + end-to-end) through ctest.
#   ./test.sh              RelWithDebInfo build in build/
#   ./test.sh --sanitize   ASan + UBSan build in build-asan/
# Installs its own prerequisites with apt-get (Debian 12) when they are missing.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/deps.sh
dspack_install_deps

if [ "${1:-}" = "--sanitize" ]; then
  dir=build-asan
  BUILD_TYPE=Debug dspack_build "$dir" -DDSPACK_SANITIZE=ON
  # Smaller end-to-end datasets: the sanitizers make every byte slower.
  export DSPACK_E2E_SAMPLES=${DSPACK_E2E_SAMPLES:-2000}
  export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
  export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
else
  dir=build
  dspack_build "$dir"
fi
ctest --test-dir "$dir" --output-on-failure -j2
