#include "eval/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "eval/repocod.h"
#include "eval/scratch_tree.h"
#include "generate/splice.h"
#include "index/index.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;
namespace fs = std::filesystem;

// ------------------------------------------------------------------------------------------- tasks
namespace {

std::string str_field(const json& j, const char* k, const std::string& where, bool required = true) {
  if (j.contains(k) && j[k].is_string()) return j[k].get<std::string>();
  if (required) throw Error(ExitCode::bad_input, where + ": missing string field '" + k + "'");
  return "";
}

// A task's command as argv; a command that needs a shell is an error naming the task.
template <class F>
std::vector<std::string> command_argv(const std::string& where, F&& split) {
  try {
    return split();
  } catch (const Error& e) {
    throw Error(e.code(), where + ": " + e.what());
  }
}

// A REPOCOD task's relevant tests: the dataset's relevant-tests file (a .txt path: its node ids), or node
// ids / test files given inline (a string or a list of strings).
std::vector<std::string> repocod_tests(const json& j, const TaskLoadOptions& o, const std::string& where) {
  const char* key = j.contains("relavent_test_path") ? "relavent_test_path" : "relevant_test_path";
  if (!j.contains(key))
    throw Error(ExitCode::bad_input, where + ": missing 'relavent_test_path' (REPOCOD's relevant tests)");
  const json& tp = j[key];
  std::vector<std::string> tests;
  if (tp.is_string() && ends_with(tp.get<std::string>(), ".txt"))
    return read_repocod_test_ids(tp.get<std::string>(), o.test_cases_dir, where);
  if (tp.is_string()) tests.push_back(tp.get<std::string>());
  if (tp.is_array())
    for (const auto& x : tp) {
      if (!x.is_string()) throw Error(ExitCode::bad_input, where + ": '" + key + "' must hold strings only");
      tests.push_back(x.get<std::string>());
    }
  if (tests.empty()) throw Error(ExitCode::bad_input, where + ": '" + key + "' names no test");
  return tests;
}

EvalTask task_from_json(const json& j, const TaskLoadOptions& o, const std::string& where) {
  if (!j.is_object()) throw Error(ExitCode::bad_input, where + ": a task must be a JSON object");
  EvalTask t;
  if (j.contains("target_module_path")) {  // REPOCOD
    std::string name = str_field(j, "repository", where);
    auto it = o.repos.find(name);
    if (it != o.repos.end())
      t.repo = it->second;
    else if (!o.repos_dir.empty())
      t.repo = o.repos_dir + "/" + name;
    else
      throw Error(ExitCode::usage, where + ": repository '" + name + "' has no local path: pass --repo " + name +
                                       "=PATH or --repos-dir DIR");
    t.file = str_field(j, "target_module_path", where);
    t.function = str_field(j, "function_name", where);
    t.full_function = str_field(j, "full_function", where, false);
    t.repo_id = name;
    std::vector<std::string> tests = repocod_tests(j, o, where);
    if (o.early_stop) tests.insert(tests.begin(), "-x");
    t.test_argv = command_argv(where, [&] { return expand_tests(o.test_template, tests, false); });
    t.test_command = join_command(t.test_argv);
    t.id = j.contains("repo_id") ? (j["repo_id"].is_string() ? j["repo_id"].get<std::string>() : j["repo_id"].dump())
                                 : name + "::" + t.file + "::" + t.function;
    if (j.contains("repo_id")) t.id = name + "/" + t.id;
  } else {
    t.repo = str_field(j, "repo", where);
    t.file = str_field(j, "file", where);
    t.function = str_field(j, "function", where);
    if (j.contains("test_command") && j["test_command"].is_array()) {
      for (const auto& a : j["test_command"]) {
        if (!a.is_string()) throw Error(ExitCode::bad_input, where + ": 'test_command' must hold strings only");
        t.test_argv.push_back(a.get<std::string>());
      }
      t.test_command = join_command(t.test_argv);
    } else {
      t.test_command = str_field(j, "test_command", where);
      t.test_argv = command_argv(where, [&] { return split_command(t.test_command); });
    }
    if (t.test_argv.empty()) throw Error(ExitCode::bad_input, where + ": 'test_command' is empty");
    t.repo_id = str_field(j, "repo_id", where, false);
    if (t.repo_id.empty()) t.repo_id = fs::path(t.repo).filename().string();
    t.id = str_field(j, "id", where, false);
    if (t.id.empty()) t.id = t.repo_id + "::" + t.file + "::" + t.function;
    t.given_body = str_field(j, "given_body", where, false);
  }
  return t;
}

}  // namespace

