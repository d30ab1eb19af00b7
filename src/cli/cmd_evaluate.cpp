// evaluate, table, make-tasks: REPOCOD-style Pass@1 runs over task files, their tables, and task construction
// from a repository's own tests. Test runs are sandboxed on scratch copies (eval/runner.h, util/sandbox.h).
#include <fmt/core.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <map>

#include "cli/commands.h"
#include "cli/common.h"
#include "eval/runner.h"
#include "eval/task_builder.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/log.h"
#include "util/subprocess.h"
#include "util/text.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace repoctx {
namespace {

// The last lines of a test log, indented (pytest's summary, a traceback's last frames, "No module named").
std::string indent_lines(const std::string& text, const std::string& pad) {
  auto lines = split_lines(text);
  while (!lines.empty() && trim(lines.back()).empty()) lines.pop_back();
  std::string out;
  for (size_t i = lines.size() > 12 ? lines.size() - 12 : 0; i < lines.size(); ++i)
    out += pad + std::string(lines[i]) + "\n";
  return out.empty() ? pad + "(empty log)\n" : out;
}

void write_tables(const std::string& out_dir, const std::vector<std::string>& dirs) {
  std::string md = results_table(dirs, false);
  write_file(out_dir + "/table.md", md);
  write_file(out_dir + "/table.csv", results_table(dirs, true));
  std::cout << md;
}

// The options of test runs, shared by evaluate and make-tasks --validate.
void add_test_run_options(CLI::App* c, TestRunOptions& t, const char* g) {
  c->add_option("--timeout", t.limits.timeout_s, "seconds per test run (the run is killed after)")
      ->capture_default_str()
      ->group(g);
  c->add_option("--mem-mb", t.limits.memory_mb, "address-space limit of each test process in MiB (0 = none)")
      ->capture_default_str()
      ->group(g);
  c->add_option("--max-procs", t.limits.processes, "processes of one test run (0 = no limit)")
      ->capture_default_str()
      ->group(g);
  c->add_option("--max-write-mb", t.limits.file_size_mb, "largest file a test run may write, in MiB (0 = none)")
      ->capture_default_str()
      ->group(g);
  c->add_flag_callback(
       "--no-sandbox", [&t] { t.sandbox.enabled = false; },
       "run the tests without bubblewrap: with your privileges, network and whole filesystem (still on a "
       "scratch copy, never on your tree)")
      ->group(g);
  c->add_option("--sandbox-ro", t.sandbox.expose,
                "a folder the sandbox shows read-only although it hides its parent (e.g. a virtualenv under your "
                "home; repeatable)")
      ->group(g);
  c->add_option("--tmp-mb", t.sandbox.tmp_mb, "size of the sandbox's private /tmp in MiB (held in memory)")
      ->capture_default_str()
      ->group(g);
  c->add_option("--scratch", t.scratch_root,
                "folder for the per-run scratch copies of the repository (default: <out>/scratch; on the "
                "repository's filesystem, files the test cannot write are hard links)")
      ->group(g);
}

std::string getenv_str(const char* name) {
  const char* v = std::getenv(name);
  return v ? v : "";
}

struct EvaluateCmd {
  OutputOptions out;
  ModelOptions models;
  std::string tasks_path, methods = "gold,stub", shard;
  int jobs = 1, shard_count = 0;
  std::vector<std::string> done_in;
  std::vector<std::string> repo_map;
  TaskLoadOptions tl;
  RunnerOptions ro;
  std::vector<std::string> params;

