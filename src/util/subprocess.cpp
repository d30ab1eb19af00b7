#include "util/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

#include <cctype>
#include <cerrno>
#include <chrono>
#include <cstdlib>
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

namespace {

// Everything the child needs, prepared before fork: after it only async-signal-safe calls are made.
struct ChildPlan {
  std::vector<std::string> arg_store, env_store;
  std::vector<char*> argv, envp;
  std::string exec_failed;  // written to the log when execve fails (prepared here: no allocation after fork)
  rlimit mem{}, cpu{}, fsize{};
  int log_fd = -1, cgroup_fd = -1;
  pid_t parent = 0;
  std::string cwd;
};

void plan_environment(ChildPlan& p, const std::vector<std::string>& extra) {
  for (char** e = environ; *e; ++e) {
    std::string kv(*e);
    bool replaced = false;
    for (const auto& x : extra) {
      auto eq = x.find('=');
      if (eq != std::string::npos && kv.compare(0, eq + 1, x, 0, eq + 1) == 0) replaced = true;
    }
    if (!replaced) p.env_store.push_back(std::move(kv));
  }
  for (const auto& kv : extra) p.env_store.push_back(kv);
  for (auto& s : p.env_store) p.envp.push_back(s.data());
  p.envp.push_back(nullptr);
}

void plan_limits(ChildPlan& p, const CommandLimits& lim) {
  p.mem.rlim_cur = p.mem.rlim_max = lim.memory_mb > 0 ? static_cast<rlim_t>(lim.memory_mb) << 20 : RLIM_INFINITY;
  rlim_t cpu_s = static_cast<rlim_t>(lim.cpu_s > 0 ? lim.cpu_s : static_cast<int64_t>(lim.timeout_s) + 10);
  p.cpu.rlim_cur = cpu_s;
  p.cpu.rlim_max = cpu_s + 5;
  p.fsize.rlim_cur = p.fsize.rlim_max =
      lim.file_size_mb > 0 ? static_cast<rlim_t>(lim.file_size_mb) << 20 : RLIM_INFINITY;
}

// Runs in the command's process: limits, stdio, working directory, then the program. Only async-signal-safe
// calls (the runner may have other threads).
[[noreturn]] void exec_command(const ChildPlan& p) {
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  ::sigaction(SIGTERM, &dfl, nullptr);
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  // The command joins the process-limit cgroup, not its guardian: the limit counts the command's processes.
  if (p.cgroup_fd >= 0 && ::write(p.cgroup_fd, "0", 1) != 1) ::_exit(126);
  ::setrlimit(RLIMIT_AS, &p.mem);
  ::setrlimit(RLIMIT_CPU, &p.cpu);
  ::setrlimit(RLIMIT_FSIZE, &p.fsize);
  rlimit core{0, 0};
  ::setrlimit(RLIMIT_CORE, &core);
  int devnull = ::open("/dev/null", O_RDONLY);
  if (devnull >= 0) ::dup2(devnull, 0);
  ::dup2(p.log_fd, 1);
  ::dup2(p.log_fd, 2);
  // Files the runner's other threads hold open (a results file written through an ofstream has no
  // close-on-exec flag) are not the command's to write.
  ::close_range(3, ~0U, 0);
  if (!p.cwd.empty() && ::chdir(p.cwd.c_str()) != 0) ::_exit(126);
  ::execve(p.argv[0], p.argv.data(), p.envp.data());
  (void)!::write(2, p.exec_failed.data(), p.exec_failed.size());
  ::_exit(127);
}

// The parent-death signal of the guardian below: kill the whole group, the guardian with it.
void kill_own_group(int) {
  ::kill(0, SIGKILL);
}

// The runner's child is a guardian, not the command. Why: the command is often bubblewrap, whose own
// --die-with-parent is set in its inner process only after a clone; a runner killed (SIGKILL) in that window
// left the inner process blocked forever on an eventfd, with nobody to kill it. The guardian leads the
// process group, gets SIGTERM when the runner dies (PR_SET_PDEATHSIG), however it dies, and then kills the
// group: every process the command started that did not leave it (bubblewrap's inner process has not; what
// runs inside bubblewrap's PID namespace dies with it). Its exit status is the command's (128 + signal when
// a signal ended it), so the runner reads it as before.
[[noreturn]] void guard_child(const ChildPlan& p) {
  // Its own session (and so process group): no controlling terminal, and under the kernel's autogroup
  // scheduling the same CPU share whether or not bubblewrap (--new-session) wraps it.
  ::setsid();
  struct sigaction sa {};
  sa.sa_handler = kill_own_group;
  ::sigemptyset(&sa.sa_mask);
  ::sigaction(SIGTERM, &sa, nullptr);
  sigset_t term;
  ::sigemptyset(&term);
  ::sigaddset(&term, SIGTERM);
  ::sigprocmask(SIG_UNBLOCK, &term, nullptr);
  ::prctl(PR_SET_PDEATHSIG, SIGTERM);
  if (::getppid() != p.parent) ::_exit(137);  // the runner was already gone: nothing was started
  pid_t cmd = ::fork();
  if (cmd < 0) ::_exit(126);
  if (cmd == 0) exec_command(p);
  ::close(p.log_fd);
  int status = 0;
  while (::waitpid(cmd, &status, 0) < 0 && errno == EINTR) {
  }
  ::_exit(WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 126);
}

}  // namespace

