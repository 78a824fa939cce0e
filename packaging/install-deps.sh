#!/usr/bin/env bash
# Installs what Accel Studio needs to build, test and run, only what is missing:
#  1. the Debian 12 packages (as root or through sudo);
#  2. the project's Python environment ($ACCEL_PYTHON_ENV, default .venv in the source folder, outside the
#     build folder so a clean rebuild keeps it) with the versions pinned in packaging/python-requirements.txt:
#     PyTorch 2.x's wheel, whose libtorch accel-worker links, and the Hugging Face packages that the compat
#     tests and the benchmarks compare against. About 2.8 GB to download (torch and NVIDIA's CUDA wheels),
#     5 GB installed.
# Idempotent: a second run installs nothing and says so.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

packages=(
  # build
  cmake ninja-build g++ pkg-config git
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev libgl-dev
  libqcustomplot-dev libqcustomplot2.1-qt6
  # gloo's headers only: c10d's ProcessGroupGloo.hpp includes them and the torch wheel does not ship
  # them (gloo itself is compiled into libtorch; ARCHITECTURE.md, "gloo headers")
  libgloo-dev
  libyaml-cpp-dev libssh-dev libssl-dev libexpected-dev nlohmann-json3-dev libpcre2-dev zlib1g-dev
  # trackers read live (docs/trackers.md): TensorBoard's protobuf records, trackio's SQLite database
  libprotobuf-dev protobuf-compiler libqt6sql6-sqlite
  # Hub model ids (docs/device-map.md): config.json and safetensors headers over HTTP
  libcurl4-openssl-dev
  # accel merge-weights: the torch.save blobs (zip archives) inside torch.distributed.checkpoint files
  libzip-dev
  # the Python environment
  python3 python3-venv
  # tests: a real sshd on loopback, screenshots under Xvfb
  openssh-server openssh-client xvfb xauth procps iproute2
  # tests: a single-node SLURM cluster (munged, slurmctld, slurmd) that tst_slurm starts in the foreground
  slurmctld slurmd slurm-client munge
  # packaging/package.sh (tst_hostsinstall and the Cluster tab's install test make the accel package):
  # dpkg-deb and help2man for the man pages
  dpkg-dev help2man
)
missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

install_debian_packages() {
if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} Debian packages are installed"
  return 0
fi

sudo=""
if [[ $(id -u) -ne 0 ]]; then
  if command -v sudo >/dev/null; then
    sudo="sudo"
  else
    echo "install-deps: need root or sudo to install: ${missing[*]}" >&2
    exit 1
  fi
fi

echo "install-deps: installing ${#missing[@]} missing packages: ${missing[*]}"
$sudo apt-get update -q
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
echo "install-deps: Debian packages done"
}

# The Python environment is current when its stamp holds the hash of the requirements it was made from.
install_python_environment() {
  local env_dir="${ACCEL_PYTHON_ENV:-$here/.venv}"
  local requirements="$here/packaging/python-requirements.txt"
  local stamp="$env_dir/.accel-requirements.sha256"
  local want
  want="$(sha256sum "$requirements" | cut -d' ' -f1)"
  if [[ -x "$env_dir/bin/python" && -f "$stamp" && "$(cat "$stamp")" == "$want" ]]; then
    echo "install-deps: Python environment $env_dir is up to date (packaging/python-requirements.txt unchanged)"
    return 0
  fi
  echo "install-deps: installing the Python environment into $env_dir (about 2.8 GB to download)"
  local start=$SECONDS
  rm -f "$stamp"
  # Debian's interpreter, whatever else is first on PATH.
  /usr/bin/python3 -m venv "$env_dir"
  "$env_dir/bin/python" -m pip install --no-input --disable-pip-version-check --progress-bar off -q \
    -r "$requirements"
  echo "$want" >"$stamp"
  echo "install-deps: Python environment done in $((SECONDS - start)) s"
}

install_debian_packages
install_python_environment