  // `--jobs N`: N copies of this command, each a shard of this one's share (shard i/n becomes i + n*k of
  // n*N) writing to <out>/jobs/<k>, skipping what any folder already finished (so a re-run with another N
  // resumes too). The processes generate in parallel; the repository lock serialises their test runs and
  // index refreshes. Then one table over all folders.
  int run_parallel_jobs() const {
    fs::create_directories(ro.out_dir);
    std::vector<std::string> base{self_exe()};
    for (size_t i = 1; i < g_argv.size(); ++i) {
      const std::string& a = g_argv[i];
      if (a == "--jobs" || a == "--shard" || a == "--out" || a == "--done-in" || a == "--shard-count") {
        ++i;
        continue;
      }
      if (starts_with(a, "--jobs=") || starts_with(a, "--shard=") || starts_with(a, "--out=") ||
          starts_with(a, "--done-in=") || starts_with(a, "--shard-count="))
        continue;
      base.push_back(a);
    }
    std::vector<std::string> dirs{ro.out_dir};
    for (int k = 0; k < jobs; ++k) dirs.push_back(ro.out_dir + "/jobs/" + std::to_string(k));
    for (const auto& d : ro.done_dirs)  // other shards' folders (a scheduler's earlier submission)
      if (std::find(dirs.begin(), dirs.end(), d) == dirs.end()) dirs.push_back(d);
    if (fs::exists(ro.out_dir + "/jobs"))  // folders of an earlier run with more jobs
      for (const auto& d : fs::directory_iterator(ro.out_dir + "/jobs"))
        if (std::find(dirs.begin(), dirs.end(), d.path().string()) == dirs.end()) dirs.push_back(d.path().string());
    std::vector<int> pids;
    for (int k = 0; k < jobs; ++k) {
      auto argv = base;
      const std::string& dir = dirs[static_cast<size_t>(k) + 1];
      argv.insert(argv.end(), {"--jobs", "1", "--out", dir, "--shard",
                               fmt::format("{}/{}", ro.shard + ro.shards * k, ro.shards * jobs)});
      for (const auto& d : dirs)
        if (d != dir) argv.insert(argv.end(), {"--done-in", d});
      fs::create_directories(dir);
      pids.push_back(spawn_process(argv));
    }
    auto status = wait_processes(pids, &g_interrupted);
    int rc = 0;
    for (int st : status)
      if (st != 0 && rc != static_cast<int>(ExitCode::interrupted)) rc = st;
    std::vector<std::string> with_results;
    for (const auto& d : dirs)
      if (fs::exists(d + "/results.jsonl") &&
          std::find(ro.done_dirs.begin(), ro.done_dirs.end(), d) == ro.done_dirs.end())
        with_results.push_back(d);
    if (with_results.empty()) throw Error(ExitCode::failure, "no job wrote results; see the messages above");
    write_tables(ro.out_dir, with_results);
    if (rc != 0) log_warn("a job ended with status {}; re-run the same command to resume", rc);
    return rc;
  }

  void parse_shard() {
    if (shard_count > 0) throw Error(ExitCode::usage, "--shard-count goes with JOB_COMPLETION_INDEX, not --shard i/n");
    auto sl = shard.find('/');
    if (sl == std::string::npos) throw Error(ExitCode::usage, "--shard takes i/n, e.g. 0/4");
    try {
      ro.shard = std::stoi(shard.substr(0, sl));
      ro.shards = std::stoi(shard.substr(sl + 1));
    } catch (const std::exception&) {
      throw Error(ExitCode::usage, "--shard takes i/n with integers, got '" + shard + "'");
    }
  }

  // A Slurm array task or a Kubernetes Indexed Job pod: its shard, into <out>/shard-<i>-of-<n> (one folder per
  // shard: appends from several machines to one file on a shared filesystem would interleave). Pairs finished in
  // any other shard folder are skipped, so a re-submission with another count resumes.
  void shard_from_scheduler() {
    auto sc = shard_from_environment(getenv_str, shard_count);
    if (sc.count == 0) return;
    ro.shard = sc.index;
    ro.shards = sc.count;
    std::string base = ro.out_dir;
    while (base.size() > 1 && base.back() == '/') base.pop_back();
    ro.out_dir = fmt::format("{}/shard-{}-of-{}", base, sc.index, sc.count);
    if (fs::exists(base))
      for (const auto& d : results_folders(base))
        if (d != ro.out_dir && !starts_with(d, ro.out_dir + "/")) ro.done_dirs.push_back(d);
    if (!out.quiet) log_info("shard {}/{} from {}: results in {}", sc.index, sc.count, sc.source, ro.out_dir);
  }

  int run() {
    for (const auto& kv : repo_map) {
      auto eq = kv.find('=');
      if (eq == std::string::npos) throw Error(ExitCode::usage, "--repo takes NAME=PATH, got '" + kv + "'");
      tl.repos[kv.substr(0, eq)] = kv.substr(eq + 1);
    }
    ro.methods = split_list(methods);
    if (ro.methods.empty()) throw Error(ExitCode::usage, "--methods is empty");
    apply_params(ro.gen, params);
    ro.done_dirs = done_in;
    if (!shard.empty())
      parse_shard();
    else
      shard_from_scheduler();
    auto tasks = load_tasks(tasks_path, tl);
    if (jobs < 1) throw Error(ExitCode::usage, "--jobs takes a count >= 1");
    if (jobs > 1) return run_parallel_jobs();
    ro.quiet = out.quiet;
    ModelNeeds needs;
    for (const auto& m : ro.methods) needs |= evaluation_method_needs(m);
    ModelSet ms = open_models(models, needs);
    if (ro.gen.python.empty() && !std::getenv("REPOCTX_PYTHON") && ms.session)
      ro.gen.python = ms.session->config().python;
    std::map<std::string, std::unique_ptr<Engine>> engines;
    auto engine_for = [&](const std::string& repo) -> Engine& {
      auto& e = engines[repo];
      if (!e) {
        RepoOptions r;
        r.repo = repo;
        e = open_engine(r, out);
      }
      return *e;
    };
    int n = run_evaluation(tasks, ro, ms.models, engine_for);
    if (!out.quiet) log_info("{} result(s) written to {}/results.jsonl", n, ro.out_dir);
    if (!done_in.empty()) return 0;  // a job of --jobs: the parent writes the table
    write_tables(ro.out_dir, {ro.out_dir});
    return 0;
  }
};

// Tasks from the repository's own tests; with --validate, only those gold passes and stub fails.
struct MakeTasksCmd {
  RepoOptions repo;
  OutputOptions out;
  std::string out_path, validate_dir;
  TaskBuildOptions tbo;
  TestRunOptions tests;

