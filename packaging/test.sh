#!/usr/bin/env bash
# The one command that installs what is missing, builds, and runs every test except benchmarks.
# Exit status is non-zero when anything fails.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ACCEL_BUILD_DIR:-$here/build}"
t0=$(date +%s)
"$here/packaging/install-deps.sh"
t1=$(date +%s)
"$here/packaging/build.sh"
t2=$(date +%s)
cd "$build"
status=0
ctest -LE bench --output-on-failure -j "${ACCEL_TEST_JOBS:-2}" --timeout 900 || status=$?
t3=$(date +%s)
echo "test.sh: install-deps $((t1 - t0)) s, build $((t2 - t1)) s, tests $((t3 - t2)) s"
exit $status
