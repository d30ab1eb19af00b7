// REPOCOD-style evaluation (ProjAgent 5.1, Tables 2 and 4): for each task the target's body is hidden, a
// generation method writes it, the result is spliced into the file, the task's tests run in a subprocess
// (own process group, timeout, memory and CPU limits), and the file is restored, always: a journal holds
// the original before any write, and a guard process (`repoctx _guard`) restores it if the runner dies,
// even by SIGKILL. Results are appended per (task, method), so a re-run skips finished work; --shard i/n
// splits the tasks across processes or machines (one lock per repository serialises their test runs) and
// `table` merges the results of several output folders into one comparison table.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generate/generator.h"
#include "util/subprocess.h"

namespace repoctx {

struct EvalTask {
  std::string id;                      // unique in a task file
  std::string repo_id;                 // the group a table column shows (REPOCOD: the repository's name)
  std::string repo;                    // local path of the repository
  std::string file;                    // target file, relative to the repository
  std::string function;                // qualified name in that file
  std::string test_command;            // run in the repository root, without a shell (util/subprocess.h split_command)
  std::vector<std::string> test_argv;  // test_command as argv (what runs)
  std::string full_function;           // REPOCOD: the reference function (disambiguates same-named functions)
};

struct TaskLoadOptions {
  std::map<std::string, std::string> repos;  // REPOCOD `repository` name -> local path
  std::string repos_dir;                     // else <repos_dir>/<repository>
  // REPOCOD tasks name test files; this command runs them (the word {tests}: one argument per path).
  std::string test_template = "python3 -m pytest -q -x -p no:cacheprovider {tests}";
};

// A JSONL file (one task a line) or a JSON array; REPOCOD's fields (repository, repo_id, target_module_path,
// prompt, relavent_test_path, full_function, function_name) or the plain ones (repo, file, function,
// test_command, optional id and repo_id). test_command is a command line (quoting as in a shell, but no
// shell: no variables, pipes or `;`) or a JSON array of arguments. Throws Error(bad_input) naming the line
// and the missing field.
std::vector<EvalTask> load_tasks(const std::string& path, const TaskLoadOptions& o);

// "Gold" and "stub" need no model: the real body (the tests must pass) and `raise NotImplementedError`
// (they must fail); together they validate a task set before any LLM time is spent.
const std::vector<std::string>& evaluation_methods();

struct RunnerOptions {
  std::vector<std::string> methods;
  std::string out_dir;
  int shard = 0, shards = 1;
  CommandLimits limits;
  GenerationParams gen;
  std::string self_exe;                // this binary (the guard process runs `self_exe _guard <journal>`)
  std::vector<std::string> done_dirs;  // other results folders (parallel jobs): their finished pairs are skipped too
  bool quiet = false;
};

struct MethodModels {
  LlmBackend* llm = nullptr;
  LlmBackend* embedder = nullptr;
  LlmBackend* hidden = nullptr;
};

// Runs every (task, method) of the shard not yet in <out_dir>/results.jsonl. `engine_for(repo)` opens the
// index of a repository. Returns the number of results written; throws Error(interrupted) on SIGINT/SIGTERM
// after restoring the file.
int run_evaluation(const std::vector<EvalTask>& tasks, const RunnerOptions& o, const MethodModels& models,
                   const std::function<Engine&(const std::string& repo)>& engine_for);

// The records of a results.jsonl, in order (a line cut by a crash is skipped: that task runs again).
std::vector<nlohmann::json> read_results(const std::string& results_path);

// Pass@1 per method (rows) and repository group (columns), over the results of the given output folders.
std::string results_table(const std::vector<std::string>& out_dirs, bool csv);

// The guard: waits for EOF on stdin (the runner's end of a pipe closes when it exits, however it exits),
// then restores whatever the journal still holds and kills the test's process group. Also run by the
// runner at start, for a journal left by a machine crash.
int guard_main(const std::string& journal_dir);
void recover_journal(const std::string& journal_dir);

}  // namespace repoctx
