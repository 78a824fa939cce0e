#!/usr/bin/env bash
# Writes Accel Studio's Debian packages into dist/ (docs/packaging.md):
#   accel         the command line (and the demo job, corpus and Python tracker), Debian's libraries only
#   accel-studio  the desktop application, its menu entry, icon and AppStream metainfo
#   accel-worker  the libtorch runtime with the CPU libraries of the libtorch it was built against in
#                 /usr/lib/accel-studio (no Python environment needed); runs on the CPU
#   accel-worker-cuda  (CUDA builds) the runtime's CUDA plugin and the rest of that libtorch with NVIDIA's
#                 CUDA libraries, beside them: GPUs and NCCL; depends on accel-worker
# Not part of the normal build: it builds the three programs (and the CUDA plugin) if needed, installs each package's CMake
# component (cmake/AccelInstall.cmake) into a staging tree, writes man pages from --help (help2man),
# the copyright file and changelog, computes Depends with dpkg-shlibdeps and builds the .deb files.
#
# Usage: packaging/package.sh [--build DIR] [--out DIR] [--only accel,accel-studio,accel-worker,accel-worker-cuda]
#                             [--no-build]
# Install:  sudo apt install ./dist/*.deb   (without a GPU: all but accel-worker-cuda)
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${ACCEL_BUILD_DIR:-$here/build}"
out="$here/dist"
only="accel,accel-studio,accel-worker,accel-worker-cuda"
build_first=1
only_given=0

usage() { sed -n '2,15p' "${BASH_SOURCE[0]}" | sed 's/^# \{0,1\}//'; }
while (($#)); do
  case "$1" in
  --build) build="$2"; shift 2 ;;
  --out) out="$2"; shift 2 ;;
  --only) only="$2"; only_given=1; shift 2 ;;
  --no-build) build_first=0; shift ;;
  -h | --help) usage; exit 0 ;;
  *) echo "package.sh: unknown option '$1' (see --help)" >&2; exit 2 ;;
  esac
done
IFS=, read -r -a wanted <<<"$only"
for p in "${wanted[@]}"; do
  case "$p" in accel | accel-studio | accel-worker | accel-worker-cuda) ;; *)
    echo "package.sh: --only: unknown package '$p': expected accel, accel-studio, accel-worker, accel-worker-cuda" >&2
    exit 2 ;;
  esac
done

# The packaging tools, installed when missing (as root or through sudo).
tools=(dpkg-dev help2man)
missing=()
for t in "${tools[@]}"; do
  dpkg-query -W -f='${Status}' "$t" 2>/dev/null | grep -q "install ok installed" || missing+=("$t")
done
if ((${#missing[@]})); then
  sudo=""
  [[ $(id -u) -eq 0 ]] || sudo="sudo"
  echo "package.sh: installing ${missing[*]}"
  $sudo apt-get update -q
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

if ((build_first)) && [[ ! -f "$build/CMakeCache.txt" ]]; then
  # A folder only for packages: no tests.
  cmake -S "$here" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DACCEL_BUILD_TESTS=OFF \
    -DACCEL_PYTHON_ENV="${ACCEL_PYTHON_ENV:-$here/.venv}" >/dev/null
fi
# The CUDA package exists where the build has the runtime's CUDA plugin (libtorch with CUDA); without
# it, the default set leaves that package out and asking for it by name is refused.
has_cuda_plugin() { [[ -f "$build/build.ninja" ]] && grep -q '^build lib/libaccel_runtime_cuda.so:' "$build/build.ninja"; }
if [[ " ${wanted[*]} " == *" accel-worker-cuda "* ]] && ! has_cuda_plugin; then
  if ((only_given)); then
    echo "package.sh: accel-worker-cuda: the build in $build has no CUDA (no libaccel_runtime_cuda.so)" >&2; exit 2
  fi
  kept=()
  for p in "${wanted[@]}"; do [[ "$p" == accel-worker-cuda ]] || kept+=("$p"); done
  wanted=("${kept[@]}")
fi
# What each package carries that the build makes: its program, or the worker's CUDA plugin.
targets=()
for p in "${wanted[@]}"; do
  [[ "$p" == accel-worker-cuda ]] && targets+=(accel_runtime_cuda) || targets+=("$p")
done
if ((build_first)); then
  cmake --build "$build" --target "${targets[@]}"
fi
for t in "${targets[@]}"; do
  built="$build/bin/$t"
  [[ "$t" == accel_runtime_cuda ]] && built="$build/lib/libaccel_runtime_cuda.so"
  [[ -f "$built" ]] || { echo "package.sh: $built is not built (run without --no-build)" >&2; exit 1; }
done

cache_value() { sed -n "s/^$1:[A-Z]*=//p" "$build/CMakeCache.txt"; }
version="$(cache_value CMAKE_PROJECT_VERSION)"
torch_version="$(sed -n 's/^#define ACCEL_TORCH_VERSION "\(.*\)"/\1/p' "$build/generated/buildinfo.h")"
python_env="$(cache_value ACCEL_PYTHON_ENV)"
arch="$(dpkg --print-architecture)"
# Reproducible dates: the commit's time when this is a git checkout.
export SOURCE_DATE_EPOCH="${SOURCE_DATE_EPOCH:-$(git -C "$here" log -1 --format=%ct 2>/dev/null || date +%s)}"
commit="$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo unknown)"
maintainer="${ACCEL_PACKAGE_MAINTAINER:-$(git -C "$here" log -1 --format='%an <%ae>' 2>/dev/null || true)}"
[[ -n "$maintainer" ]] || { echo "package.sh: set ACCEL_PACKAGE_MAINTAINER='Name <email>'" >&2; exit 2; }

work="$(mktemp -d "${TMPDIR:-/tmp}/accel-package.XXXXXX")"
trap 'rm -rf "$work"' EXIT
mkdir -p "$out" "$work/debian"
: >"$work/debian/control" # dpkg-shlibdeps runs in a folder that looks like a source package

components_of() {
  case "$1" in
  accel) echo cli ;; accel-studio) echo studio ;; accel-worker) echo "worker libtorch" ;; accel-worker-cuda) echo cuda ;;
  esac
}
summary_of() {
  case "$1" in
  accel) echo "configure, launch and monitor PyTorch training (Accel Studio's command line)" ;;
  accel-studio) echo "desktop studio for PyTorch training with Accelerate's conventions" ;;
  accel-worker) echo "one training or inference rank on Accel Studio's libtorch runtime" ;;
  accel-worker-cuda) echo "GPUs (CUDA, NCCL) for Accel Studio's libtorch runtime" ;;
  esac
}

