#!/usr/bin/env bash
# The Python suite as `make test` runs it: every test on JOBS workers (pytest-xdist, one test file per
# worker at a time: the firmware tests build into their own temporary folders, so a QEMU run or an image
# build on one worker overlaps with the analyzer tests on the other). Usage: tools/run-pytest.sh JOBS
# [pytest args...]; JOBS=1 runs everything in one process.
# Fails when a run fails or collects no test.
set -u
jobs=$1
shift
py=${PY:-.venv/bin/python}
status=0
run() {
  "$py" -m pytest -q "$@"
  local rc=$?
  if [ "$rc" -eq 5 ]; then echo "pytest collected no tests: $*"; rc=1; fi
  if [ "$rc" -ne 0 ]; then status=$rc; fi
}
if [ "$jobs" -gt 1 ]; then
  run -n "$jobs" --dist loadfile "$@"
else
  run "$@"
fi
exit "$status"