PreparedCommand prepare_command(std::vector<std::string> argv, bool resolve_path) {
  PreparedCommand c;
  size_t first = 0;
  while (first < argv.size() && is_env_assignment(argv[first])) c.env.push_back(argv[first++]);
  c.argv.assign(argv.begin() + static_cast<long>(first), argv.end());
  if (c.argv.empty()) throw Error(ExitCode::bad_input, "the command names no program (only NAME=value words)");
  if (resolve_path && c.argv[0].find('/') == std::string::npos) {
    std::string found = find_program(c.argv[0]);
    if (!found.empty()) c.argv[0] = found;  // else execve fails: exit 127, the log says why
  }
  return c;
}

CommandResult run_limited(const std::vector<std::string>& argv, const ProcessSetup& setup, const CommandLimits& lim,
                          const std::atomic<bool>* stop) {
  if (argv.empty()) throw Error(ExitCode::failure, "run_limited: empty argv");
  ChildPlan p;
  p.arg_store = argv;
  for (auto& a : p.arg_store) p.argv.push_back(a.data());
  p.argv.push_back(nullptr);
  p.exec_failed = "repoctx: cannot execute '" + argv[0] + "' (not found, or not an executable file)\n";
  plan_environment(p, setup.env_extra);
  plan_limits(p, lim);
  p.cwd = setup.cwd;
  p.cgroup_fd = setup.cgroup_procs_fd;
  p.parent = ::getpid();
  p.log_fd = ::open(setup.log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (p.log_fd < 0) throw Error(ExitCode::bad_input, "cannot write the test log '" + setup.log_path + "'");
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid = ::fork();
  if (pid < 0) {
    ::close(p.log_fd);
    throw Error(ExitCode::failure, "fork failed for the test command");
  }
  if (pid == 0) guard_child(p);
  ::close(p.log_fd);
  CommandResult r;
  int status = 0;
  for (;;) {
    pid_t w = ::waitpid(pid, &status, WNOHANG);
    if (w == pid) break;
    double el = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    bool over = el > lim.timeout_s, stopped = stop && stop->load();
    if (over || stopped) {
      if (::kill(-pid, SIGKILL) != 0) ::kill(pid, SIGKILL);  // before its setsid the child is alone
      ::waitpid(pid, &status, 0);
      r.timed_out = over && !stopped;
      r.interrupted = stopped;
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ::kill(-pid, SIGKILL);  // what the command left running in its group
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : -1;
  return r;
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

int start_process(const std::vector<std::string>& argv, const std::string& stdout_path,
                  const std::string& stderr_path) {
  if (argv.empty()) throw Error(ExitCode::failure, "start_process: empty command");
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, stdout_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, stderr_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid = 0;
  int rc = posix_spawnp(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw Error(ExitCode::failure, "cannot start " + argv[0] + ": " + std::strerror(rc));
  return static_cast<int>(pid);
}

int wait_process(int pid, double* cpu_seconds) {
  int st = 0;
  struct rusage ru {};
  while (::wait4(pid, &st, 0, &ru) < 0)
    if (errno != EINTR) return -1;
  if (cpu_seconds)
    *cpu_seconds = static_cast<double>(ru.ru_utime.tv_sec + ru.ru_stime.tv_sec) +
                   static_cast<double>(ru.ru_utime.tv_usec + ru.ru_stime.tv_usec) / 1e6;
  return WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
}

ProcessResult run_process(const std::vector<std::string>& argv, const std::string& stdout_path,
                          const std::string& stderr_path) {
  auto t0 = std::chrono::steady_clock::now();
  int pid = start_process(argv, stdout_path, stderr_path);
  ProcessResult r;
  r.exit_code = wait_process(pid, &r.cpu_seconds);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::string find_program(const std::string& name) {
  auto executable = [](const std::string& p) {
    struct stat st {};
    return ::stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode) && ::access(p.c_str(), X_OK) == 0;
  };
  if (name.find('/') != std::string::npos) return executable(name) ? name : "";
  const char* path = std::getenv("PATH");
  std::string dirs = path ? path : "/usr/local/bin:/usr/bin:/bin";
  size_t at = 0;
  while (at <= dirs.size()) {
    size_t colon = dirs.find(':', at);
    std::string dir = dirs.substr(at, colon == std::string::npos ? std::string::npos : colon - at);
    if (!dir.empty() && executable(dir + "/" + name)) return dir + "/" + name;
    if (colon == std::string::npos) break;
    at = colon + 1;
  }
  return "";
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

}  // namespace repoctx
