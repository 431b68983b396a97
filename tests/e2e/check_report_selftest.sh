#!/usr/bin/env bash
# Self-test of check_report.py: the unit test's fixture report (3 layouts x local/slowfs x
# cold/warm, AU, a sweep) must pass, and a report that is wrong in each way the checker knows
# must fail with its message: a bar value off, another title, a recommendation not shown, a page
# that renders blank. Needs DSPACK_TESTS (the dspack_tests binary) and chromium; exits 77 (skip)
# without chromium.
set -euo pipefail
: "${DSPACK_TESTS:?set DSPACK_TESTS to the dspack_tests binary}"
HERE=$(cd "$(dirname "$0")" && pwd)
PY=/usr/bin/python3
CHECK="$HERE/check_report.py"
[ -x "${CHROMIUM:-/usr/bin/chromium}" ] || { echo "skip: no chromium"; exit 77; }
WORK=$(mktemp -d "${TMPDIR:-/tmp}/check-report-XXXXXX")
trap 'rm -rf "$WORK"' EXIT
cd "$WORK"

fail() { echo "FAIL: $*" >&2; exit 1; }

DSPACK_REPORT_OUT="$WORK/report.html" "$DSPACK_TESTS" "[bench]" >/dev/null
[ -s report.html ] && [ -s report.json ] || fail "dspack_tests wrote no report.html/report.json"
"$PY" "$CHECK" report.html report.json --png report.png || fail "the fixture report does not pass"
echo "ok - fixture report passes"

# expect_fail NAME HTML JSON TEXT: the checker exits 1 and says TEXT.
expect_fail() {
  set +e
  "$PY" "$CHECK" "$2" "$3" >out.txt 2>err.txt
  local rc=$?
  set -e
  [ $rc -eq 1 ] || { cat out.txt err.txt; fail "$1: exit $rc, expected 1"; }
  grep -qF -- "$4" err.txt || { cat err.txt; fail "$1: stderr lacks '$4'"; }
  echo "ok - $1 fails: $(head -c 160 err.txt)"
}

"$PY" - <<'PY'
import json, re
html = open("report.html").read()
doc = json.load(open("report.json"))
run = doc["compare"]["runs"][0]
key = f'{run["layout"]}/{run["storage"]}/{run["cache"]}/samples_per_sec'
bar = re.compile(r'(<rect [^>]*data-key="%s" data-value=")([^"]*)"' % re.escape(key))
assert bar.search(html), key
open("bar_off.html", "w").write(bar.sub(lambda m: m.group(1) + str(float(m.group(2)) * 1.001) + '"', html))
open("blank.html", "w").write(html.replace("<style>", "<style>html{visibility:hidden}", 1))
for name, field, value in (("title", "source", "/elsewhere"), ("rec", "recommendation", "use zip")):
    d = json.loads(json.dumps(doc))
    d["compare"][field] = value
    json.dump(d, open(f"{name}.json", "w"))
PY
expect_fail "a bar value off by 0.1%" bar_off.html report.json "data-value"
expect_fail "another title" report.html title.json "title is"
expect_fail "a recommendation not shown" report.html rec.json "recommendation"
expect_fail "a page that renders blank" blank.html report.json "looks blank"
