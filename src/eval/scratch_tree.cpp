#include "eval/scratch_tree.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <set>

#include <fmt/format.h>

#include "util/cancel.h"
#include "util/error.h"
#include "util/log.h"
#include "util/temp_dir.h"

namespace repoctx {

namespace fs = std::filesystem;

namespace {

class Fd {
 public:
  explicit Fd(int fd) : fd_(fd) {}
  ~Fd() {
    if (fd_ >= 0) ::close(fd_);
  }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

bool write_all(int fd, const char* data, size_t n) {
  while (n > 0) {
    ssize_t w = ::write(fd, data, n);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return false;
    data += w;
    n -= static_cast<size_t>(w);
  }
  return true;
}

// Copies the bytes of `in` to `out`: a reflink (one ioctl, shared extents copied on write) where the
// filesystem has them, else copy_file_range (in the kernel), else read/write.
bool copy_bytes(int in, int out, off_t size) {
  if (::ioctl(out, FICLONE, in) == 0) return true;
  off_t left = size;
  while (left > 0) {
    ssize_t n = ::copy_file_range(in, nullptr, out, nullptr, static_cast<size_t>(left), 0);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    left -= n;
  }
  if (left == 0) return true;
  if (::lseek(in, size - left, SEEK_SET) < 0) return false;
  char buf[1 << 16];
  for (;;) {
    ssize_t r = ::read(in, buf, sizeof buf);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return false;
    if (r == 0) return true;
    if (!write_all(out, buf, static_cast<size_t>(r))) return false;
  }
}

// A new file at `to` (O_EXCL: never an existing inode) with the source's mode and times.
bool copy_file(const std::string& from, const std::string& to, const struct stat& st) {
  Fd in(::open(from.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW));
  if (in.get() < 0) return false;
  Fd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (out.get() < 0) return false;
  if (!copy_bytes(in.get(), out.get(), st.st_size)) return false;
  ::fchmod(out.get(), st.st_mode & 07777);
  timespec ts[2] = {st.st_atim, st.st_mtim};
  ::futimens(out.get(), ts);
  return true;
}

bool write_new_file(const std::string& to, const std::string& content, mode_t mode) {
  Fd out(::open(to.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600));
  if (out.get() < 0 || !write_all(out.get(), content.data(), content.size())) return false;
  ::fchmod(out.get(), mode & 07777);
  return true;
}

// The test can change this inode (write it, or chmod it and then write it): owner, or writable by group or
// others. Without capabilities nothing else grants it (an ACL's grants are bounded by the group bits).
bool test_can_change(const struct stat& st, uid_t test_uid) {
  return st.st_uid == test_uid || (st.st_mode & (S_IWGRP | S_IWOTH)) != 0;
}

std::string normalised_absolute(const std::string& p) {
  std::string s = fs::absolute(p).lexically_normal().string();
  while (s.size() > 1 && s.back() == '/') s.pop_back();
  return s;
}

struct Builder {
  std::string repo, dst;
  const std::map<std::string, std::string>& replace;
  ScratchPolicy policy;
  std::set<std::string> exclude;  // absolute, normal
  ScratchStats& stats;
  std::set<std::string> replaced_seen;

  void fail_write(const std::string& what) const {
    throw Error(ExitCode::bad_input,
                fmt::format("cannot write the scratch copy '{}': {} (is the results folder writable and the disk "
                            "not full? --scratch DIR puts scratch copies elsewhere)",
                            what, std::strerror(errno)));
  }

  void make_dir(const std::string& to, mode_t mode) {
    // Owner-writable whatever the source says: the test may write anywhere in its copy, and it is removed after.
    if (::mkdir(to.c_str(), (mode & 07777) | S_IRWXU) != 0) fail_write(to);
    ++stats.dirs;
  }

  void add_file(const std::string& from, const std::string& to, const std::string& rel, const struct stat& st) {
    auto r = replace.find(rel);
    if (r != replace.end()) {
      if (!write_new_file(to, r->second, st.st_mode)) fail_write(to);
      replaced_seen.insert(rel);
      ++stats.copied;
      return;
    }
    if (policy.link_unwritable && !test_can_change(st, policy.test_uid) && ::link(from.c_str(), to.c_str()) == 0) {
      ++stats.linked;
      return;
    }
    if (copy_file(from, to, st)) {
      ++stats.copied;
      return;
    }
    if (errno == EACCES || errno == EPERM) {  // a file this user cannot read: the test could not either
      ++stats.skipped;
      log_debug("scratch copy: cannot read {}: {}", from, std::strerror(errno));
      return;
    }
    fail_write(to);
  }

