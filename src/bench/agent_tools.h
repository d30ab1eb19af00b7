// `repoctx bench-agent-tools REPO`: latency of each repository tool of the seed-finding agent (ProjAgent
// 4.2) on an indexed repository, and grep against a plain-Python reference (bench/reference/ref_grep.py)
// on the same files and patterns in the same run.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "retrieve/engine.h"

namespace repoctx {

struct BenchToolsOptions {
  int calls = 40;         // calls per tool (distinct arguments drawn from the repository)
  bool reference = true;  // run the Python grep reference
  std::string python = "python3";
  std::string reference_script;  // bench/reference/ref_grep.py (the CLI passes its source tree's)
};

nlohmann::json run_bench_agent_tools(const Engine& e, const BenchToolsOptions& o);
std::string bench_agent_tools_markdown(const nlohmann::json& r);

}  // namespace repoctx
