#!/usr/bin/env bash
# Installs what kiln needs to build and test on Debian 12. Safe to run repeatedly: when every
# package is already installed it does nothing (and does not touch apt).
set -euo pipefail

# graphviz: the tests parse kiln::to_dot's output with dot; python3-numpy: a test reads kiln's
# .npy files with numpy.load.
PACKAGES=(build-essential cmake ninja-build g++ libgtest-dev libgmock-dev pkg-config
          libdnnl-dev libopenblas-dev libsleef-dev libstb-dev zlib1g-dev
          dataset-fashion-mnist
          libeigen3-dev graphviz python3-numpy
          ocl-icd-opencl-dev opencl-headers libclblast-dev pocl-opencl-icd clinfo
          clang libclang-rt-14-dev libomp-14-dev)

missing=()
for pkg in "${PACKAGES[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q '^install ok installed$'; then
    missing+=("$pkg")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all build dependencies are installed"
  exit 0
fi

echo "setup: installing ${missing[*]}"
if [ "$(id -u)" -eq 0 ]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "setup: need root (or sudo) to install: ${missing[*]}" >&2
  exit 1
fi

"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get update
"${as_root[@]}" env DEBIAN_FRONTEND=noninteractive \
  apt-get install -y --no-install-recommends "${missing[@]}"
