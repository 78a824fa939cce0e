#!/usr/bin/env bash
# Coverage-guided fuzzing of the parsers (tests/fuzz) with libFuzzer under ASan + UBSan.
# Configures a separate clang build in build-fuzz (no GUI, no libtorch: only the parser libraries
# and the fuzz targets compile there), builds the targets one job at a time, and runs each.
#
#   packaging/fuzz.sh [-t SECONDS] [-n RUNS] [-s] [target...]     (targets: fuzz_safetensors ...)
#
# -t: seconds per target (default 60); -n: also stop a target after this many executions (whichever
# comes first); -s: skip the build (the targets are built already, e.g. while others hold the lock).
# The table gives per target the executions, seconds, executions per second, libFuzzer's coverage
# (cov: edges) and features (ft:) at the end, and the inputs of the working corpus.
# New inputs a run finds go to build-fuzz/fuzz-corpus/<target>, never into the committed seeds
# (tests/fuzz/corpus); crashes, leaks and timeouts go to build-fuzz/fuzz-artifacts with the input
# that caused them. Every input gets 10 s and 2 GiB at most; a single allocation over 1 GiB is a
# finding. Exit status 1 when any target found something.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ACCEL_FUZZ_BUILD_DIR:-$here/build-fuzz}"
seconds=60
runs=""
build_first=1
while getopts "t:n:sh" option; do
  case "$option" in
    t) seconds="$OPTARG" ;;
    n) runs="$OPTARG" ;;
    s) build_first=0 ;;
    h) sed -n '2,16p' "$0"; exit 0 ;;
    *) sed -n '2,16p' "$0" >&2; exit 2 ;;
  esac
done
shift $((OPTIND - 1))
all=(fuzz_safetensors fuzz_checkpointindex fuzz_modelconfig fuzz_tokenizer fuzz_metrics fuzz_config fuzz_launchargs
  fuzz_serverequest fuzz_deepspeed fuzz_jobfile fuzz_textsteps fuzz_mergeindex)
targets=("$@")
[[ ${#targets[@]} -eq 0 ]] && targets=("${all[@]}")
if ! command -v clang++ >/dev/null; then
  echo "fuzz.sh: clang++ is not installed (Debian: apt-get install clang); libFuzzer comes with it" >&2
  exit 2
fi

if [[ ! -f "$build/CMakeCache.txt" ]]; then
  cmake -S "$here" -B "$build" -G Ninja \
    -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_BUILD_TYPE=RelWithDebInfo \
    -DACCEL_BUILD_GUI=OFF -DACCEL_BUILD_TORCH=OFF -DACCEL_WERROR=OFF -DACCEL_FUZZ=ON \
    "-DCMAKE_C_FLAGS=-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer" \
    "-DCMAKE_CXX_FLAGS=-fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer" \
    "-DCMAKE_EXE_LINKER_FLAGS=-fsanitize=address,undefined"
fi
# The machine is shared: builds take the shared build lock and one job.
if [[ $build_first -eq 1 ]]; then
  flock /tmp/accel-build.lock cmake --build "$build" --target "${targets[@]}" -j1
fi

found=0
mkdir -p "$build/fuzz-artifacts"
printf '%-22s %12s %7s %8s %7s %8s %8s  %s\n' target executions seconds exec/s cov ft corpus result
for target in "${targets[@]}"; do
  name="${target#fuzz_}"
  work="$build/fuzz-corpus/$name"
  mkdir -p "$work"
  log="$build/fuzz-artifacts/$target.log"
  limit=(-max_total_time="$seconds")
  [[ -n "$runs" ]] && limit+=(-runs="$runs")
  status=0
  started=$SECONDS
  UBSAN_OPTIONS=halt_on_error=1:print_stacktrace=1 ASAN_OPTIONS=detect_leaks=1 \
    "$build/tests/$target" "${limit[@]}" -timeout=10 -rss_limit_mb=2048 -malloc_limit_mb=1024 \
    -print_final_stats=1 -artifact_prefix="$build/fuzz-artifacts/$target-" \
    "$work" "$here/tests/fuzz/corpus/$name" >"$log" 2>&1 || status=$?
  executions=$(grep -oE 'stat::number_of_executed_units: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  elapsed=$((SECONDS - started))
  speed=$(grep -oE 'stat::average_exec_per_sec: *[0-9]+' "$log" | grep -oE '[0-9]+$' || echo "?")
  last=$(grep -E '^#[0-9]+.*cov: [0-9]+ ft: [0-9]+' "$log" | tail -1)
  cov=$(grep -oE 'cov: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo "?")
  features=$(grep -oE 'ft: [0-9]+' <<<"$last" | grep -oE '[0-9]+' || echo "?")
  inputs=$(find "$work" -type f | wc -l)
  result="ok"
  if [[ $status -ne 0 ]]; then
    result="FOUND (exit $status): $(grep -m1 -oE 'ERROR: .*|==[0-9]+== ?ERROR.*|SUMMARY: .*' "$log" || echo "see log") -> $log"
    found=1
  fi
  printf '%-22s %12s %7s %8s %7s %8s %8s  %s\n' "$target" "$executions" "$elapsed" "$speed" "$cov" "$features" \
    "$inputs" "$result"
done
exit $found