write_copyright() { # package stage
  local doc="$2/usr/share/doc/$1"
  {
    echo "Accel Studio ($1 $version), built from commit $commit."
    echo
    echo "Copyright $(date -u -d "@$SOURCE_DATE_EPOCH" +%Y) the Accel Studio authors. The project's source carries no license file yet."
    if [[ "$1" == accel-worker* ]]; then
      local site licenses="$doc/licenses"
      site="$(echo "$python_env"/lib/python3*/site-packages)"
      mkdir -p "$licenses"
      echo
      echo "/usr/lib/accel-studio carries the shared libraries of these Python wheels (PyPI, as"
      echo "packaging/install-deps.sh installs them), stripped and with their search path set to their own"
      echo "folder, otherwise unchanged; their license texts are in /usr/share/doc/$1/licenses/:"
      local dist name sum carried
      declare -A seen=()
      # The wheels whose files this package carries (each wheel's RECORD lists its files).
      carried="$(find "$2/usr/lib/accel-studio" -name '*.so*' ! -name 'libaccel_runtime*' -printf '/%f,\n' 2>/dev/null)"
      for dist in "$site"/torch-*.dist-info "$site"/nvidia_*.dist-info; do
        grep -q -F -f <(echo "$carried") "$dist/RECORD" 2>/dev/null || continue
        name="$(basename "$dist" .dist-info)"
        echo "  $name: $(sed -n 's/^License\(-Expression\)\{0,1\}: //p' "$dist/METADATA" | head -1)"
        for file in "$dist"/licenses/*; do
          [[ -f "$file" ]] || continue
          sum="$(md5sum <"$file" | cut -c1-32)"
          if [[ -z "${seen[$sum]:-}" ]]; then
            seen[$sum]="$name-$(basename "$file")"
            cp "$file" "$licenses/${seen[$sum]}"
          fi
          echo "    $(basename "$file"): licenses/${seen[$sum]}"
        done
      done
    fi
  } >"$doc/copyright"
}

write_changelog() { # package stage
  local doc="$2/usr/share/doc/$1"
  {
    echo "$1 ($version) unstable; urgency=medium"
    echo
    echo "  * Built by packaging/package.sh from commit $commit (libtorch $torch_version)."
    echo
    echo " -- $maintainer  $(date -R -u -d "@$SOURCE_DATE_EPOCH")"
  } | gzip -9n >"$doc/changelog.gz"
}

write_man_page() { # package stage program
  local man="$2/usr/share/man/man1"
  mkdir -p "$man"
  QT_QPA_PLATFORM=offscreen help2man --no-info --no-discard-stderr --name="$(summary_of "$1")" \
    --output="$work/$3.1" "$2/usr/bin/$3"
  gzip -9n <"$work/$3.1" >"$man/$3.1.gz"
}

# The ELF files whose libraries the package needs from Debian: the programs, and the private libraries
# they load (ldd through their $ORIGIN RPATH inside the staging tree). Libraries carried but only opened
# by dlopen in some configurations (NCCL's and NVSHMEM's transports, ...) are not asked about.
# The CUDA package's root is the plugin; the worker's own libraries it needs come from the worker's
# package (its staging tree, `lookup`), which it depends on.
elf_files() { # stage lookup
  local stage="$1" f
  for f in "$stage"/usr/bin/* "$stage"/usr/lib/accel-studio/libaccel_runtime_cuda.so; do
    [[ -f "$f" ]] || continue
    echo "$f"
    LD_LIBRARY_PATH="$2" ldd "$f" | awk -v s="$stage/" 'index($3, s) == 1 { print $3 }'
  done | sort -u
}

build_package() { # package
  local pkg="$1" stage="$work/debian/$1" component
  mkdir -p "$stage/DEBIAN" "$stage/usr/share/doc/$pkg"
  for component in $(components_of "$pkg"); do
    cmake --install "$build" --prefix "$stage/usr" --component "$component" --strip >/dev/null
  done
  write_copyright "$pkg" "$stage"
  if [[ -f "$here/packaging/debian/$pkg.lintian-overrides" ]]; then
    mkdir -p "$stage/usr/share/lintian/overrides"
    cp "$here/packaging/debian/$pkg.lintian-overrides" "$stage/usr/share/lintian/overrides/$pkg"
  fi
  write_changelog "$pkg" "$stage"
  local program
  for program in "$stage"/usr/bin/*; do
    [[ -f "$program" ]] && write_man_page "$pkg" "$stage" "$(basename "$program")"
  done

  # The CUDA package's libraries need the worker's (libtorch_cpu.so, ...): a copy to look them up in, whose
  # libraries have no Debian dependency information; the control file's Depends names accel-worker itself.
  local lookup="$stage/usr/lib/accel-studio" search=()
  if [[ "$pkg" == accel-worker-cuda ]]; then
    for component in $(components_of accel-worker); do
      cmake --install "$build" --prefix "$work/lookup/usr" --component "$component" >/dev/null
    done
    lookup="$lookup:$work/lookup/usr/lib/accel-studio"
    search+=(--ignore-missing-info)
  fi
  local depends dir
  IFS=: read -r -a dirs <<<"$lookup"
  for dir in "${dirs[@]}"; do search+=("-l$dir"); done
  mapfile -t elves < <(elf_files "$stage" "$lookup")
  depends="$(cd "$work" && dpkg-shlibdeps -O "${search[@]}" "${elves[@]}" 2>"$work/shlibdeps.err" |
    sed -n 's/^shlibs:Depends=//p')" || { cat "$work/shlibdeps.err" >&2; exit 1; }
  # What it says about libtorch's and CUDA's own libraries (unversioned names, symbols left to the
  # program, needless NEEDED entries) is upstream's; the rest is shown.
  grep -v -e "$stage/" -e "can't extract name and version" -e "other similar warnings" "$work/shlibdeps.err" >&2 || true
  local size
  size="$(du -sk --exclude=DEBIAN "$stage" | cut -f1)"
  sed -e "s|@VERSION@|$version|g" -e "s|@ARCH@|$arch|g" -e "s|@MAINTAINER@|$maintainer|g" \
    -e "s|@INSTALLED_SIZE@|$size|g" -e "s|@DEPENDS@|$depends|g" -e "s|@TORCH_VERSION@|$torch_version|g" \
    "$here/packaging/debian/$pkg.control" >"$stage/DEBIAN/control"
  (cd "$stage" && find usr -type f -print0 | sort -z | xargs -0 md5sum >DEBIAN/md5sums)
  find "$stage" -type d -exec chmod 0755 {} +
  # The worker's libraries (3.3 GB, mostly CUDA) with gzip: xz takes far longer for little (libtorch_cuda.so,
  # 462 MB: gzip -6 70 % in 26 s, xz -1 60 % in 227 s on two busy cores; zstd -3 61 % in 1.4 s, but
  # bookworm's lintian calls a zstd member a malformed archive, though its dpkg reads it).
  local compress=(-Zxz)
  [[ "$pkg" == accel-worker* ]] && compress=(-Zgzip -z6)
  local deb="$out/${pkg}_${version}_${arch}.deb"
  rm -f "$out/${pkg}"_*.deb
  dpkg-deb --root-owner-group "${compress[@]}" --build "$stage" "$deb" >/dev/null
  echo "package.sh: $(basename "$deb") $(du -h "$deb" | cut -f1) (installed $((size / 1024)) MiB)"
}

start=$SECONDS
for p in "${wanted[@]}"; do build_package "$p"; done
echo "package.sh: done in $((SECONDS - start)) s: $out"
echo "Install: sudo apt install $out/*.deb"