std::vector<EvalTask> load_tasks(const std::string& path, const TaskLoadOptions& o) {
  std::string text = read_file(path);
  std::vector<EvalTask> out;
  size_t first = text.find_first_not_of(" \t\r\n");
  if (first != std::string::npos && text[first] == '[') {
    json a = json::parse(text, nullptr, false);
    if (a.is_discarded()) throw Error(ExitCode::bad_input, path + ": not valid JSON");
    for (size_t i = 0; i < a.size(); ++i)
      out.push_back(task_from_json(a[i], o, fmt::format("{} item {}", path, i + 1)));
  } else {
    std::istringstream in(text);
    std::string line;
    int n = 0;
    while (std::getline(in, line)) {
      ++n;
      if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
      json j = json::parse(line, nullptr, false);
      if (j.is_discarded()) throw Error(ExitCode::bad_input, fmt::format("{} line {}: not valid JSON", path, n));
      out.push_back(task_from_json(j, o, fmt::format("{} line {}", path, n)));
    }
  }
  std::set<std::string> ids;
  for (const auto& t : out)
    if (!ids.insert(t.id).second) throw Error(ExitCode::bad_input, path + ": task id '" + t.id + "' appears twice");
  return out;
}

const std::vector<std::string>& evaluation_methods() {
  static const std::vector<std::string> m = [] {
    auto v = generation_methods();
    v.push_back("gold");
    v.push_back("stub");
    v.push_back("given");
    return v;
  }();
  return m;
}

ModelNeeds evaluation_method_needs(const std::string& method) {
  const auto& all = evaluation_methods();
  if (std::find(all.begin(), all.end(), method) == all.end()) {
    check_not_unreproducible(method);
    std::string names;
    for (const auto& x : all) names += (names.empty() ? "" : ", ") + x;
    throw Error(ExitCode::usage, "unknown method '" + method + "'; methods: " + names);
  }
  if (method == "gold" || method == "stub" || method == "given") return {};
  return generation_method_needs(method);
}

// ------------------------------------------------------------------------------------------ shards
namespace {

bool parse_int(const std::string& s, int& out) {
  if (s.empty()) return false;
  try {
    size_t used = 0;
    long v = std::stol(s, &used);
    if (used != s.size() || v < INT32_MIN || v > INT32_MAX) return false;
    out = static_cast<int>(v);
    return true;
  } catch (const std::exception&) {
    return false;
  }
}

int env_int(const std::function<std::string(const char*)>& env, const char* name, int fallback) {
  std::string v = env(name);
  if (v.empty()) return fallback;
  int x = 0;
  if (!parse_int(v, x)) throw Error(ExitCode::usage, fmt::format("{}='{}' is not an integer", name, v));
  return x;
}

}  // namespace