  int run() {
    auto eng = open_engine(repo, out);
    std::string root = fs::absolute(repo.repo).lexically_normal().string();
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    auto tasks = build_tasks(*eng, root, tbo);
    if (!out.quiet) log_info("{} candidate task(s) from the test files of {}", tasks.size(), root);
    if (tasks.empty())
      throw Error(ExitCode::not_found,
                  fmt::format("no candidate task: no function the test files reference has {}-{} body lines "
                              "(see --min-lines, --max-lines)",
                              tbo.min_body_lines, tbo.max_body_lines));
    if (validate_dir.empty()) {
      write_tasks(out_path, tasks);
      if (!out.quiet)
        log_info("wrote {} (not validated: run with --validate DIR to keep only tasks gold passes and stub fails)",
                 out_path);
      return 0;
    }
    RunnerOptions ro;
    ro.out_dir = validate_dir;
    ro.tests = tests;
    ro.quiet = out.quiet;
    auto tv = validate_tasks(tasks, ro, [&](const std::string&) -> Engine& { return *eng; });
    write_tasks(out_path, tv.kept);
    for (const auto& [id, why] : tv.gold_failures)
      log_warn("{}: the tests fail with the real body; the end of its log:\n{}", id, indent_lines(why, "    "));
    if (tv.gold_failed > 0 && tv.gold_failed == static_cast<int>(tasks.size()))
      log_warn(
          "every task failed with its real body: the test command itself does not work here (`{}` in {}); "
          "the logs are under {}/logs/gold/",
          tbo.test_template, root, validate_dir);
    if (out.json)
      print_json({{"candidates", tasks.size()},
                  {"kept", tv.kept.size()},
                  {"gold_failed", tv.gold_failed},
                  {"stub_passed", tv.stub_passed},
                  {"tasks", out_path},
                  {"validation", validate_dir}});
    else
      fmt::print("{} task(s) kept of {} candidates ({} fail with the real body, {} pass without it); written to {}\n",
                 tv.kept.size(), tasks.size(), tv.gold_failed, tv.stub_passed, out_path);
    if (tv.kept.empty())
      throw Error(ExitCode::bad_input,
                  fmt::format("no task validated ({} fail with the real body, {} pass without it): the reasons are "
                              "above; {} holds the logs",
                              tv.gold_failed, tv.stub_passed, validate_dir));
    return 0;
  }
};

void add_evaluate(CLI::App& app, Commands& out) {
  auto e = std::make_shared<EvaluateCmd>();
  auto* c = app.add_subcommand("evaluate",
                               "REPOCOD-style Pass@1: hide each task's body, generate it with each method, run the "
                               "tests on a scratch copy in a sandbox (your tree is never edited)");
  c->add_option("tasks", e->tasks_path,
                "tasks (JSONL or JSON array; REPOCOD fields or repo/file/function/test_command)")
      ->required();
  c->add_option("--methods", e->methods,
                "comma-separated: projagent, projagent-no-procedural, projagent-no-semantic, projagent-no-feedback, "
                "sparse, dense, same-file, gold, stub; given (the task's `given_body` verbatim: harness tests)")
      ->capture_default_str();
  c->add_option("--out", e->ro.out_dir,
                "results folder (results.jsonl, logs/, artifacts/, table.md, table.csv); re-running resumes")
      ->required();
  const char* g = "Scale-out";
  c->add_option("--shard", e->shard,
                "i/n: run the tasks whose position mod n is i (0 <= i < n); default: from a Slurm array job "
                "(SLURM_ARRAY_TASK_ID/COUNT) or a Kubernetes Indexed Job (JOB_COMPLETION_INDEX), into "
                "<out>/shard-<i>-of-<n>")
      ->group(g);
  c->add_option("--shard-count", e->shard_count,
                "shards of a Kubernetes Indexed Job (its `completions`; or env REPOCTX_SHARD_COUNT)")
      ->group(g);
  c->add_option("--jobs", e->jobs,
                "parallel runner processes on this machine (each a shard writing <out>/jobs/<k>; one table)")
      ->capture_default_str()
      ->group(g);
  c->add_option("--done-in", e->done_in, "")->group("");  // internal: results folders of sibling jobs
  g = "Tests";
  add_test_run_options(c, e->ro.tests, g);
  c->add_option("--repo", e->repo_map, "NAME=PATH: local path of a REPOCOD repository (repeatable)")->group(g);
  c->add_option("--repos-dir", e->tl.repos_dir, "folder holding REPOCOD repositories by name")->group(g);
  c->add_option("--test-template", e->tl.test_template,
                "REPOCOD tasks: command running the relevant tests ({tests}: one argument per node id or file)")
      ->capture_default_str()
      ->group(g);
  c->add_option("--test-cases-dir", e->tl.test_cases_dir,
                "REPOCOD tasks: the target_test_cases folder copied out of REPOCOD's image (its "
                "failed_tests_*.txt files list each task's test node ids)")
      ->group(g);
  c->add_flag("--early-stop", e->tl.early_stop,
              "REPOCOD tasks: pytest -x, as REPOCOD's evaluate.py by default (stops at the first failure; the "
              "verdict is the same)")
      ->group(g);
  g = "Generation";
  c->add_option("--max-tokens", e->ro.gen.max_tokens, "output tokens per generation")->capture_default_str()->group(g);
  c->add_option("--max-rounds", e->ro.gen.max_rounds, "refinement rounds")->capture_default_str()->group(g);
  c->add_option("--budget", e->ro.gen.prompt_budget_tokens, "estimated tokens of context per prompt")
      ->capture_default_str()
      ->group(g);
  c->add_option("--param", e->params,
                "generation (semantic_top, baseline_top, context_cut_chars) or procedural retrieval NAME=VALUE "
                "(`repoctx parameters`)")
      ->group(g);
  c->add_option("--python", e->ro.gen.python,
                "python3 whose compile() is the syntax check (default: $REPOCTX_PYTHON, the config's \"python\", "
                "python3 on PATH; none = tree-sitter)")
      ->group(g);
  add_output_options(c, e->out, false);
  add_model_options(c, e->models);
  out.push_back({c, [e] { return e->run(); }});
}

void add_make_tasks(CLI::App& app, Commands& out) {
  auto m = std::make_shared<MakeTasksCmd>();
  auto* c = app.add_subcommand("make-tasks",
                               "REPOCOD-style tasks from a repository that ships its tests: the functions its test "
                               "files reference; --validate keeps those whose tests pass with the real body and fail "
                               "without it");
  add_repo_options(c, m->repo);
  add_output_options(c, m->out);
  c->add_option("--out", m->out_path, "tasks file to write (JSONL, read by `evaluate`)")->required();
  c->add_option("--max", m->tbo.max_tasks, "tasks to propose, round-robin over the target files")
      ->capture_default_str();
  c->add_option("--min-lines", m->tbo.min_body_lines, "fewest body lines of a target")->capture_default_str();
  c->add_option("--max-lines", m->tbo.max_body_lines, "most body lines of a target")->capture_default_str();
  c->add_option("--max-test-files", m->tbo.max_test_files, "test files a task runs")->capture_default_str();
  c->add_option("--repo-id", m->tbo.repo_id, "table column of the tasks (default: the folder's name)");
  c->add_option("--test-template", m->tbo.test_template,
                "command running the test files ({tests}), in the repository root")
      ->capture_default_str();
  c->add_option("--validate", m->validate_dir,
                "run gold and stub into this folder (resumable) and write only the tasks they validate");
  add_test_run_options(c, m->tests, "Validation test runs");
  out.push_back({c, [m] { return m->run(); }});
}

}  // namespace

void add_evaluate_commands(CLI::App& app, Commands& out) {
  add_evaluate(app, out);
  add_make_tasks(app, out);

  struct TableCmd {
    std::vector<std::string> dirs;
    bool csv = false;
  };
  auto t = std::make_shared<TableCmd>();
  auto* c = app.add_subcommand(
      "table", "Pass@1 table (Markdown or CSV) of the results of one or more evaluate --out folders (shards)");
  c->add_option("dirs", t->dirs, "results folders (their shard-*/ and jobs/*/ folders are read too)")->required();
  c->add_flag("--csv", t->csv, "CSV instead of Markdown");
  out.push_back({c, [t] {
                   std::cout << results_table(t->dirs, t->csv);
                   return 0;
                 }});
}

}  // namespace repoctx
