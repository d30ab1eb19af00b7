#include "bench/sandbox.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>

#include "util/cancel.h"
#include "util/error.h"
#include "util/log.h"
#include "util/temp_dir.h"

namespace repoctx {

using nlohmann::json;
namespace fs = std::filesystem;

namespace {

double median_ms(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

struct Side {
  std::vector<double> test_s, scratch_s;
  int passed = 0;
};

// One round: both modes, in the order `sandbox_first` says; returns false when interrupted.
void run_round(TestRunner& boxed, TestRunner& open, const EvalTask& t, const std::string& patched, bool sandbox_first,
               const std::string& log, Side& b, Side& u) {
  for (int k = 0; k < 2; ++k) {
    bool sandboxed = (k == 0) == sandbox_first;
    json rec;
    auto cr = (sandboxed ? boxed : open).run(t, patched, log, rec);
    if (cr.interrupted) throw_if_interrupted("no report is written");
    Side& s = sandboxed ? b : u;
    s.test_s.push_back(cr.seconds);
    s.scratch_s.push_back(rec["scratch"]["seconds"].get<double>());
    s.passed += cr.exit_code == 0;
  }
}

json side_json(const Side& s) {
  return {{"runs", s.test_s.size()},
          {"test_s", s.test_s},
          {"passed", s.passed},
          {"test_median_s", median_ms(s.test_s)},
          {"scratch_median_s", median_ms(s.scratch_s)}};
}

json compare(const Side& b, const Side& u) {
  std::vector<double> diff;
  for (size_t i = 0; i < std::min(b.test_s.size(), u.test_s.size()); ++i) diff.push_back(b.test_s[i] - u.test_s[i]);
  double mb = median_ms(b.test_s), mu = median_ms(u.test_s);
  return {{"sandboxed", side_json(b)},
          {"unconfined", side_json(u)},
          {"paired_median_overhead_ms", 1000 * median_ms(diff)},
          {"ratio", mu > 0 ? mb / mu : 0.0}};
}

}  // namespace

json run_bench_sandbox(const BenchSandboxOptions& o, const std::function<Engine&(const std::string&)>& engine_for) {
  auto tasks = load_tasks(o.tasks_path, {});
  if (tasks.empty()) throw Error(ExitCode::bad_input, o.tasks_path + ": no tasks");
  std::unique_ptr<TempDir> tmp;
  std::string work = o.work_dir;
  if (work.empty()) {
    tmp = std::make_unique<TempDir>("repoctx-bench-sandbox-");
    work = tmp->str();
  }
  TestRunOptions boxed_opts = o.tests, open_opts = o.tests;
  boxed_opts.sandbox.enabled = true;
  open_opts.sandbox.enabled = false;
  TestRunner boxed(boxed_opts, work + "/sandboxed"), open(open_opts, work + "/unconfined");
  std::string log = work + "/test.log";
  json rows = json::array();
  Side all_b, all_u;
  for (const auto& t : tasks) {
    json rec;
    auto patch = patch_for_method(engine_for(t.repo), Models{}, t, "gold", {}, rec);
    EvalTask empty = t;
    empty.test_command = "true";
    empty.test_argv = {"true"};
    Side tb, tu, eb, eu;  // the task's tests; an empty command on the same scratch copy
    for (int r = 0; r < o.repeat; ++r) {
      run_round(boxed, open, t, patch.patched, r % 2 == 0, log, tb, tu);
      run_round(boxed, open, empty, patch.patched, r % 2 == 1, log, eb, eu);
    }
    rows.push_back({{"task", t.id}, {"tests", compare(tb, tu)}, {"empty_command", compare(eb, eu)}});
    for (size_t i = 0; i < eb.test_s.size(); ++i) {
      all_b.test_s.push_back(eb.test_s[i]);
      all_u.test_s.push_back(eu.test_s[i]);
    }
    log_info("{}: {} rounds", t.id, o.repeat);
  }
  return {
      {"tasks", tasks.size()}, {"repeat", o.repeat}, {"per_task", rows}, {"empty_command_all", compare(all_b, all_u)}};
}

std::string bench_sandbox_markdown(const json& r) {
  std::string s = fmt::format("{} task(s) x {} rounds, sandboxed and unconfined alternately (medians)\n\n",
                              r["tasks"].get<int>(), r["repeat"].get<int>());
  s += "| task | test command | sandboxed | unconfined | ratio | paired overhead | scratch copy (sandboxed / "
       "unconfined) | gold passed |\n|---|---|---|---|---|---|---|---|\n";
  auto row = [&](const std::string& task, const char* what, const json& c) {
    s += fmt::format("| {} | {} | {:.3f} s | {:.3f} s | {:.3f} | {:+.1f} ms | {:.4f} s / {:.4f} s | {}/{} + {}/{} |\n",
                     task, what, c["sandboxed"]["test_median_s"].get<double>(),
                     c["unconfined"]["test_median_s"].get<double>(), c["ratio"].get<double>(),
                     c["paired_median_overhead_ms"].get<double>(), c["sandboxed"]["scratch_median_s"].get<double>(),
                     c["unconfined"]["scratch_median_s"].get<double>(), c["sandboxed"]["passed"].get<int>(),
                     c["sandboxed"]["runs"].get<int>(), c["unconfined"]["passed"].get<int>(),
                     c["unconfined"]["runs"].get<int>());
  };
  for (const auto& t : r["per_task"]) {
    row(t["task"].get<std::string>(), "its tests (gold)", t["tests"]);
    row(t["task"].get<std::string>(), "`true`", t["empty_command"]);
  }
  row("all", "`true`", r["empty_command_all"]);
  return s;
}

}  // namespace repoctx
