#!/usr/bin/env bash
# Configure and build repoctx (Release) into build/. Assumes scripts/setup.sh has run.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${REPOCTX_JOBS:-$(nproc)}"
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "$@" >/dev/null
cmake --build build -j "$jobs"