ShardChoice shard_from_environment(const std::function<std::string(const char*)>& env, int count) {
  ShardChoice c;
  if (!env("SLURM_ARRAY_TASK_ID").empty()) {
    int id = env_int(env, "SLURM_ARRAY_TASK_ID", 0), n = env_int(env, "SLURM_ARRAY_TASK_COUNT", 0);
    int min = env_int(env, "SLURM_ARRAY_TASK_MIN", 0), step = env_int(env, "SLURM_ARRAY_TASK_STEP", 1);
    if (n < 1 || step < 1 || (id - min) % step != 0 || (id - min) / step < 0 || (id - min) / step >= n)
      throw Error(ExitCode::usage,
                  fmt::format("Slurm array task {} (min {}, step {}, count {}) does not name a shard: submit a "
                              "contiguous array (sbatch --array=0-{}) or pass --shard i/n",
                              id, min, step, n, std::max(n, 1) - 1));
    c.index = (id - min) / step;
    c.count = n;
    c.source = fmt::format("SLURM_ARRAY_TASK_ID={} of SLURM_ARRAY_TASK_COUNT={}", id, n);
    return c;
  }
  if (!env("JOB_COMPLETION_INDEX").empty()) {
    int index = env_int(env, "JOB_COMPLETION_INDEX", 0);
    int n = count > 0 ? count : env_int(env, "REPOCTX_SHARD_COUNT", 0);
    if (n < 1)
      throw Error(ExitCode::usage,
                  "JOB_COMPLETION_INDEX is set (a Kubernetes Indexed Job) but not the number of shards: pass "
                  "--shard-count N or set REPOCTX_SHARD_COUNT to the Job's `completions`");
    if (index < 0 || index >= n)
      throw Error(ExitCode::usage,
                  fmt::format("JOB_COMPLETION_INDEX={} is outside 0..{} (shard count {})", index, n - 1, n));
    c.index = index;
    c.count = n;
    c.source = fmt::format("JOB_COMPLETION_INDEX={} of {}", index, n);
    return c;
  }
  if (count > 0)
    throw Error(ExitCode::usage,
                "--shard-count is for Kubernetes Indexed Jobs (it needs JOB_COMPLETION_INDEX); elsewhere pass "
                "--shard i/n");
  return c;
}

// ------------------------------------------------------------------------------------- test runs
namespace {

// One lock per repository across processes: parallel jobs and shards on one machine open (and so refresh) a
// repository's index one at a time.
class RepoLock {
 public:
  explicit RepoLock(const std::string& repo) {
    std::string key = fs::weakly_canonical(repo).string();
    std::string path =
        (fs::temp_directory_path() / ("repoctx-eval-" + content_hash(key).substr(0, 16) + ".lock")).string();
    fd_ = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (fd_ >= 0) ::flock(fd_, LOCK_EX);
  }
  ~RepoLock() {
    if (fd_ >= 0) ::close(fd_);
  }

