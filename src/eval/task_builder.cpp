#include "eval/task_builder.h"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "eval/retrieval_eval.h"
#include "util/error.h"
#include "util/text.h"

namespace repoctx {

namespace fs = std::filesystem;
using nlohmann::json;

namespace {

// Non-blank, non-comment lines of the statements after the docstring; 0 for bodies a stub already
// equals (pass, ..., raise NotImplementedError), which no test can tell from a wrong implementation.
int function_body_lines(const Engine& e, const EntityRec& en) {
  if (en.body_start_line <= 0) return 0;
  const std::string& src = e.view().content(en.file);
  auto starts = line_starts(src);
  int n = 0;
  std::string first;
  for (auto l : split_lines(
           line_range(src, starts, en.body_start_line, en.body_end_line > 0 ? en.body_end_line : en.end_line))) {
    auto t = trim(l);
    if (t.empty() || t[0] == '#') continue;
    if (n++ == 0) first = std::string(t);
  }
  if (n <= 2 && (first == "pass" || first == "..." || starts_with(first, "raise NotImplementedError"))) return 0;
  return n;
}

}  // namespace

std::vector<EvalTask> build_tasks(const Engine& e, const std::string& repo_path, const TaskBuildOptions& o) {
  const auto& v = e.view();
  const auto& ents = v.entities();
  const auto& g = e.graph();
  // target entity -> the test files referencing it
  std::map<int, std::set<std::string>> tests_of;
  int test_files = 0;
  for (size_t fi = 0; fi < v.files().size(); ++fi) {
    const auto& fr = v.files()[fi];
    if (!ends_with(fr.path, ".py") || !is_test_path(fr.path) || ends_with(fr.path, "conftest.py")) continue;
    ++test_files;
    const std::string& test_text = v.content(static_cast<int>(fi));
    for (int i = fr.first_entity; i < fr.first_entity + fr.n_entities; ++i) {
      if (!is_callable(ents[i].kind) && !is_type(ents[i].kind)) continue;
      for (int r : g.referenced_entities(i)) {
        const auto& re = ents[r];
        if (is_test_path(v.files()[re.file].path)) continue;
        if (is_callable(re.kind)) tests_of[r].insert(fr.path);
        if (!is_type(re.kind)) continue;
        // A class the test uses: its methods the test names (obj.method(...) resolves to no entity, the
        // receiver's type being unknown; the name in the test's text is the evidence).
        for (int m : g.class_members(r))
          if (is_callable(ents[m].kind) &&
              (ents[m].name == "__init__" || test_text.find("." + ents[m].name + "(") != std::string::npos))
            tests_of[m].insert(fr.path);
      }
    }
  }
  if (test_files == 0)
    throw Error(ExitCode::not_found, "no test files in " + repo_path +
                                         " (test_*.py, *_test.py or files under tests/): tasks need tests to run; "
                                         "write them by hand as JSONL (repo, file, function, test_command)");
  // Candidates grouped by target file, each file's in line order; then taken round-robin over the files so
  // that a small --max still covers many files.
  std::map<std::string, std::vector<int>> by_file;
  for (const auto& [t, tests] : tests_of) {
    const auto& te = ents[t];
    if (te.body_start_line <= 0 || v.find_entities(te.file, te.qualname).size() > 1) continue;  // redefinitions
    if (te.qualname.find("<locals>") != std::string::npos) continue;  // nested functions: no stable target
    int n = function_body_lines(e, te);
    if (n < o.min_body_lines || n > o.max_body_lines) continue;
    by_file[v.files()[te.file].path].push_back(t);
  }
  for (auto& [f, list] : by_file)
    std::sort(list.begin(), list.end(), [&](int a, int b) { return ents[a].start_line < ents[b].start_line; });
  std::string repo_id = o.repo_id.empty() ? fs::path(repo_path).lexically_normal().filename().string() : o.repo_id;
  if (repo_id.empty()) repo_id = fs::path(repo_path).lexically_normal().parent_path().filename().string();
  std::vector<EvalTask> out;
  for (size_t round = 0; static_cast<int>(out.size()) < o.max_tasks; ++round) {
    bool any = false;
    for (const auto& [path, list] : by_file) {
      if (round >= list.size() || static_cast<int>(out.size()) >= o.max_tasks) continue;
      any = true;
      const auto& te = ents[list[round]];
      EvalTask t;
      t.id = repo_id + "/" + path + "::" + te.qualname;
      t.repo_id = repo_id;
      t.repo = repo_path;
      t.file = path;
      t.function = te.qualname;
      std::vector<std::string> tests;
      for (const auto& tf : tests_of[list[round]]) {
        if (static_cast<int>(tests.size()) >= o.max_test_files) break;
        tests.push_back(tf);
      }
      // argv, never a shell line: a test file named `a;rm -rf x.py` is one argument.
      t.test_argv = expand_tests(o.test_template, tests, true);
      t.test_command = join_command(t.test_argv);
      out.push_back(std::move(t));
    }
    if (!any) break;
  }
  return out;
}

TaskValidation validate_tasks(const std::vector<EvalTask>& tasks, RunnerOptions ro,
                              const std::function<Engine&(const std::string& repo)>& engine_for) {
  ro.methods = {"gold", "stub"};
  ro.shard = 0;
  ro.shards = 1;
  run_evaluation(tasks, ro, Models{}, engine_for);
  std::map<std::string, std::pair<bool, bool>> seen;  // task -> (gold passed, stub passed)
  std::set<std::string> have_gold, have_stub;
  std::vector<std::pair<std::string, std::string>> tv_failures;
  for (const auto& j : read_results(ro.out_dir + "/results.jsonl")) {
    std::string id = j["task"].get<std::string>(), m = j["method"].get<std::string>();
    bool passed = j.value("passed", false);
    if (m == "gold") seen[id].first = passed, have_gold.insert(id);
    if (m == "gold" && !passed && tv_failures.size() < 3)
      tv_failures.emplace_back(id, j.contains("error") ? j.value("error", "") : j.value("log_tail", ""));
    if (m == "stub") seen[id].second = passed, have_stub.insert(id);
  }
  TaskValidation tv;
  tv.gold_failures = std::move(tv_failures);
  for (const auto& t : tasks) {
    if (!have_gold.count(t.id) || !have_stub.count(t.id)) continue;  // not run (interrupted): not kept
    auto [gold, stub] = seen[t.id];
    if (!gold)
      ++tv.gold_failed;
    else if (stub)
      ++tv.stub_passed;
    else
      tv.kept.push_back(t);
  }
  return tv;
}

void write_tasks(const std::string& path, const std::vector<EvalTask>& tasks) {
  // Written whole to a temporary file and renamed: an interrupted write leaves the old file.
  std::string tmp = path + ".tmp";
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw Error(ExitCode::bad_input, "cannot write " + path + ": check the folder exists and is writable");
    for (const auto& t : tasks) {
      json j{{"id", t.id},     {"repo_id", t.repo_id},   {"repo", t.repo},
             {"file", t.file}, {"function", t.function}, {"test_command", t.test_command}};
      if (!t.given_body.empty()) j["given_body"] = t.given_body;
      out << j.dump() << "\n";
    }
    if (!out.flush()) throw Error(ExitCode::bad_input, "cannot write " + path + " (disk full?)");
  }
  fs::rename(tmp, path);
}

}  // namespace repoctx
