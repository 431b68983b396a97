#!/usr/bin/env bash
# Builds dspack and runs the test suite (unit + end-to-end) through ctest.
#   ./test.sh              RelWithDebInfo build in build/: every test, the slow ones included
#   ./test.sh --sanitize   ASan + UBSan build in build-asan/: all but the slow tests and the
#                          report checker's self-test (ctest labels slow, checker)
#   ./test.sh --tsan       ThreadSanitizer build in build-tsan/: the unit tests and the
#                          end-to-end tests of the project's own threads (ctest label threaded)
# Warnings are errors in the project's own code (DSPACK_WERROR=OFF in the environment: not).
# Installs its own prerequisites with apt-get (Debian 12) when they are missing.
set -euo pipefail
cd "$(dirname "$0")"
source scripts/deps.sh
dspack_install_deps
werror=-DDSPACK_WERROR=${DSPACK_WERROR:-ON}
# Line tables only (-g1): stack traces keep file:line, and the three CI builds compile about 14 %
# faster than with full debug info (-g). The sanitizer builds leave out the micro-benchmarks,
# which no test runs, and the Python package (an instrumented extension would need the sanitizer
# runtime preloaded into Python), and are built without MPI (DSPACK_MPI=OFF: Open MPI is not
# instrumented; the plain pass runs the MPI tests, and these passes build the no-MPI variant).
# The ASan build (Debug) is optimised at -O1, as the sanitizer's own docs advise: measured on
# this 2-core machine, its tests took 105 s against 164 s at -O0 and its build 270 s against
# 207 s; the tests are the larger share on the slower CI host.
# Unity builds (CMAKE_UNITY_BUILD: a library's or a tool's files compiled in batches of 8): measured
# here, a clean plain build took 341 s against 464 s one file at a time (the unit tests then still
# one by one). A developer's build (cmake without it) stays file by file, so an include missing
# from one file is still caught there and by the installed-header check.
g1=(-DCMAKE_CXX_FLAGS_RELWITHDEBINFO="-O2 -g1 -DNDEBUG" -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1"
    -DCMAKE_UNITY_BUILD=ON)

case "${1:-}" in
  "")
    dir=build
    dspack_build "$dir" "$werror" "${g1[@]}"
    select=()
    ;;
  --sanitize)
    dir=build-asan
    BUILD_TYPE=Debug dspack_build "$dir" -DDSPACK_SANITIZE=ON "$werror" "${g1[@]}" \
      -DDSPACK_MICRO_BENCH=OFF -DDSPACK_PYTHON=OFF -DDSPACK_MPI=OFF
    # Smaller end-to-end datasets and fewer kill rounds: the sanitizers make every byte slower
    # (at 2000 samples e2e_formats alone took 6.4 of this pass's minutes, at 1000 still 3.2;
    # at 500 the four tests that size their data by it pass in the plain build too). The plain
    # pass runs the full sizes.
    export DSPACK_E2E_SAMPLES=${DSPACK_E2E_SAMPLES:-500}
    export DSPACK_KILL_ROUNDS=${DSPACK_KILL_ROUNDS:-4}
    # e2e_locks: 2 races of each kind (the plain pass runs 5): at 5 it was this pass's longest
    # test, 185 s (stop 48's CI); 68 s at 2.
    export DSPACK_LOCK_TRIALS=${DSPACK_LOCK_TRIALS:-2}
    # The [exhaustive] byte-flip loops flip every 7th byte (and the last): the plain pass flips
    # every byte; under ASan every byte cost 7 of this pass's minutes (tests/test_util.h). The
    # same stride thins convert --force's crash points (53 s of the plain pass's unit_pack).
    export DSPACK_EXHAUSTIVE_STRIDE=${DSPACK_EXHAUSTIVE_STRIDE:-7}
    # e2e_lmdb_damage's 500-mutant corpus through the CLIs: every 25th (3 processes a mutant;
    # all 500 run in the plain pass and in process in unit_formats here); and every 25th of its
    # 128-offset scan of pages 2-3 (2 processes an offset: 62 s of this pass when all ran).
    export DSPACK_LMDB_MUTANT_STRIDE=${DSPACK_LMDB_MUTANT_STRIDE:-25}
    # e2e_nfs at 300 samples (its cases are about the server and the client's errors, which a few
    # shards exercise as well as many): at 1000 it took 148 s, the last test of this pass.
    export DSPACK_E2E_NFS_SAMPLES=${DSPACK_E2E_NFS_SAMPLES:-300}
    # e2e_s3 at 300 samples: its cases are the requests and the server's errors; most of its time
    # is the gateway's start and the converts, not the samples.
    export DSPACK_E2E_S3_SAMPLES=${DSPACK_E2E_S3_SAMPLES:-300}
    export ASAN_OPTIONS=${ASAN_OPTIONS:-abort_on_error=1:detect_leaks=1}
    export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
    # The 4 GiB and 70,000-member cases (slow) and check_report.py's self-test (checker: Python
    # and chromium) run once, in the plain pass.
    select=(-LE 'slow|checker')
    ;;
  --tsan)
    dir=build-tsan
    # Optimised (-O2 -g): TSan is slow enough, and optimisation hides no race it can see.
    BUILD_TYPE=RelWithDebInfo dspack_build "$dir" -DDSPACK_TSAN=ON "$werror" "${g1[@]}" \
      -DDSPACK_MICRO_BENCH=OFF -DDSPACK_PYTHON=OFF -DDSPACK_MPI=OFF
    export DSPACK_E2E_SAMPLES=${DSPACK_E2E_SAMPLES:-500}
    # e2e_nfs at 300 samples: its threads are the connections' event loops, which a few shards
    # exercise as well as many; at 1000 it took 276 s of this pass (stop 45's CI).
    export DSPACK_E2E_NFS_SAMPLES=${DSPACK_E2E_NFS_SAMPLES:-300}
    # tests/tsan.supp: uninstrumented libraries (TBB, libfuse, liburing), a reason per entry.
    export TSAN_OPTIONS=${TSAN_OPTIONS:-suppressions=$PWD/tests/tsan.supp:halt_on_error=1:second_deadlock_stack=1}
    select=(-L 'unit|threaded' -LE slow)
    ;;
  *)
    echo "usage: ./test.sh [--sanitize | --tsan]" >&2
    exit 2
    ;;
esac
ctest --test-dir "$dir" --output-on-failure -j2 "${select[@]}"
