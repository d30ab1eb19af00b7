// `repoctx bench`: indexing and query speed on a real repository, measured in the same run as the plain
// Python reference implementation of the same work (bench/reference/ref_index.py), so numbers are ratios.
#pragma once

#include <nlohmann/json.hpp>

#include <string>

namespace repoctx {

struct BenchOptions {
  std::string repo;
  std::string self_exe;   // this repoctx binary (child processes measure their own peak RSS)
  std::string reference;  // path of ref_index.py; empty = skip the reference
  std::string python = "/usr/bin/python3";
  int queries = 200;
  int repeat = 1;       // index runs (median reported)
  bool reindex = true;  // measure re-index after a one-file change (on a copy of the repository)
  int threads = 0;
  std::string baseline_exe;  // another repoctx build (e.g. main's) whose full index is timed in the same runs
};

// Returns a JSON report; throws Error when a child process fails.
nlohmann::json run_bench(const BenchOptions& o);
std::string bench_markdown(const nlohmann::json& report);

}  // namespace repoctx
