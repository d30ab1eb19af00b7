// `repoctx bench-syntax REPO`: the cost of the feedback loop's syntax check per candidate (ProjAgent 4.4),
// on the repository's own functions: Python's compile() through the persistent helper (what generation
// uses), the reference of one new python3 process per candidate, and tree-sitter's parse, in one run.
#pragma once

#include <string>

#include <nlohmann/json.hpp>

#include "retrieve/engine.h"

namespace repoctx {

struct BenchSyntaxOptions {
  int candidates = 60;  // functions checked (spread over the repository's Python files)
  std::string python;   // "" = $REPOCTX_PYTHON, else python3 on PATH
};

nlohmann::json run_bench_syntax(const Engine& e, const BenchSyntaxOptions& o);
std::string bench_syntax_markdown(const nlohmann::json& r);

}  // namespace repoctx
