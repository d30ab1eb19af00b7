#!/usr/bin/env bash
# libFuzzer targets of fuzz/ (extractors, tokenizer, agent tools, model-JSON and OpenAI-response readers, the
# HTTP and MCP servers request paths, command lines), built with clang -fsanitize=fuzzer,address,undefined into build-asan/, each run for a
# bounded time. Seeds: real Python sources of this machine (the standard library) plus fuzz/seeds/; the
# corpora grow in build-fuzz/corpus/. Crashes are written to build-fuzz/crashes/<target>/ and make the
# script fail.
#
#   scripts/fuzz.sh [SECONDS_PER_TARGET=20] [TARGET...]      REPOCTX_FUZZ_JOBS=N runs N workers per target
set -euo pipefail
cd "$(dirname "$0")/.."
secs="${1:-20}"
shift || true
jobs="${REPOCTX_JOBS:-$(nproc)}"
targets=("$@")
[ ${#targets[@]} -eq 0 ] && targets=(python_extractor java_extractor go_extractor javascript_extractor rust_extractor c_extractor cpp_extractor csharp_extractor tokenizer
                                     agent_tools model_json openai_response
                                     command_line http_request mcp_message)
scripts/sanitize.sh --build-only   # the fuzz targets are built with ASan + UBSan in build-asan/

# Seeds from real files: a deterministic sample of the standard library (whole files up to 16 KiB, and
# the first 16 KiB of larger ones); everything else from fuzz/seeds/. Samples are cut by awk, which reads its
# input to the end: `head` would close the pipe early, and under pipefail the writer's SIGPIPE fails the script.
seeds=build-fuzz/seeds
if [ ! -d "$seeds/python_extractor" ]; then
  mkdir -p "$seeds/python_extractor" "$seeds/tokenizer"
  find /usr/lib/python3.11 -maxdepth 2 -name '*.py' | sort | awk 'NR % 7 == 0 && NR / 7 <= 150' |
    while read -r f; do
      name=$(echo "$f" | tr '/' '_')
      head -c 16384 "$f" > "$seeds/python_extractor/$name"
      head -c 2048 "$f" > "$seeds/tokenizer/$name"
    done
fi
# Go's, JavaScript's and Rust's trees when installed (the test tools install them): a sample of real files.
if [ ! -d "$seeds/go_extractor" ] && [ -d /usr/share/go-1.19/src ]; then
  mkdir -p "$seeds/go_extractor"
  find /usr/share/go-1.19/src/net /usr/share/go-1.19/src/go -name '*.go' | sort | awk 'NR % 13 == 0 && NR / 13 <= 100' |
    while read -r f; do head -c 16384 "$f" > "$seeds/go_extractor/$(echo "$f" | tr '/' '_')"; done
fi
if [ ! -d "$seeds/javascript_extractor" ] && [ -d /usr/share/nodejs ]; then
  mkdir -p "$seeds/javascript_extractor"
  find /usr/share/nodejs/express /usr/share/nodejs/undici /usr/share/nodejs/typescript/lib -name '*.[jt]s' |
    sort | awk 'NR % 5 == 0 && NR / 5 <= 100' | while read -r f; do
      case "$f" in *.ts) g=1 ;; *) g=0 ;; esac   # the first byte picks the grammar
      { printf '%s' "$g"; head -c 16383 "$f"; } > "$seeds/javascript_extractor/$(echo "$f" | tr '/' '_')"
    done
fi
if [ ! -d "$seeds/rust_extractor" ] && [ -d /usr/share/cargo/registry ]; then
  mkdir -p "$seeds/rust_extractor"
  find /usr/share/cargo/registry -name '*.rs' | sort | awk 'NR % 47 == 0 && NR / 47 <= 100' |
    while read -r f; do head -c 16384 "$f" > "$seeds/rust_extractor/$(echo "$f" | tr '/' '_')"; done
