# Shared helpers for end-to-end tests. Each test sources this, runs the real dspack binary
# ($DSPACK, set by ctest) on real files in a scratch directory, and exits non-zero on failure.
set -euo pipefail
: "${DSPACK:?set DSPACK to the dspack binary}"
: "${SRC_DIR:=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}"
PY=/usr/bin/python3
WORK=$(mktemp -d "${TMPDIR:-/tmp}/dspack-e2e-XXXXXX")
cleanup() {
  for m in "${MOUNTS[@]:-}"; do [ -n "$m" ] && umount "$m" 2>/dev/null || true; done
  rm -rf "$WORK"
}
MOUNTS=()
trap cleanup EXIT
# A command that ends the test through set -e names itself (a bare exit would be silent in CI).
trap 'rc=$?; [[ $- == *e* ]] && echo "FAIL: ${BASH_SOURCE[0]##*/}:$LINENO: exit $rc: $BASH_COMMAND" >&2' ERR
cd "$WORK"

fail() { echo "FAIL: $*" >&2; exit 1; }
pass() { echo "ok - $*"; }

# expect_exit CODE CMD...: runs CMD, requires exit code CODE; stderr kept in $WORK/last.err.
expect_exit() {
  local want=$1; shift
  set +e
  "$@" >"$WORK/last.out" 2>"$WORK/last.err"
  local got=$?
  set -e
  if [ "$got" -ne "$want" ]; then
    echo "--- stdout"; cat "$WORK/last.out"; echo "--- stderr"; cat "$WORK/last.err"
    fail "expected exit $want, got $got: $*"
  fi
}

# expect_err TEXT: the last command's stderr contains TEXT, and is a single line.
expect_err() {
  grep -qF -- "$1" "$WORK/last.err" || { cat "$WORK/last.err"; fail "stderr lacks: $1"; }
}

# no_final_names DIR: nothing under a final dataset name is left in DIR (or DIR is gone).
no_final_names() {
  [ -d "$1" ] || return 0
  if ls "$1" | grep -E '^(manifest\.json|index\.dsi|dspack\.json|data\.mdb|shard-[0-9]+\.(dsr|tar|tfrecord|rec|idx|lst))$' >/dev/null; then
    ls -la "$1"; fail "final names left in $1 after a failed run"
  fi
}
