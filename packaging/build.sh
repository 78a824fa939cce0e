#!/usr/bin/env bash
# Configures and builds Accel Studio into build/ (or $ACCEL_BUILD_DIR). Used by run.sh and test.sh.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ACCEL_BUILD_DIR:-$here/build}"
jobs="${ACCEL_JOBS:-$(nproc)}"
start=$(date +%s)
cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo \
  -DACCEL_PYTHON_ENV="${ACCEL_PYTHON_ENV:-$here/.venv}" "$@" >/dev/null
cmake --build "$build" -j "$jobs"
echo "build: done in $(( $(date +%s) - start )) s ($build)"
