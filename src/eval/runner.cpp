#include "eval/runner.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/format.h>

#include "generate/splice.h"
#include "index/index.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/text.h"

extern char** environ;

namespace repoctx {

using nlohmann::json;
namespace fs = std::filesystem;

// ------------------------------------------------------------------------------------------- tasks
namespace {

std::string read_all(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ExitCode::not_found, "cannot read '" + path + "'");
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

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
    std::vector<std::string> tests;
    if (j.contains("relavent_test_path")) {
      const auto& tp = j["relavent_test_path"];
      if (tp.is_string())
        tests.push_back(tp.get<std::string>());
      else if (tp.is_array())
        for (const auto& x : tp)
          if (x.is_string()) tests.push_back(x.get<std::string>());
    }
    if (tests.empty())
      throw Error(ExitCode::bad_input, where + ": missing 'relavent_test_path' (REPOCOD's test files)");
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
  }
  return t;
}

}  // namespace

std::vector<EvalTask> load_tasks(const std::string& path, const TaskLoadOptions& o) {
  std::string text = read_all(path);
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
    return v;
  }();
  return m;
}

// ----------------------------------------------------------------------------- journal and guard
namespace {

void write_atomic(const std::string& path, const std::string& data) {
  std::string tmp = path + ".repoctx-tmp";
  {
    int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0)
      throw Error(ExitCode::bad_input, "cannot write '" + tmp + "' (is the repository writable? copy it first)");
    size_t off = 0;
    while (off < data.size()) {
      ssize_t w = ::write(fd, data.data() + off, data.size() - off);
      if (w <= 0) {
        ::close(fd);
        throw Error(ExitCode::failure, "write failed for '" + tmp + "'");
      }
      off += static_cast<size_t>(w);
    }
    ::fsync(fd);
    ::close(fd);
  }
  if (::rename(tmp.c_str(), path.c_str()) != 0) throw Error(ExitCode::failure, "cannot replace '" + path + "'");
}

// Puts the original back with its mode and modification time, so the index sees the file unchanged.
void restore_entry(const std::string& dir) {
  std::string entry = dir + "/pending.json", orig = dir + "/pending.orig";
  if (!fs::exists(entry)) return;
  json j = json::parse(read_all(entry), nullptr, false);
  if (j.is_discarded() || !fs::exists(orig)) {  // crashed while writing the journal: the file was not touched yet
    fs::remove(entry);
    fs::remove(orig);
    return;
  }
  if (j.contains("pgid") && j["pgid"].get<int>() > 0) ::kill(-j["pgid"].get<int>(), SIGKILL);
  std::string path = j["path"].get<std::string>();
  write_atomic(path, read_all(orig));
  ::chmod(path.c_str(), static_cast<mode_t>(j["mode"].get<int>()));
  timespec ts[2];
  ts[0].tv_sec = ts[1].tv_sec = j["mtime_s"].get<int64_t>();
  ts[0].tv_nsec = ts[1].tv_nsec = j["mtime_ns"].get<int64_t>();
  ::utimensat(AT_FDCWD, path.c_str(), ts, 0);
  fs::remove(entry);
  fs::remove(orig);
}

