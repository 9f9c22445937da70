#!/usr/bin/env bash
# Sets up, builds (Release) and runs the main job: examples/fashion_mnist, which trains the
# "2 Conv+pooling" CNN on Fashion-MNIST with kiln::nn. By default it trains one epoch on the
# first 20,000 training images, which takes a few minutes on 2 cores; arguments are passed on to
# the program and override the defaults, e.g. the full training:
#   ./scripts/run.sh --epochs 5 --limit 0
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/common.sh

section "setup"
./scripts/setup.sh

section "Release build of fashion_mnist (build/)"
configure_ninja build -DCMAKE_BUILD_TYPE=Release -DKILN_SANITIZE=OFF -DKILN_BUILD_EXAMPLES=ON
cmake --build build -j2 --target fashion_mnist

section "fashion_mnist"
mkdir -p build/fashion_mnist
./build/examples/fashion_mnist --epochs 1 --limit 20000 \
  --csv build/fashion_mnist/training.csv --plot build/fashion_mnist/training.png "$@"