  void walk(const std::string& from_dir, const std::string& to_dir, const std::string& rel_dir) {
    std::error_code ec;
    for (fs::directory_iterator it(from_dir, fs::directory_options::skip_permission_denied, ec), end; !ec && it != end;
         it.increment(ec)) {
      throw_if_interrupted("finished tasks are kept; re-run to resume");
      std::string name = it->path().filename().string();
      std::string from = from_dir + "/" + name, to = to_dir + "/" + name;
      std::string rel = rel_dir.empty() ? name : rel_dir + "/" + name;
      if ((rel_dir.empty() && name == ".repoctx") || exclude.count(from)) continue;
      struct stat st {};
      if (::lstat(from.c_str(), &st) != 0) continue;
      if (S_ISDIR(st.st_mode)) {
        make_dir(to, st.st_mode);
        walk(from, to, rel);
      } else if (S_ISREG(st.st_mode)) {
        add_file(from, to, rel, st);
      } else if (S_ISLNK(st.st_mode)) {
        std::error_code le;
        auto target = fs::read_symlink(from, le);
        if (le || ::symlink(target.c_str(), to.c_str()) != 0) fail_write(to);
        ++stats.symlinks;
      } else {
        ++stats.skipped;  // sockets, fifos, devices
      }
    }
  }
};

std::string host_name() {
  char h[256] = {0};
  if (::gethostname(h, sizeof h - 1) != 0 || !h[0]) return "host";
  std::string s(h);
  for (char& c : s)
    if (c == '/' || c == '-') c = '_';
  return s;
}

std::atomic<int> g_scratch_serial{0};

}  // namespace

ScratchTree::ScratchTree(const std::string& repo, std::string path, const std::map<std::string, std::string>& replace,
                         const ScratchPolicy& policy, const std::vector<std::string>& exclude)
    : path_(std::move(path)) {
  auto t0 = std::chrono::steady_clock::now();
  std::string root = normalised_absolute(repo);
  struct stat st {};
  if (::stat(root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    throw Error(ExitCode::not_found, "repository '" + repo + "' does not exist");
  for (const auto& [rel, content] : replace)
    if (::lstat((root + "/" + rel).c_str(), &st) != 0 || !S_ISREG(st.st_mode))
      throw Error(ExitCode::not_found, "target file '" + root + "/" + rel + "' does not exist");
  std::set<std::string> ex;
  for (const auto& e : exclude) ex.insert(normalised_absolute(e));
  ex.insert(normalised_absolute(path_));
  Builder b{root, path_, replace, policy, ex, stats_, {}};
  ::stat(root.c_str(), &st);
  std::error_code ec;
  fs::create_directories(fs::path(path_).parent_path(), ec);
  try {
    b.make_dir(path_, st.st_mode);
    b.walk(root, path_, "");
  } catch (...) {
    remove_tree(path_);
    throw;
  }
  stats_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

ScratchTree::~ScratchTree() {
  remove_tree(path_);
}

std::string next_scratch_name() {
  return fmt::format("{}-{}-{}", host_name(), ::getpid(), g_scratch_serial++);
}

void remove_stale_scratch(const std::string& root) {
  std::error_code ec;
  std::string prefix = host_name() + "-";
  for (const auto& d : fs::directory_iterator(root, ec)) {
    std::string name = d.path().filename().string();
    if (name.compare(0, prefix.size(), prefix) != 0) continue;
    int pid = 0, serial = 0;
    if (std::sscanf(name.c_str() + prefix.size(), "%d-%d", &pid, &serial) != 2) continue;
    // Our own pid: a dead process's trees (pids are reused); this process has made none yet when it calls this.
    if (pid != ::getpid() && (::kill(pid, 0) == 0 || errno != ESRCH)) continue;
    remove_tree(d.path());
  }
}

}  // namespace repoctx
