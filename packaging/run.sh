#!/usr/bin/env bash
# The one command that installs what is missing, builds, and starts Accel Studio with its demo.
# Without a display it runs the same demo in the terminal with a progress bar.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ACCEL_BUILD_DIR:-$here/build}"
"$here/packaging/install-deps.sh"
"$here/packaging/build.sh"
if [[ -n "${DISPLAY:-}${WAYLAND_DISPLAY:-}" && -x "$build/bin/accel-studio" ]]; then
  exec "$build/bin/accel-studio" --demo "$@"
fi
echo "run.sh: no display (DISPLAY/WAYLAND_DISPLAY unset): running the demo in the terminal."
exec "$build/bin/accel" demo "$@"