class FileJournal {
 public:
  FileJournal(std::string dir, const std::string& self_exe) : dir_(std::move(dir)) {
    fs::create_directories(dir_);
    recover_journal(dir_);
    int p[2];
    if (::pipe2(p, O_CLOEXEC) != 0) throw Error(ExitCode::failure, "pipe failed");
    posix_spawn_file_actions_t fa;
    posix_spawn_file_actions_init(&fa);
    posix_spawn_file_actions_adddup2(&fa, p[0], 0);
    std::string a0 = self_exe, a1 = "_guard", a2 = dir_;
    char* argv[] = {a0.data(), a1.data(), a2.data(), nullptr};
    int rc = posix_spawn(&guard_, self_exe.c_str(), &fa, nullptr, argv, environ);
    posix_spawn_file_actions_destroy(&fa);
    ::close(p[0]);
    if (rc != 0) {
      ::close(p[1]);
      throw Error(ExitCode::failure, "cannot start the restore guard '" + self_exe + " _guard'");
    }
    pipe_w_ = p[1];
  }
  ~FileJournal() {
    try {
      restore();
    } catch (...) {
    }
    ::close(pipe_w_);  // the guard finds the journal empty and exits
  }
  void replace(const std::string& path, const std::string& content) {
    struct stat st {};
    if (::stat(path.c_str(), &st) != 0) throw Error(ExitCode::not_found, "target file '" + path + "' does not exist");
    if (::access(path.c_str(), W_OK) != 0 || ::access(fs::path(path).parent_path().c_str(), W_OK) != 0)
      throw Error(ExitCode::bad_input, "'" + path + "' is not writable: evaluate on a copy of the repository (cp -r)");
    write_atomic(dir_ + "/pending.orig", read_all(path));
    entry_ = {{"path", fs::absolute(path).string()},
              {"mode", static_cast<int>(st.st_mode & 07777)},
              {"mtime_s", static_cast<int64_t>(st.st_mtim.tv_sec)},
              {"mtime_ns", static_cast<int64_t>(st.st_mtim.tv_nsec)}};
    write_atomic(dir_ + "/pending.json", entry_.dump());
    pending_ = true;
    write_atomic(path, content);
  }
  void set_pgid(int pgid) {
    entry_["pgid"] = pgid;
    write_atomic(dir_ + "/pending.json", entry_.dump());
  }
  void restore() {
    if (!pending_) return;
    restore_entry(dir_);
    pending_ = false;
  }

 private:
  std::string dir_;
  json entry_;
  bool pending_ = false;
  pid_t guard_ = -1;
  int pipe_w_ = -1;
};

// One lock per repository across processes: shards on one machine never test the same tree at once.
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
  std::ifstream in(path, std::ios::binary);
  std::string s((std::istreambuf_iterator<char>(in)), {});
  return s.size() > n ? s.substr(s.size() - n) : s;
}

}  // namespace

void recover_journal(const std::string& dir) {
  restore_entry(dir);
}

std::vector<json> read_results(const std::string& path) {
  std::vector<json> out;
  std::istringstream in(read_all(path));
  for (std::string line; std::getline(in, line);) {
    json j = json::parse(line, nullptr, false);
    if (!j.is_discarded() && j.contains("task") && j.contains("method")) out.push_back(std::move(j));
  }
  return out;
}

int guard_main(const std::string& dir) {
  ::signal(SIGINT, SIG_IGN);  // Ctrl-C reaches the whole foreground group; the runner restores itself
  ::signal(SIGTERM, SIG_IGN);
  ::signal(SIGHUP, SIG_IGN);
  char buf[256];
  while (::read(0, buf, sizeof buf) > 0) {
  }
  recover_journal(dir);
  return 0;
}