 private:
  int fd_ = -1;
};

std::string safe_name(const std::string& id) {
  std::string s;
  for (char c : id) s += std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.' ? c : '_';
  if (s.size() > 120) s = s.substr(0, 100) + "-" + content_hash(id).substr(0, 16);
  return s;
}

std::string tail_of(const std::string& path, size_t n) {
  std::string s = read_file_if_present(path).value_or("");
  return s.size() > n ? s.substr(s.size() - n) : s;
}

std::string normal_abs(const std::string& p) {
  std::string s = fs::absolute(p).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// Versions before the scratch copies edited the user's file in place behind a journal; one killed with the
// whole process group left the file stubbed. Say how to put it back (nothing here writes the user's tree).
void warn_legacy_journal(const std::string& out_dir) {
  std::string entry = out_dir + "/journal/pending.json";
  if (!fs::exists(entry)) return;
  json j = json::parse(read_file(entry), nullptr, false);
  std::string path = !j.is_discarded() && j.contains("path") ? j["path"].get<std::string>() : "(unknown)";
  log_warn(
      "{} was left by an older repoctx killed mid-test: '{}' may still hold a generated body; its original "
      "is {}/journal/pending.orig (copy it back, then delete the journal folder)",
      entry, path, out_dir);
}

// A record cut by a kill (no newline) would swallow the next one appended: end it first (read_results skips it).
void terminate_last_line(const std::string& path) {
  std::ifstream in(path, std::ios::binary | std::ios::ate);
  if (!in || in.tellg() <= 0) return;
  in.seekg(-1, std::ios::end);
  char last = 0;
  in.get(last);
  if (last != '\n') std::ofstream(path, std::ios::app | std::ios::binary) << "\n";
}

std::set<std::pair<std::string, std::string>> finished_pairs(const RunnerOptions& o) {
  std::set<std::pair<std::string, std::string>> done;
  std::vector<std::string> paths{o.out_dir + "/results.jsonl"};
  for (const auto& d : o.done_dirs) paths.push_back(d + "/results.jsonl");
  for (const auto& p : paths)
    if (fs::exists(p))
      for (const auto& j : read_results(p)) done.insert({j["task"].get<std::string>(), j["method"].get<std::string>()});
  return done;
}

void check_methods(const RunnerOptions& o, const Models& models) {
  for (const auto& m : o.methods)
    if (evaluation_method_needs(m).llm) models.need_llm("method '" + m + "' (gold and stub need none)");
  if (o.shards < 1 || o.shard < 0 || o.shard >= o.shards)
    throw Error(ExitCode::usage, fmt::format("--shard {}/{}: want i/n with 0 <= i < n", o.shard, o.shards));
}

}  // namespace

// ------------------------------------------------------------------------------------- test runs
TestRunner::TestRunner(const TestRunOptions& t, const std::string& out)
    : opts_(t), sandbox_(Sandbox::create(t.sandbox)), out_dir_(normal_abs(out)), home_(home_folder()) {
  scratch_root_ = normal_abs(t.scratch_root.empty() ? out + "/scratch" : t.scratch_root);
  fs::create_directories(scratch_root_);
  remove_stale_scratch(scratch_root_);
  policy_.link_unwritable = sandbox_.enabled();
  policy_.test_uid = sandbox_.uid();
  if (::geteuid() == 0) remove_stale_pids_cgroups();
}

CommandResult TestRunner::run(const EvalTask& task, const std::string& patched, const std::string& log_path,
                              json& rec) {
  const CommandLimits& lim = opts_.limits;
  std::string repo = normal_abs(task.repo);
  std::vector<std::string> exclude{out_dir_, scratch_root_};
  // The sandbox shows a git work tree's .git read-only instead of copying it into every scratch copy.
  std::error_code ec;
  bool share_git = sandbox_.enabled() && fs::is_directory(repo + "/.git", ec);
  if (share_git) exclude.push_back(repo + "/.git");
  ScratchTree tree(repo, scratch_root_ + "/" + next_scratch_name(), {{task.file, patched}}, policy_, exclude);
  const auto& st = tree.stats();
  rec["scratch"] = {{"linked", st.linked}, {"copied", st.copied}, {"seconds", st.seconds}};
  // The task's command as argv, never through a shell; leading NAME=value words set its environment.
  // In the sandbox bubblewrap finds the program in PATH itself (entries under the hidden home, such as
  // pyenv shims, are skipped there as a shell would); unconfined, run_limited needs its path.
  PreparedCommand cmd =
      prepare_command(task.test_argv.empty() ? split_command(task.test_command) : task.test_argv, !sandbox_.enabled());
  std::vector<std::string> argv = std::move(cmd.argv);
  ProcessSetup setup;
  setup.log_path = log_path;
  setup.env_extra = {"PYTHONDONTWRITEBYTECODE=1"};
  setup.env_extra.insert(setup.env_extra.end(), cmd.env.begin(), cmd.env.end());
  if (sandbox_.enabled()) {
    SandboxMount m;
    m.tree = tree.path();
    m.mount_at = {repo};  // editable installs and absolute paths in the command reach the copy
    if (share_git) {
      m.original = repo;
      m.shared_readonly = {".git"};
    }
    std::string canonical = fs::canonical(repo, ec).string();
    if (!ec && canonical != repo) m.mount_at.push_back(canonical);
    m.hidden = {home_, out_dir_, scratch_root_};  // other runs' artifacts hold gold diffs
    argv = sandbox_.wrap(argv, m, lim.processes);
  } else {
    setup.cwd = tree.path();
  }
  std::unique_ptr<PidsCgroup> cgroup;
  if (::geteuid() == 0 && lim.processes > 0) {  // the kernel never applies RLIMIT_NPROC to root
    cgroup = PidsCgroup::create(lim.processes);
    if (cgroup) setup.cgroup_procs_fd = cgroup->procs_fd();
    if (!cgroup && !cgroup_warned_)
      log_warn(
          "running as root without a writable pids cgroup: the test runs have no process limit (run as an "
          "unprivileged user, or give the container a writable cgroup)");
    cgroup_warned_ = true;
  }
  rec["sandboxed"] = sandbox_.enabled();
  return run_limited(argv, setup, lim, &g_interrupted);
}

MethodPatch patch_for_method(Engine& eng, const Models& models, const EvalTask& task, const std::string& method,
                             const GenerationParams& gen, json& rec) {
  std::string spec = task.file + "::" + task.function;
  std::string how;
  TargetRef t = resolve_repocod_target(eng, task.file, task.function, task.full_function, &how);
  rec["target"] = eng.target_name(t.entity);
  rec["target_resolved_by"] = how;
  const auto& te = eng.view().entities()[t.entity];
  const std::string& original = eng.view().content(t.file);
  if (te.body_start_line <= 0) throw Error(ExitCode::bad_input, "`" + spec + "` has no body to hide");
  MethodPatch p;
  const Language lang = eng.view().files()[t.file].language;
  if (method == "gold" || method == "stub" || method == "given") {
    std::string body;
    if (method == "gold") {
      body = current_body(original, te, lang);
    } else if (method == "stub") {
      body = stub_body(lang, "repoctx stub");
    } else {
      if (task.given_body.empty())
        throw Error(ExitCode::bad_input, "method `given` needs the task field `given_body` (task " + task.id + ")");
      body = task.given_body;
    }
    p.patched = splice_body(original, te, body, lang);
  } else {
    GenerationParams gp = gen;
    gp.method = method;
    // The benchmark's other targets are out of every context pool (ProjAgent 4.1); the target itself is
    // hidden anyway.
    gp.withheld.clear();
    for (int other : gen.withheld)
      if (other != t.entity) gp.withheld.push_back(other);
    auto g = generate_function(eng, models, t, gp);
    p.patched = std::move(g.patched_file);
    rec["rounds"] = g.rounds;
    rec["findings"] = g.findings.size();
    rec["llm_calls"] = g.usage.total().calls;
    rec["llm_cached"] = g.usage.total().cached;
    rec["withheld"] = gp.withheld.size();
    rec["withheld_in_context"] = g.trace["withheld_in_context"].size();
    p.trace = std::move(g.trace);
  }
  p.diff = unified_diff(task.file, original, p.patched);
  return p;
}

std::vector<json> read_results(const std::string& path) {
  std::vector<json> out;
  std::istringstream in(read_file(path));
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.contains("task") && j.contains("method")) out.push_back(std::move(j));
  }
  return out;
}

