#!/usr/bin/env bash
# The whole test suite (all but benchmarks) under AddressSanitizer + UndefinedBehaviorSanitizer
# (LeakSanitizer included), in its own build folder.
#
#   packaging/sanitize.sh [-s] [-j JOBS] [-b BUILD_DIR] [-S SANITIZERS] [-- ctest arguments...]
#
# -s: skip configuring and building (the folder is built already); -j: build jobs (default: all
# cores, at nice 10); -b: build folder (default build-asan; build-tsan is the usual one for
# -S thread); -S: the ACCEL_SANITIZE value (default address,undefined). Arguments after `--` go to
# ctest, e.g. `-- -R tst_chaos` or `-- -L process`.
# The build is configured like packaging/build.sh plus ACCEL_SANITIZE, at -O1 -g1 (sanitizer
# builds are slow to compile and to run; -O1 is what the sanitizers recommend) and without -Werror
# (GCC 12 warns falsely, -Wmaybe-uninitialized inside the standard library's std::regex and
# std::variant, once the sanitizers instrument them). Every test and every program a test starts
# gets the options and the suppressions of tests/sanitizers (cmake/AccelTesting.cmake); reports
# land in BUILD_DIR/sanitizer-reports/report.<pid> and are printed at the end. Exit status 1 when
# a test failed or any report was written.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="$here/build-asan"
sanitizers="address,undefined"
jobs="$(nproc)"
build_first=1
while getopts "sj:b:S:h" option; do
  case "$option" in
    s) build_first=0 ;;
    j) jobs="$OPTARG" ;;
    b) build="$OPTARG" ;;
    S) sanitizers="$OPTARG" ;;
    h) sed -n '2,17p' "$0"; exit 0 ;;
    *) sed -n '2,17p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
case "$sanitizers" in
  address | undefined | address,undefined | undefined,address | thread | thread,undefined | undefined,thread) ;;
  *) echo "sanitize.sh: -S $sanitizers: expected address,undefined or thread (optionally with undefined)" >&2; exit 2 ;;
esac
t0=$(date +%s)
if [[ $build_first -eq 1 ]]; then
  cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DACCEL_PYTHON_ENV="${ACCEL_PYTHON_ENV:-$here/.venv}" -DACCEL_SANITIZE="$sanitizers" -DACCEL_WERROR=OFF \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1 -DNDEBUG" >/dev/null
  nice -n 10 cmake --build "$build" -j "$jobs"
fi
t1=$(date +%s)
reports="$build/sanitizer-reports"
mkdir -p "$reports"
rm -f "$reports"/report.*
status=0
ctest --test-dir "$build" -LE bench -j1 --timeout 1200 --output-on-failure "$@" || status=$?
t2=$(date +%s)
shopt -s nullglob
found=("$reports"/report.*)
for report in "${found[@]}"; do
  echo "=== $report"
  cat "$report"
done
echo "sanitize.sh ($sanitizers): build $((t1 - t0)) s, tests $((t2 - t1)) s, ${#found[@]} sanitizer report(s) in $reports"
[[ ${#found[@]} -eq 0 ]] || status=1
exit $status
