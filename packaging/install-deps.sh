#!/usr/bin/env bash
# Installs the Debian 12 packages Accel Studio needs to build, test and run: only those missing.
# Idempotent; works as root or through sudo. Usage: install-deps.sh [--bench]
#   --bench  also the peers the benchmarks compare against (Debian's python3-torch for torchrun
#            and Python DDP).
set -euo pipefail

packages=(
  # build
  cmake ninja-build g++ pkg-config git
  qt6-base-dev qt6-base-dev-tools qt6-svg-dev libgl-dev
  libqcustomplot-dev libqcustomplot2.1-qt6
  libtorch-dev libgloo-dev
  libyaml-cpp-dev libssh-dev libexpected-dev nlohmann-json3-dev libpcre2-dev
  # run: libtorch calls whatever libblas.so.3 is selected; OpenBLAS (OpenMP build, matching
  # libtorch's own OpenMP threads) instead of the reference BLAS (~40x slower matmuls).
  libopenblas0-openmp
  python3
  # tests: a real sshd on loopback, screenshots under Xvfb
  openssh-server openssh-client xvfb xauth procps iproute2
)
if [[ "${1:-}" == "--bench" ]]; then
  packages+=(python3-torch)
fi

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages are installed"
  exit 0
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
echo "install-deps: done"
