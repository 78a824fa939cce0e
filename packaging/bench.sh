#!/usr/bin/env bash
# Runs every benchmark (CTest label `bench`) and prints one table. Benchmarks print lines
#   BENCH <name> <value> <unit> [peer=<value>] [ratio=<x>] [target=<text>]
# which this script collects. Usage: bench.sh [ctest -R regex]
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ACCEL_BUILD_DIR:-$here/build}"
"$here/packaging/install-deps.sh"
"$here/packaging/build.sh"
log="$build/bench-output.log"
cd "$build"
status=0
ctest -L bench -V ${1:+-R "$1"} >"$log" 2>&1 || status=$?
echo
printf '%-44s %14s %-10s %14s %8s  %s\n' benchmark value unit peer ratio target
printf '%-44s %14s %-10s %14s %8s  %s\n' "$(printf '%.0s-' {1..44})" "--------------" "----------" "--------------" "--------" "------"
grep -oE 'BENCH .*' "$log" | while read -r _ name value unit rest; do
  peer="" ratio="" target=""
  for field in $rest; do
    case "$field" in
      peer=*) peer="${field#peer=}" ;;
      ratio=*) ratio="${field#ratio=}" ;;
      target=*) target="${field#target=}" ;;
    esac
  done
  printf '%-44s %14s %-10s %14s %8s  %s\n' "$name" "$value" "$unit" "$peer" "$ratio" "$target"
done
echo
echo "bench.sh: full output in $log"
if [[ $status -ne 0 ]]; then
  echo "bench.sh: some benchmarks failed (ctest exit $status)" >&2
fi
exit $status
