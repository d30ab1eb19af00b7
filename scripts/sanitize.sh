#!/usr/bin/env bash
# One clang build with AddressSanitizer + UndefinedBehaviorSanitizer (and libFuzzer's coverage hooks) in
# build-asan/: the unit tests run under the sanitizers, and scripts/fuzz.sh runs the fuzz targets of the
# same build. llama.cpp is left out (-DREPOCTX_WITH_LLAMA=OFF): its tests run models, in the regular build.
#   scripts/sanitize.sh [--build-only] [ctest arguments, default: -L unit]
set -euo pipefail
cd "$(dirname "$0")/.."
build_only=0
if [ "${1:-}" = "--build-only" ]; then build_only=1; shift; fi
jobs="${REPOCTX_JOBS:-$(nproc)}"
command -v clang++ >/dev/null || { echo "sanitize.sh: clang++ is missing (scripts/setup.sh --test-tools installs it)" >&2; exit 2; }
export CCACHE_BASEDIR="$PWD"
# -g makes ccache hash the build folder; without this a fresh clone (CI) misses the cache for every object.
# The cost: debug info of a cached object names the folder it was first built in.
export CCACHE_NOHASHDIR=1
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer -fsanitize=fuzzer-no-link"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DREPOCTX_BUILD_TESTS=ON -DREPOCTX_FUZZ=ON \
  -DREPOCTX_WITH_LLAMA=OFF -DREPOCTX_NATIVE=OFF "${launcher[@]}" >/dev/null
cmake --build build-asan -j "$jobs" --target repoctx_tests fuzz_all -- --quiet
[ "$build_only" = 1 ] && exit 0
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
cd build-asan
[ $# -eq 0 ] && set -- -L unit
ctest --output-on-failure -j "$jobs" "$@"
