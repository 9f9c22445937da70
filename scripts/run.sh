#!/usr/bin/env bash
# Sets up, builds (Release) and runs the kiln demo program.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/common.sh

section "setup"
./scripts/setup.sh

section "Release build of kiln_demo (build/)"
configure_ninja build -DCMAKE_BUILD_TYPE=Release -DKILN_SANITIZE=OFF -DKILN_BUILD_EXAMPLES=ON
cmake --build build -j2 --target kiln_demo

section "kiln_demo"
./build/examples/kiln_demo
