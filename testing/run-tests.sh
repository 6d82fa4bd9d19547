#!/usr/bin/env bash
# `make test`: ctest in BUILD, then the tests that were skipped, counted and
# named. A skipped test did not pass: under CI (CI=true, as CI sets it) any
# skipped test, or a run with no tests, fails the run.
#
#   testing/run-tests.sh BUILD [ctest arguments ...]
set -uo pipefail
build="$1"
shift
cd "$build" || exit 1
results="$PWD/Testing/slabcast-results.xml"
rm -f "$results"
ctest --output-on-failure --no-tests=error --output-junit "$results" "$@"
rc=$?
[ -f "$results" ] || { echo "run-tests: ctest wrote no results ($results)" >&2; exit $((rc ? rc : 1)); }
# ctest's JUnit file marks a test that exited with its SKIP_RETURN_CODE as
# status="notrun" with a <skipped> element, and keeps what it printed (ctest's
# own output shows a skipped test's output only with -V).
python3 - "$results" <<'PY'
import sys
import xml.etree.ElementTree as ET
skipped = [c for c in ET.parse(sys.argv[1]).getroot().iter("testcase")
           if c.find("skipped") is not None or c.get("status") == "notrun"]
print("run-tests: %d test(s) skipped" % len(skipped))
for c in skipped:
    out = c.findtext("system-out") or ""
    why = [line for line in out.splitlines() if line.startswith("SKIPPED")] or ["(it said nothing)"]
    print("  %s: %s" % (c.get("name"), "; ".join(why)))
sys.exit(3 if skipped else 0)
PY
count_rc=$?
if [ "$count_rc" -ne 0 ] && [ "$count_rc" -ne 3 ]; then
  echo "run-tests: cannot read $results" >&2
  exit 1
fi
if [ "$count_rc" -eq 3 ] && [ "${CI:-}" = "true" ]; then
  echo "run-tests: CI=true: a skipped test is a failed test here" >&2
  exit 1
fi
exit "$rc"
