// `repoctx bench-sandbox TASKS`: what the sandbox costs per test run. Every task's gold body is tested
// repeatedly, sandboxed and unconfined (--no-sandbox) alternately in the same run (the order flips every round,
// so drift in machine load falls on both sides), each on its own scratch copy as `evaluate` makes it. Reported:
// median seconds of the test run per mode, the median of the per-round differences, and the same for a test
// command that does nothing (`true`), which isolates bubblewrap's fixed start-up cost; scratch-copy seconds
// separately (the sandbox may link files, the unconfined run copies every file).
#pragma once

#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "eval/runner.h"

namespace repoctx {

struct BenchSandboxOptions {
  std::string tasks_path;
  int repeat = 10;       // rounds per task (each: one sandboxed and one unconfined run)
  TestRunOptions tests;  // limits; the sandbox flag is set per side
  std::string work_dir;  // scratch and logs; a temporary folder when empty
};

nlohmann::json run_bench_sandbox(const BenchSandboxOptions& o,
                                 const std::function<Engine&(const std::string& repo)>& engine_for);
std::string bench_sandbox_markdown(const nlohmann::json& r);

}  // namespace repoctx
