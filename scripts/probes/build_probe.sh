#!/usr/bin/env bash
# Compiles scripts/probes/agent_tools_probe.cpp against a built tree: build_probe.sh BUILD_DIR OUT_BINARY
# (BUILD_DIR: a Release build of this checkout, e.g. build/). Used for the agent-tool rows of
# docs/RELIABILITY.md, measured before and after a change with the same probe.
set -euo pipefail
here="$(cd "$(dirname "$0")/../.." && pwd)"
build="$(cd "$1" && pwd)"
out="$2"
deps="${REPOCTX_DEPS:-$HOME/.cache/repoctx}"
llama_commit="$(sed -n 's/^LLAMA_COMMIT=//p' "$here/scripts/llama.lock")"
llama="$deps/llama.cpp-$llama_commit-cpu"
g++ -std=c++20 -O2 -march=native -I"$here/src" "$here/scripts/probes/agent_tools_probe.cpp" -o "$out" \
  "$build/src/librepoctx_core.a" "$build/src/libllama_schema.a" "$build/libts_core.a" "$build/libts_python.a" \
  "$build/libts_java.a" -L"$llama/lib" -Wl,-rpath,"$llama/lib" -lllama -lggml -lggml-base \
  $(pkg-config --libs re2 libxxhash) -lsqlite3 -lfmt -lcurl -lopenblas -llapacke -lpthread
