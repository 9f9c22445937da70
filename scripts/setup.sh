#!/usr/bin/env bash
# Installs what kiln needs to build and test on Debian 12. Safe to run repeatedly: when every
# package is already installed it does nothing (and does not touch apt).
set -euo pipefail

# graphviz: the tests parse kiln::to_dot's output with dot; python3-numpy: a test reads kiln's
# .npy files with numpy.load. libpng-dev, libturbojpeg0-dev, libgif-dev: the image decoders.
# libopenmpi-dev, openmpi-bin: kiln::distributed and its tests under mpirun. ccache: builds
# compile through it (cmake/compiler_cache.cmake).
PACKAGES=(build-essential cmake ninja-build ccache g++ libgtest-dev libgmock-dev pkg-config
          libdnnl-dev libopenblas-dev libsleef-dev libstb-dev zlib1g-dev libkissfft-dev
          libpng-dev libturbojpeg0-dev libgif-dev libopenmpi-dev openmpi-bin
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

# The ONNX export test runs kiln's models in ONNX Runtime (PyPI only; Debian has no package). It
# reports itself skipped where PyPI cannot be reached. The Python package (python/) is built with
# nanobind (and scikit-build-core for pip install .) and tested with pytest, against NumPy and JAX
# (jax[cpu]; PyTorch's wheel is 3 GB, so its tests skip where it is not installed).
ONNX_PIP=(onnx==1.23.2 onnxruntime==1.32.0 numpy)
PYTHON_PIP=(nanobind==3.1.0 scikit-build-core==0.11.6 pytest "jax[cpu]")
install_onnx_python() {
  if ! python3 -c "import numpy, onnx, onnxruntime" 2>/dev/null; then
    echo "setup: installing ${ONNX_PIP[*]} for $(command -v python3) with pip"
    python3 -m pip install --quiet --disable-pip-version-check "${ONNX_PIP[@]}" ||
      echo "setup: pip could not install ${ONNX_PIP[*]}: the ONNX Runtime check will be skipped"
  fi
  if ! python3 -c "import nanobind, scikit_build_core, pytest, jax" 2>/dev/null; then
    echo "setup: installing ${PYTHON_PIP[*]} for $(command -v python3) with pip"
    python3 -m pip install --quiet --disable-pip-version-check "${PYTHON_PIP[@]}"
  fi
}

if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all build dependencies are installed"
  install_onnx_python
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
install_onnx_python
