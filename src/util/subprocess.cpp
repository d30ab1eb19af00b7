#include "util/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cctype>
#include <cerrno>

#include <chrono>
#include <thread>
#include <vector>

#include "util/error.h"

extern char** environ;

namespace repoctx {

// ------------------------------------------------------------------------------ command lines
std::vector<std::string> split_command(std::string_view cmd) {
  std::vector<std::string> out;
  std::string word;
  bool in_word = false;
  auto refuse = [&](std::string_view what) {
    throw Error(ExitCode::bad_input,
                "the command `" + std::string(cmd.substr(0, 300)) + "` uses " + std::string(what) +
                    ", which needs a shell: commands run without one (quote the character, or put the command in a "
                    "script and run that)");
  };
  for (size_t i = 0; i < cmd.size(); ++i) {
    char c = cmd[i];
    if (c == ' ' || c == '\t' || c == '\n') {
      if (in_word) out.push_back(std::move(word));
      word.clear();
      in_word = false;
      continue;
    }
    in_word = true;
    if (c == '\'') {
      size_t e = cmd.find('\'', i + 1);
      if (e == std::string_view::npos)
        throw Error(ExitCode::bad_input, "unterminated ' in the command `" + std::string(cmd.substr(0, 300)) + "`");
      word.append(cmd.substr(i + 1, e - i - 1));
      i = e;
    } else if (c == '"') {
      size_t j = i + 1;
      for (; j < cmd.size() && cmd[j] != '"'; ++j) {
        if (cmd[j] == '\\' && j + 1 < cmd.size() &&
            std::string_view("\"\\$`\n").find(cmd[j + 1]) != std::string_view::npos)
          ++j;  // inside "...", a backslash escapes only these
        else if (cmd[j] == '$' || cmd[j] == '`')
          refuse(cmd[j] == '$' ? "`$` (a variable or substitution)" : "a backquote (command substitution)");
        word.push_back(cmd[j]);
      }
      if (j >= cmd.size())
        throw Error(ExitCode::bad_input, "unterminated \" in the command `" + std::string(cmd.substr(0, 300)) + "`");
      i = j;
    } else if (c == '\\') {
      if (i + 1 < cmd.size()) word.push_back(cmd[++i]);
    } else if (std::string_view(";&|<>()$`").find(c) != std::string_view::npos) {
      refuse(std::string("`") + c + "`");
    } else if (c == '*' || c == '?') {
      refuse(std::string("`") + c + "` (a file-name pattern)");
    } else if (c == '~' && word.empty()) {
      refuse("`~` (home-folder expansion)");
    } else {
      word.push_back(c);
    }
  }
  if (in_word) out.push_back(std::move(word));
  return out;
}

std::string join_command(const std::vector<std::string>& argv) {
  std::string out;
  for (const auto& a : argv) {
    if (!out.empty()) out.push_back(' ');
    bool plain = !a.empty() && a.find_first_not_of(
                                   "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                   "_-+=./:,@%") == std::string::npos;
    if (plain) {
      out += a;
      continue;
    }
    out.push_back('\'');
    for (char c : a) {
      if (c == '\'')
        out += "'\\''";
      else
        out.push_back(c);
    }
    out.push_back('\'');
  }
  return out;
}

std::vector<std::string> expand_tests(std::string_view tmpl, const std::vector<std::string>& tests, bool append) {
  std::vector<std::string> out;
  bool used = false;
  for (auto& w : split_command(tmpl)) {
    if (w == "{tests}") {
      out.insert(out.end(), tests.begin(), tests.end());
      used = true;
      continue;
    }
    size_t at = w.find("{tests}");
    if (at != std::string::npos) {
      std::string joined;
      for (const auto& t : tests) joined += (joined.empty() ? "" : " ") + t;
      w.replace(at, 7, joined);
      used = true;
    }
    out.push_back(std::move(w));
  }
  if (!used && append) out.insert(out.end(), tests.begin(), tests.end());
  return out;
}

namespace {

bool is_env_assignment(const std::string& w) {
  size_t eq = w.find('=');
  if (eq == std::string::npos || eq == 0) return false;
  for (size_t i = 0; i < eq; ++i) {
    char c = w[i];
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_') ||
        (i == 0 && std::isdigit(static_cast<unsigned char>(c))))
      return false;
  }
  return true;
}

// PATH lookup done before fork (only async-signal-safe calls may follow it in the child).
std::string find_program(const std::string& name, const std::vector<std::string>& env) {
  if (name.find('/') != std::string::npos) return name;
  std::string path = "/usr/local/bin:/usr/bin:/bin";
  for (const auto& kv : env)
    if (kv.rfind("PATH=", 0) == 0) path = kv.substr(5);
  for (size_t i = 0; i <= path.size();) {
    size_t j = path.find(':', i);
    if (j == std::string::npos) j = path.size();
    std::string dir = path.substr(i, j - i);
    std::string cand = (dir.empty() ? "." : dir) + "/" + name;
    if (::access(cand.c_str(), X_OK) == 0) return cand;
    i = j + 1;
  }
  return {};
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& argv_in, const std::string& cwd,
                          const std::vector<std::string>& env_extra, const std::string& log_path,
                          const CommandLimits& lim, const std::atomic<bool>* stop,
                          const std::function<void(int)>& on_start) {
  // Everything the child needs is prepared before fork: after it only async-signal-safe calls are made.
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) env_store.emplace_back(*e);
  for (const auto& kv : env_extra) env_store.push_back(kv);
  size_t first = 0;
  while (first < argv_in.size() && is_env_assignment(argv_in[first])) env_store.push_back(argv_in[first++]);
  std::vector<std::string> args(argv_in.begin() + static_cast<long>(first), argv_in.end());
  int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) throw Error(ExitCode::bad_input, "cannot write the test log '" + log_path + "'");
  CommandResult r;
  std::string program = args.empty() ? std::string() : find_program(args[0], env_store);
  if (program.empty()) {
    std::string msg =
        args.empty() ? "repoctx: empty command\n" : "repoctx: " + args[0] + ": command not found in PATH\n";
    (void)!::write(log_fd, msg.data(), msg.size());
    ::close(log_fd);
    r.exit_code = 127;
    return r;
  }
  std::vector<char*> envp;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  rlimit mem{}, cpu{};
  mem.rlim_cur = mem.rlim_max = lim.memory_mb > 0 ? static_cast<rlim_t>(lim.memory_mb) << 20 : RLIM_INFINITY;
  rlim_t cpu_s = static_cast<rlim_t>(lim.cpu_s > 0 ? lim.cpu_s : static_cast<int64_t>(lim.timeout_s) + 10);
  cpu.rlim_cur = cpu_s;
  cpu.rlim_max = cpu_s + 5;
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(log_fd);
    throw Error(ExitCode::failure, "fork failed for the test command");
  }
  if (pid == 0) {
    ::setpgid(0, 0);
    ::setrlimit(RLIMIT_AS, &mem);
    ::setrlimit(RLIMIT_CPU, &cpu);
    rlimit core{0, 0};
    ::setrlimit(RLIMIT_CORE, &core);
    int devnull = ::open("/dev/null", O_RDONLY);
    if (devnull >= 0) ::dup2(devnull, 0);
    ::dup2(log_fd, 1);
    ::dup2(log_fd, 2);
    if (::chdir(cwd.c_str()) != 0) ::_exit(126);
    ::execve(program.c_str(), argv.data(), envp.data());
    ::_exit(127);
  }
  ::close(log_fd);
  ::setpgid(pid, pid);  // also here: no race with the child's own call
  if (on_start) on_start(pid);
  int status = 0;
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    bool over = el > lim.timeout_s, stopped = stop && stop->load();
    if (over || stopped) {
      ::kill(-pid, SIGKILL);
      ::waitpid(pid, &status, 0);
      r.timed_out = over && !stopped;
      r.interrupted = stopped;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  ::kill(-pid, SIGKILL);  // what the command left running in its group
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  return r;
}

