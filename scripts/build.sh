#!/usr/bin/env bash
# Configure and build repoctx (Release) into build/. Assumes scripts/setup.sh has run.
#   scripts/build.sh [--target NAME]... [-DOPTION=VALUE]...
# Quiet: ninja prints no progress lines, only what the compilers say (our code builds without warnings;
# CI fails on any, see .ci/run). REPOCTX_JOBS sets the parallel jobs (default: all cores).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${REPOCTX_JOBS:-$(nproc)}"
targets=() defs=()
while [ $# -gt 0 ]; do
  case "$1" in
    --target) targets+=(--target "$2"); shift 2 ;;
    *) defs+=("$1"); shift ;;
  esac
done
export CCACHE_BASEDIR="${CCACHE_BASEDIR:-$PWD}"  # ccache hits across checkouts of the same tree
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release "${defs[@]}" >/dev/null
echo "[build] building repoctx into build/ (${jobs} jobs; a first build takes a few minutes)" >&2
cmake --build build -j "$jobs" "${targets[@]}" -- --quiet