// ------------------------------------------------------------------------------------------ runner
namespace {

// Every task's target in `repo`, as entity indices of its engine: a benchmark's targets are out of every
// ProjAgent context pool of every task (ProjAgent 4.1), and they rank their files first in function
// selection. All tasks of the file count, whatever the shard. Targets that do not resolve are left out
// (their own task reports the error).
std::vector<int> repository_targets(const std::vector<EvalTask>& tasks, const std::string& repo, const Engine& eng) {
  std::vector<int> out;
  for (const auto& t : tasks) {
    if (t.repo != repo) continue;
    try {
      out.push_back(resolve_repocod_target(eng, t.file, t.function, t.full_function).entity);
    } catch (const Error&) {
    }
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

}  // namespace

int run_evaluation(const std::vector<EvalTask>& tasks, const RunnerOptions& o, const Models& models,
                   const std::function<Engine&(const std::string&)>& engine_for) {
  check_methods(o, models);
  fs::create_directories(o.out_dir);
  warn_legacy_journal(o.out_dir);
  TestRunner tests(o.tests, o.out_dir);
  std::string results_path = o.out_dir + "/results.jsonl";
  auto done = finished_pairs(o);
  terminate_last_line(results_path);
  std::ofstream results(results_path, std::ios::app);
  std::map<std::string, std::vector<int>> targets_of_repo;
  int written = 0;
  for (size_t ti = 0; ti < tasks.size(); ++ti) {
    if (static_cast<int>(ti % static_cast<size_t>(o.shards)) != o.shard) continue;
    const EvalTask& task = tasks[ti];
    for (const auto& method : o.methods) {
      if (done.count({task.id, method})) continue;
      throw_if_interrupted("finished tasks are kept, re-run to resume");
      Engine* eng = nullptr;
      {
        RepoLock lock(task.repo);
        eng = &engine_for(task.repo);
      }
      json rec = {
          {"task", task.id}, {"method", method}, {"repo_id", task.repo_id}, {"test_command", task.test_command}};
      MethodPatch patch;
      try {
        GenerationParams gen = o.gen;
        if (method != "gold" && method != "stub" && method != "given") {
          if (!targets_of_repo.count(task.repo))
            targets_of_repo[task.repo] = repository_targets(tasks, task.repo, *eng);
          gen.withheld = targets_of_repo[task.repo];
        }
        patch = patch_for_method(*eng, models, task, method, gen, rec);
      } catch (const Error& e) {
        if (e.code() == ExitCode::interrupted) throw;
        rec["passed"] = false;
        rec["error"] = e.what();
        results << rec.dump() << "\n" << std::flush;
        ++written;
        log_warn("{} [{}]: {}", task.id, method, e.what());
        continue;
      }
      std::string log_dir = o.out_dir + "/logs/" + method, art_dir = o.out_dir + "/artifacts/" + method;
      fs::create_directories(log_dir);
      fs::create_directories(art_dir);
      std::string log_path = log_dir + "/" + safe_name(task.id) + ".log";
      CommandResult cr = tests.run(task, patch.patched, log_path, rec);
      if (cr.interrupted)
        throw Error(ExitCode::interrupted,
                    "interrupted during the tests of " + task.id + "; finished tasks are kept, re-run to resume");
      rec["passed"] = cr.exit_code == 0;
      rec["exit_code"] = cr.exit_code;
      rec["timed_out"] = cr.timed_out;
      rec["test_seconds"] = cr.seconds;
      rec["log_tail"] = sanitize_utf8(tail_of(log_path, 2000));
      std::ofstream(art_dir + "/" + safe_name(task.id) + ".json")
          << json{{"task", task.id}, {"method", method}, {"diff", patch.diff}, {"trace", patch.trace}}.dump(
                 2, ' ', false, json::error_handler_t::replace)
          << "\n";
      results << rec.dump(-1, ' ', false, json::error_handler_t::replace) << "\n" << std::flush;
      ++written;
      if (!o.quiet)
        log_info("{} [{}]: {}{}", task.id, method, cr.exit_code == 0 ? "passed" : "failed",
                 cr.timed_out ? " (timeout)" : "");
    }
  }
  return written;
}

std::vector<std::string> results_folders(const std::string& dir) {
  std::vector<std::string> out;
  if (fs::exists(dir + "/results.jsonl")) out.push_back(dir);
  std::error_code ec;
  std::vector<fs::path> subs;
  for (const auto& d : fs::directory_iterator(dir, ec)) {
    std::string name = d.path().filename().string();
    if (d.is_directory(ec) && (starts_with(name, "shard-") || name == "jobs")) subs.push_back(d.path());
  }
  std::sort(subs.begin(), subs.end());
  for (const auto& s : subs) {
    if (s.filename() == "jobs") {
      std::vector<fs::path> jobs;
      for (const auto& j : fs::directory_iterator(s, ec))
        if (j.is_directory(ec)) jobs.push_back(j.path());
      std::sort(jobs.begin(), jobs.end());
      for (const auto& j : jobs)
        for (auto& r : results_folders(j.string())) out.push_back(std::move(r));
    } else {
      for (auto& r : results_folders(s.string())) out.push_back(std::move(r));
    }
  }
  return out;
}

std::string results_table(const std::vector<std::string>& dirs, bool csv) {
  // method -> group -> (passed, total); the last record of a (task, method) wins.
  std::map<std::pair<std::string, std::string>, json> last;
  std::vector<std::string> folders;
  for (const auto& d : dirs) {
    auto found = results_folders(d);
    if (found.empty())
      throw Error(ExitCode::not_found,
                  "no results in '" + d + "' (no results.jsonl in it or in its shard-*/ and jobs/*/)");
    folders.insert(folders.end(), found.begin(), found.end());
  }
  for (const auto& d : folders) {
    for (auto& j : read_results(d + "/results.jsonl")) {
      std::pair<std::string, std::string> key{j["task"].get<std::string>(), j["method"].get<std::string>()};
      last[std::move(key)] = std::move(j);
    }
  }
  std::vector<std::string> methods, groups;
  std::map<std::string, std::map<std::string, std::pair<int, int>>> cell;
  for (const auto& [k, j] : last) {
    const std::string& m = k.second;
    std::string g = j.value("repo_id", std::string("?"));
    if (std::find(methods.begin(), methods.end(), m) == methods.end()) methods.push_back(m);
    if (std::find(groups.begin(), groups.end(), g) == groups.end()) groups.push_back(g);
    auto& c = cell[m][g];
    auto& a = cell[m]["\x01all"];
    c.second++, a.second++;
    if (j.value("passed", false)) c.first++, a.first++;
  }
  std::sort(groups.begin(), groups.end());
  auto order = evaluation_methods();
  std::sort(methods.begin(), methods.end(), [&](const std::string& a, const std::string& b) {
    return std::find(order.begin(), order.end(), a) < std::find(order.begin(), order.end(), b);
  });
  std::string s;
  if (csv) {
    s = "method,group,passed,total,pass_at_1\n";
    for (const auto& m : methods) {
      for (const auto& g : groups)
        if (cell[m].count(g)) {
          auto [p, n] = cell[m][g];
          s += fmt::format("{},{},{},{},{:.4f}\n", m, g, p, n, n ? double(p) / n : 0.0);
        }
      auto [p, n] = cell[m]["\x01all"];
      s += fmt::format("{},all,{},{},{:.4f}\n", m, p, n, n ? double(p) / n : 0.0);
    }
    return s;
  }
  s = "| Method |";
  for (const auto& g : groups) s += " " + g + " |";
  s += " All |\n|---|";
  for (size_t i = 0; i <= groups.size(); ++i) s += "---|";
  s += "\n";
  auto fmt_cell = [](std::pair<int, int> c) {
    return c.second ? fmt::format("{:.2f}% ({}/{})", 100.0 * c.first / c.second, c.first, c.second) : std::string("-");
  };
  for (const auto& m : methods) {
    s += "| " + m + " |";
    for (const auto& g : groups) s += " " + (cell[m].count(g) ? fmt_cell(cell[m][g]) : std::string("-")) + " |";
    s += " " + fmt_cell(cell[m]["\x01all"]) + " |\n";
  }
  return s;
}

}  // namespace repoctx
