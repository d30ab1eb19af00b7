#!/usr/bin/env bash
# The unit tests under AddressSanitizer and UndefinedBehaviorSanitizer (clang), built into build-asan/:
#   scripts/sanitize.sh [ctest arguments, default: -L unit]
# llama.cpp's runtime (a shared library built by scripts/setup.sh) is linked as it is, uninstrumented;
# the llm-labelled tests that run models stay in the regular build.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs="${REPOCTX_JOBS:-$(nproc)}"
command -v clang++ >/dev/null || { echo "sanitize.sh: clang++ is missing (apt-get install clang)" >&2; exit 2; }
export CCACHE_BASEDIR="$PWD"
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_C_COMPILER_LAUNCHER=ccache -DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
san="-fsanitize=address,undefined -fno-sanitize-recover=undefined -fno-omit-frame-pointer"
cmake -S . -B build-asan -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang \
  -DCMAKE_CXX_COMPILER=clang++ -DCMAKE_C_FLAGS="$san" -DCMAKE_CXX_FLAGS="$san" \
  -DCMAKE_EXE_LINKER_FLAGS="-fsanitize=address,undefined" -DREPOCTX_BUILD_TESTS=ON \
  -DREPOCTX_NATIVE=OFF "${launcher[@]}" >/dev/null
cmake --build build-asan -j "$jobs" --target repoctx_tests repoctx
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:strict_string_checks=1:detect_stack_use_after_return=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
cd build-asan
[ $# -eq 0 ] && set -- -L unit
ctest --output-on-failure -j "$jobs" "$@"