int run_capture(const std::vector<std::string>& argv_in, std::string& out) {
  if (argv_in.empty()) return 127;
  int pipefd[2];
  if (::pipe2(pipefd, O_CLOEXEC) != 0) throw Error(ExitCode::failure, "pipe failed: cannot start " + argv_in[0]);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_adddup2(&fa, pipefd[1], STDOUT_FILENO);
  std::vector<char*> argv;
  for (const auto& a : argv_in) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  ::close(pipefd[1]);
  if (rc != 0) {
    ::close(pipefd[0]);
    return 127;
  }
  char buf[65536];
  for (;;) {
    ssize_t n = ::read(pipefd[0], buf, sizeof buf);
    if (n > 0) {
      out.append(buf, static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    break;
  }
  ::close(pipefd[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
}

int spawn_process(const std::vector<std::string>& argv) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  pid_t pid = ::fork();
  if (pid < 0) throw Error(ExitCode::failure, "fork failed: cannot start " + argv[0]);
  if (pid == 0) {
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  return static_cast<int>(pid);
}

std::vector<int> wait_processes(const std::vector<int>& pids, const std::atomic<bool>* stop) {
  std::vector<int> status(pids.size(), -1);
  size_t left = pids.size();
  bool forwarded = false;
  while (left > 0) {
    if (stop && *stop && !forwarded) {
      for (size_t i = 0; i < pids.size(); ++i)
        if (status[i] < 0) ::kill(pids[i], SIGINT);
      forwarded = true;
    }
    for (size_t i = 0; i < pids.size(); ++i) {
      if (status[i] >= 0) continue;
      int st = 0;
      pid_t r = ::waitpid(pids[i], &st, WNOHANG);
      if (r == pids[i] || (r < 0 && errno == ECHILD)) {
        status[i] = r < 0 ? 1 : WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
        --left;
      }
    }
    if (left > 0) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  return status;
}

}  // namespace repoctx
