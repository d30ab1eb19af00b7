// A shell command run for the evaluation runner (the tests of a task), in its own process group, with a
// wall-clock timeout and resource limits; the whole group is killed on timeout or interrupt. Hand-written
// on fork/exec because the limits must be set in the child before exec (setrlimit, setpgid), which
// posix_spawn cannot do and no Debian-packaged C++ process library offers with process-group kills.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <vector>

namespace repoctx {

struct CommandLimits {
  double timeout_s = 600;    // wall clock; the process group is killed after it
  int64_t memory_mb = 8192;  // RLIMIT_AS of the command (0 = none)
  int64_t cpu_s = 0;         // RLIMIT_CPU (0 = timeout_s + 10)
};

struct CommandResult {
  int exit_code = -1;  // the command's exit status; 128 + signal when killed by one
  bool timed_out = false;
  bool interrupted = false;  // `stop` became true: killed, the result means nothing
  double seconds = 0;
};

// Runs `/bin/sh -c command` in `cwd` with `env_extra` ("NAME=value" entries added to the environment),
// stdout and stderr to `log_path`. `on_start(pgid)` is called once the group exists (the runner records it
// so that a guard can kill it if the runner itself dies).
CommandResult run_command(const std::string& command, const std::string& cwd, const std::vector<std::string>& env_extra,
                          const std::string& log_path, const CommandLimits& lim, const std::atomic<bool>* stop,
                          const std::function<void(int)>& on_start = {});

// Starts argv (argv[0] a path) as a child in this process group (a terminal's Ctrl-C reaches it too),
// inheriting stdio; returns its pid. Throws Error(failure) when fork fails.
int spawn_process(const std::vector<std::string>& argv);

// Waits for every pid. Once `stop` becomes true (SIGINT/SIGTERM of this process) it sends SIGINT to the
// children still running, once, so they stop cleanly. Returns their exit statuses (128 + signal when
// killed by one), in the order of `pids`.
std::vector<int> wait_processes(const std::vector<int>& pids, const std::atomic<bool>* stop);

// Starts argv (argv[0] a path, or a name looked up in PATH) with stdout and stderr redirected to files
// ("/dev/null" to discard), stdin from /dev/null; returns its pid. Throws Error(failure) naming the program
// when it cannot be started.
int start_process(const std::vector<std::string>& argv, const std::string& stdout_path = "/dev/null",
                  const std::string& stderr_path = "/dev/null");

struct ProcessResult {
  int exit_code = -1;      // 128 + signal when killed by one
  double seconds = 0;      // wall clock from start to exit
  double cpu_seconds = 0;  // user + system time of the child
};
// start_process and wait for it.
ProcessResult run_process(const std::vector<std::string>& argv, const std::string& stdout_path = "/dev/null",
                          const std::string& stderr_path = "/dev/null");
// Waits for a child started by start_process; its exit code (128 + signal when killed by one) and, when
// asked, its user + system CPU seconds.
int wait_process(int pid, double* cpu_seconds = nullptr);

}  // namespace repoctx
