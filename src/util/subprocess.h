// Child processes, always from an argv (no shell is ever started here on a string of ours).
// run_limited runs one command for the evaluation runner (the tests of a task) in its own process group, with a
// wall-clock timeout and resource limits, killing the whole group on timeout or interrupt. Hand-written on
// fork/exec because the limits must be set in the child before exec (setrlimit, setpgid, joining a cgroup,
// the parent-death signal), which posix_spawn cannot do and no Debian-packaged C++ process library offers.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace repoctx {

struct CommandLimits {
  double timeout_s = 600;       // wall clock; the process group is killed after it
  int64_t memory_mb = 8192;     // RLIMIT_AS of each process (0 = none)
  int64_t cpu_s = 0;            // RLIMIT_CPU (0 = timeout_s + 10)
  int64_t file_size_mb = 1024;  // RLIMIT_FSIZE: the largest file a process may write (0 = none)
  int64_t processes = 512;      // processes of one run; enforced by the sandbox (util/sandbox.h), not by rlimit here
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

// A word of the form NAME=value (NAME a shell variable name): leading such words of a test command set its
// environment, as env(1) reads them.
bool is_env_assignment(const std::string& word);

// A command's argv made ready for run_limited: leading NAME=value words move to `env` (as env(1) reads
// them); with `resolve_path`, argv[0] without a '/' is looked up in this process's PATH (run_limited
// needs a path; a sandbox looks it up itself, since its PATH entries under a hidden home do not exist there).
// Error(bad_input) when no program is named.
struct PreparedCommand {
  std::vector<std::string> argv, env;
};
PreparedCommand prepare_command(std::vector<std::string> argv, bool resolve_path = true);

struct ProcessSetup {
  std::string cwd;                     // empty: this process's
  std::vector<std::string> env_extra;  // "NAME=value" entries added to (or replacing in) the environment
  std::string log_path;                // stdout and stderr go here
  int cgroup_procs_fd = -1;            // >= 0: the child writes itself into this cgroup.procs before exec
};

// Runs argv (argv[0] an absolute path) with `setup` and `lim`, in its own session and process group (no
// controlling terminal), stdin from /dev/null.
// The command and whatever it starts in its process group are killed when this process dies, however it dies
// (a guardian process with PR_SET_PDEATHSIG leads the group). Polls `stop` (SIGINT/SIGTERM).
CommandResult run_limited(const std::vector<std::string>& argv, const ProcessSetup& setup, const CommandLimits& lim,
                          const std::atomic<bool>* stop);

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

// The first executable file named `name` in $PATH (or `name` itself when it holds a '/'); "" when none.
std::string find_program(const std::string& name);

}  // namespace repoctx