fi
if [ ! -d "$seeds/c_extractor" ]; then   # the C library's headers (always installed with the compiler)
  mkdir -p "$seeds/c_extractor"
  find /usr/include -maxdepth 2 -name '*.h' | sort | awk 'NR % 11 == 0 && NR / 11 <= 100' |
    while read -r f; do head -c 16384 "$f" > "$seeds/c_extractor/$(echo "$f" | tr '/' '_')"; done
fi
if [ ! -d "$seeds/cpp_extractor" ] && [ -d /usr/src/googletest ]; then   # googletest's sources (libgtest-dev)
  mkdir -p "$seeds/cpp_extractor"
  find /usr/src/googletest -name '*.cc' -o -name '*.h' | sort | awk 'NR % 3 == 0 && NR / 3 <= 100' |
    while read -r f; do head -c 16384 "$f" > "$seeds/cpp_extractor/$(echo "$f" | tr '/' '_')"; done
fi
cs_corpus="${REPOCTX_DEPS:-$HOME/.cache/repoctx}/src/react-native-windows-0.80.0"
if [ ! -d "$seeds/csharp_extractor" ] && [ -d "$cs_corpus" ]; then   # the C# test corpus (setup.sh --test-tools)
  mkdir -p "$seeds/csharp_extractor"
  find "$cs_corpus" -name '*.cs' | sort | awk 'NR <= 60' |
    while read -r f; do head -c 16384 "$f" > "$seeds/csharp_extractor/$(basename "$f")"; done
fi
export ASAN_OPTIONS="detect_leaks=1:abort_on_error=1:symbolize=1"
export UBSAN_OPTIONS="print_stacktrace=1:halt_on_error=1"
status=0
printf '%-18s %12s %10s %8s\n' target executions "exec/s" crashes
for t in "${targets[@]}"; do
  corpus=build-fuzz/corpus/$t crashes=build-fuzz/crashes/$t
  mkdir -p "$corpus" "$crashes"
  inputs=("$corpus")
  [ -d "$seeds/$t" ] && inputs+=("$seeds/$t")
  [ -d "fuzz/seeds/$t" ] && inputs+=("fuzz/seeds/$t")
  dict=()
  case $t in
    python_extractor|java_extractor) dict=(-dict="fuzz/$t.dict") ;;
    go_extractor|javascript_extractor|rust_extractor|c_extractor|cpp_extractor|csharp_extractor) dict=() ;;
    agent_tools|model_json|openai_response|mcp_message) dict=(-dict=fuzz/json.dict) ;;
    http_request) dict=(-dict=fuzz/http.dict) ;;
  esac
  maxlen=4096
  case $t in *_extractor) maxlen=16384 ;; esac
  log=build-fuzz/$t.log
  rc=0
  build-asan/fuzz/fuzz_$t "${inputs[@]}" "${dict[@]}" -max_total_time="$secs" -max_len=$maxlen -timeout=20 \
    -rss_limit_mb=3072 -print_final_stats=1 -artifact_prefix="$crashes/" -jobs="${REPOCTX_FUZZ_JOBS:-1}" \
    -workers="${REPOCTX_FUZZ_JOBS:-1}" >"$log" 2>&1 || rc=$?
  runs=$(grep -h 'stat::number_of_executed_units' "$log" fuzz-*.log 2>/dev/null | awk '{s += $2} END {print s + 0}' || true)
  rate=$(grep -h 'stat::average_exec_per_sec' "$log" fuzz-*.log 2>/dev/null | awk '{s += $2} END {print s + 0}' || true)
  rm -f fuzz-*.log
  found=$(find "$crashes" -type f | wc -l)
  printf '%-18s %12s %10s %8s\n' "$t" "$runs" "$rate" "$found"
  if [ "$rc" -ne 0 ] || [ "$found" -ne 0 ]; then
    status=1
    echo "  $t: exit $rc; inputs in $crashes/; log: $log" >&2
    grep -m5 -E 'ERROR|runtime error|invariant|SUMMARY' "$log" >&2 || true
  fi
done
exit $status
