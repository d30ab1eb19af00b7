// `repoctx bench-serve REPO`: what serving costs, each number beside a reference measured in the same run.
//
//   cold   the CLI's `retrieve --query` as a fresh process (wall p50 of N runs), with --no-refresh and
//          with the default freshness check, beside ripgrep scanning the repository's sources for the
//          query's words (the same number of runs, interleaved, so that both see the same machine load);
//          and `retrieve --target` with the default strategy, a fresh process for each of N targets;
//   warm   `repoctx serve` on the same index: retrieve latency p50/p99 over R requests from C concurrent
//          clients for sparse (free-text queries) and structural (targets), throughput, the server's peak
//          RSS;
//   mcp    `repoctx mcp` driven by the official MCP client SDK (bench/mcp_roundtrip.mjs under Node):
//          tools/call round trip p50/p99 (skipped when the SDK is not installed).
//
// Every child is started from an argv (no shell). Interrupting (Ctrl-C) stops the children and keeps nothing.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace repoctx {

struct ServeBenchOptions {
  std::string repo;
  std::string db;                                     // index database ("" = the default location)
  std::string binary;                                 // the repoctx executable the children run
  std::string query = "solve a polynomial equation";  // the cold query (and its words for ripgrep)
  int cold_runs = 20;
  int requests = 1000;  // per strategy
  int clients = 8;
  std::string rg = "rg";
  std::string node = "node";
  std::string mcp_script;  // bench/mcp_roundtrip.mjs
  std::string mcp_sdk;     // folder whose node_modules holds @modelcontextprotocol/sdk ("" = skip)
  int mcp_calls = 200;
};

nlohmann::json run_bench_serve(const ServeBenchOptions& o);
std::string bench_serve_markdown(const nlohmann::json& r);

}  // namespace repoctx
