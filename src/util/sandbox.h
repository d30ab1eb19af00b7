// The sandbox the tests of generated code run in (`evaluate`, `make-tasks --validate`): bubblewrap (Debian's
// `bubblewrap`, the tool Flatpak uses), started with an argv built here. Inside: no network (own network
// namespace: only its own loopback), its own PID namespace (everything in it dies with the run), IPC and UTS
// namespaces, a new session (no controlling terminal), no capabilities (root included), a read-only view of
// the whole system, the user's home and the results folder replaced by empty in-memory folders, a private
// /tmp of bounded size, and one writable tree: the task's scratch copy, mounted at the repository's own path
// (so editable installs and absolute paths in test commands reach the copy, never the user's files).
//
// Limits: time, memory (RLIMIT_AS), CPU and file size are rlimits set by run_limited before bubblewrap starts.
// Processes: RLIMIT_NPROC counts per user and per user namespace, so for an unprivileged user it is set inside
// the sandbox's own user namespace (by util-linux's `prlimit`), where it counts the run's processes only. The
// kernel never applies RLIMIT_NPROC to root, so for root the run goes into a pids cgroup of its own instead
// (PidsCgroup); without a writable pids controller a root run has no process limit, and says so once.
#pragma once

#include <sys/types.h>

#include <memory>
#include <string>
#include <vector>

namespace repoctx {

struct SandboxConfig {
  bool enabled = true;              // false: --no-sandbox (tests run unconfined, with the user's privileges)
  std::vector<std::string> expose;  // folders shown read-only although hidden (a virtualenv under the home)
  int64_t tmp_mb = 1024;            // size of the private /tmp (memory)
};

// One writable tree and where it appears inside the sandbox (each path in `mount_at`).
struct SandboxMount {
  std::string tree;
  std::vector<std::string> mount_at;
  std::vector<std::string> hidden;  // folders replaced by an empty tmpfs (the user's home, the results folder)
  // Folders of `original` (relative paths) shown read-only at the same place in the tree instead of copies
  // (a git work tree's .git: often the largest folder, read by tests that ask git for a version).
  std::string original;
  std::vector<std::string> shared_readonly;
};

class Sandbox {
 public:
  // Finds bubblewrap (and prlimit for unprivileged users) and checks that it can create its namespaces on this
  // machine. Throws Error(bad_input) naming the package to install, or what the kernel refused, and
  // `--no-sandbox`. A disabled config checks nothing.
  static Sandbox create(const SandboxConfig& c);

  bool enabled() const { return c_.enabled; }
  // The argv that runs `command` (argv[0] an absolute path) inside the sandbox, in m.mount_at[0].
  std::vector<std::string> wrap(const std::vector<std::string>& command, const SandboxMount& m,
                                int64_t processes) const;
  // Who the command runs as: this process's effective uid, with no capabilities inside the sandbox.
  uid_t uid() const { return uid_; }

 private:
  SandboxConfig c_;
  std::string bwrap_, prlimit_;
  uid_t uid_ = 0;
};

// The user's home folder ($HOME, else the password database); "" when it is "/" or unknown.
std::string home_folder();

// A pids cgroup for one run (root only: see above). create() returns null when no pids controller is
// writable here (cgroup v2 with pids enabled for our subtree, or v1's pids hierarchy).
class PidsCgroup {
 public:
  static std::unique_ptr<PidsCgroup> create(int64_t max_pids);
  ~PidsCgroup();  // kills whatever is left in it and removes it
  PidsCgroup(const PidsCgroup&) = delete;
  PidsCgroup& operator=(const PidsCgroup&) = delete;
  int procs_fd() const { return procs_fd_; }  // cgroup.procs, for ProcessSetup::cgroup_procs_fd
  const std::string& path() const { return path_; }

 private:
  PidsCgroup(std::string path, int fd) : path_(std::move(path)), procs_fd_(fd) {}
  std::string path_;
  int procs_fd_ = -1;
};

// Removes empty cgroups that PidsCgroup made for processes that no longer exist (a runner killed by SIGKILL).
void remove_stale_pids_cgroups();

}  // namespace repoctx
