#include "util/sandbox.h"

#include <fcntl.h>
#include <pwd.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include <fmt/format.h>

#include "util/error.h"
#include "util/log.h"
#include "util/subprocess.h"
#include "util/temp_dir.h"

namespace repoctx {

namespace fs = std::filesystem;

namespace {

bool is_dir(const std::string& p) {
  struct stat st {};
  return ::stat(p.c_str(), &st) == 0 && S_ISDIR(st.st_mode);
}

// `inner` equals `outer` or lies below it (both absolute and normal).
bool inside(const std::string& inner, const std::string& outer) {
  if (outer == "/") return true;
  return inner == outer ||
         (inner.size() > outer.size() && inner.compare(0, outer.size(), outer) == 0 && inner[outer.size()] == '/');
}

std::string normal_abs(const std::string& p) {
  std::string s = fs::absolute(p).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

// The namespaces and the system view, common to the probe and every run.
std::vector<std::string> base_argv(const std::string& bwrap, int64_t tmp_mb) {
  return {bwrap,
          "--die-with-parent",
          "--new-session",  // no controlling terminal: nothing can be pushed into the user's shell
          "--unshare-net",
          "--unshare-pid",
          "--unshare-ipc",
          "--unshare-uts",
          "--unshare-cgroup-try",
          "--cap-drop",
          "ALL",  // root keeps every capability in bubblewrap unless told
          "--ro-bind",
          "/",
          "/",
          "--dev",
          "/dev",
          "--proc",
          "/proc",
          "--size",
          std::to_string(std::max<int64_t>(tmp_mb, 1) << 20),
          "--tmpfs",
          "/tmp",
          "--setenv",
          "TMPDIR",
          "/tmp"};
}

std::string bwrap_refusal(const std::string& bwrap) {
  TempDir d("repoctx-sandbox-probe-");
  std::string t = find_program("true");
  if (t.empty()) t = "/bin/true";
  auto argv = base_argv(bwrap, 1);
  argv.push_back("--");
  argv.push_back(t);
  CommandLimits lim;
  lim.timeout_s = 30;
  ProcessSetup s;
  s.log_path = (d.path() / "probe.log").string();
  auto r = run_limited(argv, s, lim, nullptr);
  if (r.exit_code == 0) return "";
  std::string log = d.read("probe.log");
  while (!log.empty() && (log.back() == '\n' || log.back() == ' ')) log.pop_back();
  return log.empty() ? fmt::format("exit status {}", r.exit_code) : log;
}

}  // namespace

std::string home_folder() {
  const char* h = std::getenv("HOME");
  std::string home = h ? h : "";
  if (home.empty())
    if (const passwd* pw = ::getpwuid(::geteuid())) home = pw->pw_dir ? pw->pw_dir : "";
  if (home.empty()) return "";
  home = normal_abs(home);
  return home == "/" ? "" : home;
}

Sandbox Sandbox::create(const SandboxConfig& c) {
  Sandbox s;
  s.c_ = c;
  s.uid_ = ::geteuid();
  if (!c.enabled) return s;
  s.bwrap_ = find_program("bwrap");
  if (s.bwrap_.empty())
    throw Error(ExitCode::bad_input,
                "bubblewrap (`bwrap`) is not installed: the tests of generated code run in its sandbox (no network, "
                "read-only system, only a scratch copy writable). Install Debian's `bubblewrap` package "
                "(apt-get install bubblewrap), or pass --no-sandbox to run the tests unconfined with your privileges");
  if (s.uid_ != 0) {
    s.prlimit_ = find_program("prlimit");
    if (s.prlimit_.empty())
      throw Error(ExitCode::bad_input,
                  "`prlimit` (Debian's util-linux) is missing: it sets the process limit inside the sandbox. Install "
                  "util-linux, or pass --no-sandbox");
  }
  for (auto& e : s.c_.expose) {
    e = normal_abs(e);
    if (!fs::exists(e)) throw Error(ExitCode::not_found, "--sandbox-ro " + e + ": no such file or folder");
  }
  std::string why = bwrap_refusal(s.bwrap_);
  if (!why.empty())
    throw Error(ExitCode::bad_input,
                "bubblewrap cannot create its sandbox on this machine: " + why +
                    ". Unprivileged users need user namespaces (sysctl kernel.unprivileged_userns_clone=1, "
                    "user.max_user_namespaces > 0; in a container: allow unshare, e.g. docker --security-opt "
                    "seccomp=unconfined), or pass --no-sandbox to run the tests unconfined");
  return s;
}

std::vector<std::string> Sandbox::wrap(const std::vector<std::string>& command, const SandboxMount& m,
                                       int64_t processes) const {
  if (m.mount_at.empty()) throw Error(ExitCode::failure, "sandbox: no mount point for the scratch tree");
  auto argv = base_argv(bwrap_, c_.tmp_mb);
  std::vector<std::string> at;
  for (const auto& p : m.mount_at) at.push_back(normal_abs(p));
  std::vector<std::string> hidden{"/tmp"};
  for (const auto& h0 : m.hidden) {
    if (h0.empty()) continue;
    std::string h = normal_abs(h0);
    bool needless = h == "/" || !is_dir(h);
    for (const auto& a : at) needless |= inside(h, a);      // its mount point would be made in the copy
    for (const auto& x : hidden) needless |= inside(h, x);  // already hidden
    if (needless) continue;
    hidden.push_back(h);
    argv.insert(argv.end(), {"--tmpfs", h});
  }
  for (const auto& e : c_.expose) argv.insert(argv.end(), {"--ro-bind", e, e});
  for (const auto& a : at) {
    argv.insert(argv.end(), {"--bind", m.tree, a});
    for (const auto& rel : m.shared_readonly)
      argv.insert(argv.end(), {"--ro-bind", m.original + "/" + rel, a + "/" + rel});
  }
  argv.insert(argv.end(), {"--chdir", at.front(), "--"});
  if (uid_ != 0 && processes > 0) {
    std::string n = std::to_string(processes);
    argv.insert(argv.end(), {prlimit_, "--nproc=" + n + ":" + n, "--"});
  }
  argv.insert(argv.end(), command.begin(), command.end());
  return argv;
}

// ------------------------------------------------------------------------------------------ cgroups
namespace {

std::atomic<int> g_cgroup_serial{0};

// The folder of this process's cgroup in a pids hierarchy: v2 (unified, pids listed in cgroup.controllers) or
// v1 (a hierarchy mounted with the pids controller). "" when neither is mounted where we look.
std::vector<std::string> pids_parents() {
  std::vector<std::string> out;
  std::ifstream in("/proc/self/cgroup");
  std::string line;
  while (std::getline(in, line)) {
    auto a = line.find(':'), b = line.find(':', a + 1);
    if (a == std::string::npos || b == std::string::npos) continue;
    std::string ctrls = line.substr(a + 1, b - a - 1), path = line.substr(b + 1);
    if (ctrls.empty()) {
      for (const char* root : {"/sys/fs/cgroup", "/sys/fs/cgroup/unified"}) {
        std::ifstream c(std::string(root) + "/cgroup.controllers");
        std::string list((std::istreambuf_iterator<char>(c)), {});
        if (c && (" " + list + " ").find(" pids") != std::string::npos) out.push_back(root + path);
      }
    } else if ((',' + ctrls + ',').find(",pids,") != std::string::npos) {
      out.push_back("/sys/fs/cgroup/pids" + path);
    }
  }
  return out;
}

bool write_text(const std::string& path, const std::string& text) {
  int fd = ::open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size());
  ::close(fd);
  return ok;
}

std::vector<int> cgroup_pids(const std::string& dir) {
  std::vector<int> out;
  std::ifstream in(dir + "/cgroup.procs");
  for (int pid; in >> pid;) out.push_back(pid);
  return out;
}

// Kills what is in the cgroup and removes it, waiting up to ~2 s for exiting processes to leave.
bool remove_cgroup(const std::string& dir) {
  for (int i = 0; i < 200; ++i) {
    for (int pid : cgroup_pids(dir)) ::kill(pid, SIGKILL);
    if (::rmdir(dir.c_str()) == 0 || errno == ENOENT) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return false;
}

}  // namespace

std::unique_ptr<PidsCgroup> PidsCgroup::create(int64_t max_pids) {
  for (std::string parent : pids_parents()) {
    while (parent.size() > 1 && parent.back() == '/') parent.pop_back();
    // v2 allows a controller in a child only when the parent's subtree_control lists it.
    if (fs::exists(parent + "/cgroup.subtree_control")) write_text(parent + "/cgroup.subtree_control", "+pids");
    std::string dir = fmt::format("{}/repoctx-{}-{}", parent, ::getpid(), g_cgroup_serial++);
    if (::mkdir(dir.c_str(), 0755) != 0) continue;
    int fd = ::open((dir + "/cgroup.procs").c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || !write_text(dir + "/pids.max", std::to_string(max_pids))) {
      if (fd >= 0) ::close(fd);
      ::rmdir(dir.c_str());
      continue;
    }
    return std::unique_ptr<PidsCgroup>(new PidsCgroup(dir, fd));
  }
  return nullptr;
}

PidsCgroup::~PidsCgroup() {
  ::close(procs_fd_);
  if (!remove_cgroup(path_)) log_debug("cannot remove the cgroup {} yet (removed by the next run)", path_);
}

void remove_stale_pids_cgroups() {
  for (const auto& parent : pids_parents()) {
    std::error_code ec;
    for (const auto& d : fs::directory_iterator(parent, ec)) {
      std::string name = d.path().filename().string();
      int pid = 0, serial = 0;
      if (std::sscanf(name.c_str(), "repoctx-%d-%d", &pid, &serial) != 2) continue;
      if (pid == ::getpid() || ::kill(pid, 0) == 0 || errno != ESRCH) continue;
      remove_cgroup(d.path().string());
    }
  }
}

}  // namespace repoctx
