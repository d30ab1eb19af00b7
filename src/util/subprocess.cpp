#include "util/subprocess.h"

#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>
#include <cerrno>
#include <cstring>

#include <chrono>
#include <thread>
#include <vector>

#include "util/error.h"

extern char** environ;

namespace repoctx {

CommandResult run_command(const std::string& command, const std::string& cwd, const std::vector<std::string>& env_extra,
                          const std::string& log_path, const CommandLimits& lim, const std::atomic<bool>* stop,
                          const std::function<void(int)>& on_start) {
  // Everything the child needs is prepared before fork: after it only async-signal-safe calls are made.
  std::vector<std::string> env_store;
  for (char** e = environ; *e; ++e) env_store.emplace_back(*e);
  for (const auto& kv : env_extra) env_store.push_back(kv);
  std::vector<char*> envp;
  for (auto& s : env_store) envp.push_back(s.data());
  envp.push_back(nullptr);
  std::string sh = "/bin/sh", dash_c = "-c", cmd = command;
  char* argv[] = {sh.data(), dash_c.data(), cmd.data(), nullptr};
  int log_fd = ::open(log_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (log_fd < 0) throw Error(ExitCode::bad_input, "cannot write the test log '" + log_path + "'");
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
    ::execve(argv[0], argv, envp.data());
    ::_exit(127);
  }
  ::close(log_fd);
  ::setpgid(pid, pid);  // also here: no race with the child's own call
  if (on_start) on_start(pid);
  CommandResult r;
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

}  // namespace repoctx
