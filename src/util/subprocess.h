// Subprocesses, always through argv (never a shell): the evaluation runner's test commands, in their own
// process group, with a wall-clock timeout and resource limits (the whole group is killed on timeout or
// interrupt), and helper programs whose output is read. Hand-written on fork/exec because the limits must
// be set in the child before exec (setrlimit, setpgid), which posix_spawn cannot do and no Debian-packaged
// C++ process library offers with process-group kills.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <string_view>
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

// Command lines written in task files and templates ("python3 -m pytest -q {tests}"), split into argv
// without a shell: words separated by blanks, with POSIX quoting ('...', "...", backslash), nothing else
// (no variables, globs, pipes, redirections, `;`, `&&`). A word holding one of those operators unquoted
// is an error (Error(bad_input) naming it): such a command needs a script. Hand-written: no Debian C++
// library splits like shlex without a shell.
std::vector<std::string> split_command(std::string_view command);
// A command line that split_command() reads back as `argv` (words quoted where needed), for task files
// and messages.
std::string join_command(const std::vector<std::string>& argv);
// A test-command template with the test files: the word `{tests}` becomes one argv entry per path, and
// `{tests}` inside a word becomes the paths separated by spaces; without `{tests}`, the paths are appended
// when `append` is set.
std::vector<std::string> expand_tests(std::string_view tmpl, const std::vector<std::string>& tests, bool append);

// Runs argv (no shell) in `cwd`, in its own process group, with `env_extra` ("NAME=value" entries added to
// the environment; leading NAME=value words of argv are taken as such too, like env(1)), stdout and
// stderr to `log_path`. argv[0] without a '/' is looked up in PATH; a program that cannot be started
// gives exit code 127 and says why in the log. `on_start(pgid)` is called once the group exists (the
// runner records it so that a guard can kill it if the runner itself dies).
CommandResult run_command(const std::vector<std::string>& argv, const std::string& cwd,
                          const std::vector<std::string>& env_extra, const std::string& log_path,
                          const CommandLimits& lim, const std::atomic<bool>* stop,
                          const std::function<void(int)>& on_start = {});

// Runs argv (no shell, PATH lookup) to completion, its stdout into `out`, stderr inherited. Returns the
// exit status (127: could not start; 128 + signal when killed by one).
int run_capture(const std::vector<std::string>& argv, std::string& out);

// Starts argv (argv[0] a path) as a child in this process group (a terminal's Ctrl-C reaches it too),
// inheriting stdio; returns its pid. Throws Error(failure) when fork fails.
int spawn_process(const std::vector<std::string>& argv);

// Waits for every pid. Once `stop` becomes true (SIGINT/SIGTERM of this process) it sends SIGINT to the
// children still running, once, so they stop cleanly. Returns their exit statuses (128 + signal when
// killed by one), in the order of `pids`.
std::vector<int> wait_processes(const std::vector<int>& pids, const std::atomic<bool>* stop);

}  // namespace repoctx