// ------------------------------------------------------------------------------------------ runner
int run_evaluation(const std::vector<EvalTask>& tasks, const RunnerOptions& o, const MethodModels& models,
                   const std::function<Engine&(const std::string&)>& engine_for) {
  for (const auto& m : o.methods) {
    const auto& all = evaluation_methods();
    if (std::find(all.begin(), all.end(), m) == all.end()) {
      std::string names;
      for (const auto& x : all) names += (names.empty() ? "" : ", ") + x;
      throw Error(ExitCode::usage, "unknown method '" + m + "'; methods: " + names);
    }
    if (m != "gold" && m != "stub" && !models.llm)
      throw Error(ExitCode::usage,
                  "method '" + m + "' needs an LLM (--model, --endpoint or --config); gold and stub need none");
  }
  if (o.shards < 1 || o.shard < 0 || o.shard >= o.shards)
    throw Error(ExitCode::usage, fmt::format("--shard {}/{}: want i/n with 0 <= i < n", o.shard, o.shards));
  fs::create_directories(o.out_dir);
  std::string results_path = o.out_dir + "/results.jsonl";
  std::set<std::pair<std::string, std::string>> done;
  std::vector<std::string> done_paths{results_path};
  for (const auto& d : o.done_dirs) done_paths.push_back(d + "/results.jsonl");
  for (const auto& p : done_paths)
    if (fs::exists(p))
      for (const auto& j : read_results(p)) done.insert({j["task"].get<std::string>(), j["method"].get<std::string>()});
  FileJournal journal(o.out_dir + "/journal", o.self_exe);
  std::ofstream results(results_path, std::ios::app);
  int written = 0;
  for (size_t ti = 0; ti < tasks.size(); ++ti) {
    if (static_cast<int>(ti % static_cast<size_t>(o.shards)) != o.shard) continue;
    const EvalTask& task = tasks[ti];
    for (const auto& method : o.methods) {
      if (done.count({task.id, method})) continue;
      if (g_interrupted) throw Error(ExitCode::interrupted, "interrupted; finished tasks are kept, re-run to resume");
      // Opened under the repository's lock: opening refreshes the index from the files on disk, which must
      // not happen while another runner (a parallel job, a shard) has a generated body spliced in.
      Engine* engp = nullptr;
      {
        RepoLock lock(task.repo);
        engp = &engine_for(task.repo);
      }
      Engine& eng = *engp;
      std::string spec = task.file + "::" + task.function;
      TargetRef t;
      json rec = {{"task", task.id}, {"method", method}, {"repo_id", task.repo_id}};
      std::string patched, diff;
      json trace;
      try {
        t = eng.resolve_target(spec);
        const auto& te = eng.view().entities()[t.entity];
        const std::string& original = eng.view().content(t.file);
        if (te.body_start_line <= 0) throw Error(ExitCode::bad_input, "`" + spec + "` has no body to hide");
        if (method == "gold" || method == "stub") {
          std::string body = "raise NotImplementedError(\"repoctx stub\")";
          if (method == "gold") {
            std::string src(line_range(original, line_starts(original), te.decorated_start_line, te.end_line));
            body = extract_body(src, te.name).body;
          }
          patched = splice_body(original, te, body);
        } else {
          GenerationParams gp = o.gen;
          gp.method = method;
          auto g = generate_function(eng, *models.llm, models.embedder, models.hidden, t, gp);
          patched = std::move(g.patched_file);
          rec["rounds"] = g.rounds;
          rec["findings"] = g.findings.size();
          rec["llm_calls"] = g.usage.total().calls;
          rec["llm_cached"] = g.usage.total().cached;
          trace = std::move(g.trace);
        }
        diff = unified_diff(task.file, original, patched);
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
      CommandResult cr;
      {
        RepoLock lock(task.repo);
        journal.replace(task.repo + "/" + task.file, patched);
        cr = run_command(task.test_argv, task.repo, {"PYTHONDONTWRITEBYTECODE=1"}, log_path, o.limits, &g_interrupted,
                         [&](int pgid) { journal.set_pgid(pgid); });
        journal.restore();
      }
      if (cr.interrupted)
        throw Error(ExitCode::interrupted,
                    "interrupted during the tests of " + task.id + "; the file is restored, re-run to resume");
      rec["passed"] = cr.exit_code == 0;
      rec["exit_code"] = cr.exit_code;
      rec["timed_out"] = cr.timed_out;
      rec["test_seconds"] = cr.seconds;
      rec["log_tail"] = sanitize_utf8(tail_of(log_path, 2000));
      std::ofstream(art_dir + "/" + safe_name(task.id) + ".json")
          << json{{"task", task.id}, {"method", method}, {"diff", diff}, {"trace", trace}}.dump(
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

std::string results_table(const std::vector<std::string>& dirs, bool csv) {
  // method -> group -> (passed, total); the last record of a (task, method) wins.
  std::map<std::pair<std::string, std::string>, json> last;
  for (const auto& d : dirs) {
    std::string p = d + "/results.jsonl";
    if (!fs::exists(p)) throw Error(ExitCode::not_found, "no results in '" + d + "' (results.jsonl missing)");
    for (auto& j : read_results(p)) {
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
