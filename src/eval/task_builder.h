// Builds REPOCOD-style tasks from a repository that ships its tests (ProjAgent 5.1; REPOCOD's own tasks are
// functions its test suites exercise). A candidate is a function or method of a non-test file that a test
// file references (resolved through the symbol graph: calls, imports, classes whose methods the test names),
// with a body worth writing; its tests are the test files that reference it. Validation runs the two
// LLM-free methods: the real body must pass the tests and `raise NotImplementedError` must fail them, so
// every kept task can tell a right implementation from a wrong one.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "eval/runner.h"

namespace repoctx {

struct TaskBuildOptions {
  int max_tasks = 50;      // spread round-robin over the target files
  int min_body_lines = 3;  // non-blank body lines (after the docstring)
  int max_body_lines = 80;
  int max_test_files = 3;  // test files per task (the ones referencing the target, in path order)
  std::string repo_id;     // table column; default: the repository folder's name
  // Run in the repository root, without a shell; the word {tests} becomes one argument per test file.
  std::string test_template = "python3 -m pytest -q -x -p no:cacheprovider {tests}";
};

// Candidates, in a deterministic order. Throws Error(bad_input) when the repository has no test files.
std::vector<EvalTask> build_tasks(const Engine& e, const std::string& repo_path, const TaskBuildOptions& o);

struct TaskValidation {
  std::vector<EvalTask> kept;
  int gold_failed = 0;  // the tests fail on the real code (broken, environment-dependent or too slow)
  int stub_passed = 0;  // the tests pass without the body (they do not exercise it)
  // (task id, why): the first gold failures, with the end of the test log or the runner's error, so that a
  // cause common to every task (no pytest for this python3) is seen without opening the logs.
  std::vector<std::pair<std::string, std::string>> gold_failures;
};
// Runs gold and stub for every task into `ro.out_dir` (resumable like evaluate) and keeps the tasks where
// gold passes and stub fails.
TaskValidation validate_tasks(const std::vector<EvalTask>& tasks, RunnerOptions ro,
                              const std::function<Engine&(const std::string& repo)>& engine_for);

// One JSON object per line with the plain task fields (load_tasks reads it back).
void write_tasks(const std::string& path, const std::vector<EvalTask>& tasks);

}  // namespace repoctx
