// REPOCOD-style evaluation (ProjAgent 5.1, Tables 2 and 4): for each task the target's body is hidden, a
// generation method writes it, the result is spliced into a scratch copy of the repository (the user's tree is
// never edited: eval/scratch_tree.h), and the task's tests run on that copy inside the sandbox (util/sandbox.h:
// no network, read-only system, the home hidden, time, memory, CPU, process and file-size limits). Results are
// appended per (task, method), so a re-run skips finished work; --shard i/n (or a Slurm array / Kubernetes
// Indexed Job, shard_from_environment) splits the tasks across processes or machines, and `table` merges the
// results of several output folders into one comparison table.
#pragma once

#include <functional>
#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/scratch_tree.h"
#include "generate/generator.h"
#include "util/sandbox.h"
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
  std::string full_function;  // REPOCOD: the reference definition (tells same-named definitions apart; eval/repocod.h)
  std::string given_body;     // optional field `given_body`: the body method `given` splices in verbatim
};

struct TaskLoadOptions {
  std::map<std::string, std::string> repos;  // REPOCOD `repository` name -> local path
  std::string repos_dir;                     // else <repos_dir>/<repository>
  // REPOCOD tasks name their relevant tests (node ids or test files); this command runs them (the word
  // {tests}: one argument per test), as REPOCOD's evaluate.py does (--continue-on-collection-errors).
  std::string test_template = "python3 -m pytest -q -p no:cacheprovider --continue-on-collection-errors {tests}";
  bool early_stop = false;     // add -x before the tests (REPOCOD's early_stop; the verdict is the same)
  std::string test_cases_dir;  // REPOCOD's target_test_cases folder, copied out of its image (eval/repocod.h)
};

// A JSONL file (one task a line) or a JSON array; REPOCOD's fields (repository, repo_id, target_module_path,
// prompt, relavent_test_path or relevant_test_path: its relevant-tests file, a list of node ids or test
// files, or one of them; full_function, function_name; eval/repocod.h) or the plain ones (repo, file, function,
// test_command, optional id and repo_id). test_command is a command line (quoting as in a shell, but no
// shell: no variables, pipes or `;`) or a JSON array of arguments. Throws Error(bad_input) naming the line
// and the missing field.
std::vector<EvalTask> load_tasks(const std::string& path, const TaskLoadOptions& o);

// "Gold" and "stub" need no model: the real body (the tests must pass) and `raise NotImplementedError`
// (they must fail); together they validate a task set before any LLM time is spent. "given" splices the task's
// `given_body` field verbatim: hand-written bodies for testing the harness itself (tests/integration/sandbox_e2e.py).
const std::vector<std::string>& evaluation_methods();
// The model roles a method uses (none for gold and stub).
ModelNeeds evaluation_method_needs(const std::string& method);

// How each test run is confined (shared by evaluate and make-tasks --validate).
struct TestRunOptions {
  CommandLimits limits;
  SandboxConfig sandbox;
  std::string scratch_root;  // where scratch copies are made; default <out_dir>/scratch
};

struct RunnerOptions {
  std::vector<std::string> methods;
  std::string out_dir;
  int shard = 0, shards = 1;
  TestRunOptions tests;
  GenerationParams gen;
  std::vector<std::string> done_dirs;  // other results folders (parallel jobs): their finished pairs are skipped too
  bool quiet = false;
};

// One test run as evaluate makes it: a scratch copy of the task's repository with `patched` as its target file
// (eval/scratch_tree.h), the task's test command in the sandbox (util/sandbox.h; unconfined with --no-sandbox,
// still on the copy), the copy removed afterwards. Construction checks the sandbox (Error(bad_input) when it
// cannot run here) and removes scratch copies and cgroups left by killed runs.
class TestRunner {
 public:
  TestRunner(const TestRunOptions& t, const std::string& out_dir);
  // `rec` gets "sandboxed" and the scratch copy's counts ("scratch": linked, copied, seconds).
  CommandResult run(const EvalTask& task, const std::string& patched, const std::string& log_path, nlohmann::json& rec);
  bool sandboxed() const { return sandbox_.enabled(); }

 private:
  TestRunOptions opts_;
  Sandbox sandbox_;
  std::string out_dir_, home_, scratch_root_;
  ScratchPolicy policy_;
  bool cgroup_warned_ = false;
};

// The target's file with `method`'s body: gold, stub, given, or generated (then `rec` gets the generation's
// rounds, findings and LLM calls; `gen.withheld` may name the target itself, it is left out). Throws Error for
// a target without a body, a failed generation.
struct MethodPatch {
  std::string patched, diff;
  nlohmann::json trace;
};
MethodPatch patch_for_method(Engine& eng, const Models& models, const EvalTask& task, const std::string& method,
                             const GenerationParams& gen, nlohmann::json& rec);

// A shard chosen by a scheduler, when --shard is not given: a Slurm array job (SLURM_ARRAY_TASK_ID,
// SLURM_ARRAY_TASK_COUNT, SLURM_ARRAY_TASK_MIN, SLURM_ARRAY_TASK_STEP) or a Kubernetes Indexed Job
// (JOB_COMPLETION_INDEX; the count, which Kubernetes does not export, from `count` (--shard-count) or
// REPOCTX_SHARD_COUNT). `env` reads a variable ("" when unset). Returns count 0 when no scheduler is seen;
// throws Error(usage) when the variables do not name a shard (a non-contiguous array, a missing count).
struct ShardChoice {
  int index = 0, count = 0;
  std::string source;  // e.g. "SLURM_ARRAY_TASK_ID=2 of SLURM_ARRAY_TASK_COUNT=3"
};
ShardChoice shard_from_environment(const std::function<std::string(const char*)>& env, int count = 0);

// Runs every (task, method) of the shard not yet in <out_dir>/results.jsonl. `engine_for(repo)` opens the
// index of a repository (read from the user's tree, which nothing here writes). Returns the number of results
// written; throws Error(interrupted) on SIGINT/SIGTERM (finished results kept), Error(bad_input) when the
// sandbox cannot run here.
int run_evaluation(const std::vector<EvalTask>& tasks, const RunnerOptions& o, const Models& models,
                   const std::function<Engine&(const std::string& repo)>& engine_for);

// The records of a results.jsonl, in order (a line cut by a crash is skipped: that task runs again).
std::vector<nlohmann::json> read_results(const std::string& results_path);

// The results folders in `dir`: itself when it holds results.jsonl, and those of its shards and jobs
// (shard-*/, jobs/*/, nested), in path order.
std::vector<std::string> results_folders(const std::string& dir);

// Pass@1 per method (rows) and repository group (columns), over the results of the given output folders and
// the shard and job folders inside them.
std::string results_table(const std::vector<std::string>& out_dirs, bool csv);

}  // namespace repoctx
