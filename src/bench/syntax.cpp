#include "bench/syntax.h"

#include <chrono>

#include <fmt/format.h>

#include "generate/python_syntax.h"
#include "repo/parser.h"
#include "util/error.h"

namespace repoctx {

using nlohmann::json;

namespace {

double elapsed_ms(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

json run_bench_syntax(const Engine& e, const BenchSyntaxOptions& o) {
  PythonCompiler* py = python_compiler(o.python);
  if (!py) throw Error(ExitCode::not_found, "bench-syntax needs a python3 (--python, $REPOCTX_PYTHON or PATH)");
  // Candidates: the files of evenly spread functions, each with a comment that makes its text unique (the
  // helper memoises verdicts by content; a feedback loop's candidates all differ).
  const auto& ents = e.view().entities();
  std::vector<int> functions;
  for (size_t i = 0; i < ents.size(); ++i)
    if (is_callable(ents[i].kind) && ents[i].body_start_line > 0 &&
        e.view().files()[ents[i].file].language == Language::python)
      functions.push_back(static_cast<int>(i));
  if (functions.empty()) throw Error(ExitCode::bad_input, "bench-syntax: the repository has no Python function");
  size_t n = std::min(functions.size(), static_cast<size_t>(std::max(o.candidates, 1)));
  std::vector<std::pair<std::string, std::string>> cands;  // (path, text)
  size_t bytes = 0;
  for (size_t k = 0; k < n; ++k) {
    int f = functions[k * functions.size() / n];
    const auto& fr = e.view().files()[ents[f].file];
    cands.emplace_back(fr.path, e.view().content(ents[f].file) + "\n# candidate " + std::to_string(k) + "\n");
    bytes += cands.back().second.size();
  }
  py->version();  // the helper's start is paid once per run, not per candidate
  auto t0 = std::chrono::steady_clock::now();
  int refused = 0;
  for (const auto& [path, text] : cands) refused += py->check(text).has_value();
  double helper_ms = elapsed_ms(t0);
  t0 = std::chrono::steady_clock::now();
  int refused_ref = 0;
  for (const auto& [path, text] : cands) refused_ref += py->check_in_new_process(text).has_value();
  double process_ms = elapsed_ms(t0);
  SourceParser parser;
  t0 = std::chrono::steady_clock::now();
  int tree_errors = 0;
  for (const auto& [path, text] : cands) tree_errors += !parser.parse(path, "m", text, Language::python).errors.empty();
  double tree_ms = elapsed_ms(t0);
  double per = static_cast<double>(cands.size());
  return {{"python", py->interpreter()},
          {"version", py->version()},
          {"candidates", cands.size()},
          {"mean_candidate_bytes", static_cast<double>(bytes) / per},
          {"helper_ms_per_candidate", helper_ms / per},
          {"new_process_ms_per_candidate", process_ms / per},
          {"tree_sitter_ms_per_candidate", tree_ms / per},
          {"new_process_over_helper", helper_ms > 0 ? process_ms / helper_ms : 0.0},
          {"refused_by_python", refused},
          {"refused_by_python_reference", refused_ref},
          {"tree_sitter_error_trees", tree_errors}};
}

std::string bench_syntax_markdown(const json& r) {
  return fmt::format(
      "syntax check per candidate ({} files of {:.0f} bytes on average, {} {}):\n"
      "| checker | ms per candidate |\n|---|---|\n"
      "| python3 helper (persistent, what generation uses) | {:.3f} |\n"
      "| python3, one new process per candidate (reference) | {:.3f} |\n"
      "| tree-sitter parse | {:.3f} |\n"
      "new process / helper: {:.1f}x; refused by Python: {} (reference: {}); tree-sitter error trees: {}\n",
      r["candidates"].get<size_t>(), r["mean_candidate_bytes"].get<double>(), r["python"].get<std::string>(),
      r["version"].get<std::string>(), r["helper_ms_per_candidate"].get<double>(),
      r["new_process_ms_per_candidate"].get<double>(), r["tree_sitter_ms_per_candidate"].get<double>(),
      r["new_process_over_helper"].get<double>(), r["refused_by_python"].get<int>(),
      r["refused_by_python_reference"].get<int>(), r["tree_sitter_error_trees"].get<int>());
}

}  // namespace repoctx
