// Hand-written on the raw inotify API: the one Debian library over it (libinotifytools) keeps its watch
// table in process-global state, so two watched repositories in one server would share it; what is needed
// here (a recursive watch, a debounce, a fallback) is a hundred lines.
#include "server/watcher.h"

#include <poll.h>
#include <sys/inotify.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstring>
#include <filesystem>
#include <unordered_map>

#include "repo/model.h"
#include "util/log.h"

namespace fs = std::filesystem;

namespace repoctx {

namespace {

constexpr uint32_t kMask = IN_CREATE | IN_DELETE | IN_MODIFY | IN_CLOSE_WRITE | IN_MOVED_FROM | IN_MOVED_TO |
                           IN_DELETE_SELF | IN_MOVE_SELF | IN_ATTRIB | IN_ONLYDIR;

bool skipped_name(const std::string& name) {
  return name.empty() || name[0] == '.' || name == "__pycache__" || name == "node_modules";
}

// Changes that can change the index: source files, ignore rules, folders (a folder moved in or out).
bool relevant(const std::string& name, bool is_dir) {
  if (is_dir) return !skipped_name(name);
  if (name == ".gitignore" || name == ".repoctxignore") return true;
  if (name.empty() || name[0] == '.') return false;
  return language_from_path(name) != Language::unknown;
}

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

// A pending change's debounce: the first and the latest change since the last call of on_change.
struct Debounce {
  bool pending = false;
  std::chrono::steady_clock::time_point first_change = std::chrono::steady_clock::now(), last_change = first_change;

  void note_change() {
    if (!pending) first_change = std::chrono::steady_clock::now();
    pending = true;
    last_change = std::chrono::steady_clock::now();
  }
  // Settled (or changing for too long: an editor saving continuously must not starve the index).
  bool due(double debounce_s) const {
    return pending && (seconds_since(last_change) >= debounce_s || seconds_since(first_change) >= 5.0);
  }
};

// The folders of a tree watched on one inotify descriptor.
class InotifyTree {
 public:
  InotifyTree(int fd, const std::vector<std::string>& skip) : fd_(fd), skip_(skip) {}

  // Watches `top` and the folders under it, but skipped names, the `skip` folders and symlinks; stops at
  // the watch limit (full()).
  void add_tree(const std::string& top) {
    std::error_code ec;
    if (!add(top)) return;
    for (auto it = fs::recursive_directory_iterator(top, fs::directory_options::skip_permission_denied, ec);
         !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
      if (!it->is_directory(ec) || it->is_symlink(ec)) continue;
      std::string p = it->path().string();
      bool skip = skipped_name(it->path().filename().string());
      for (const auto& s : skip_) skip = skip || p == s;
      if (skip || !add(p)) it.disable_recursion_pending();
      if (full_) return;
    }
  }

  // Reads the queued events: folders created or moved in are watched, relevant changes noted in `d`.
  // Returns whether the folder `root` itself was deleted or moved.
  bool read_events(const std::string& root, Debounce& d) {
    bool root_gone = false;
    for (ssize_t n; (n = read(fd_, buf_, sizeof buf_)) > 0;) {
      for (char* q = buf_; q < buf_ + n;) {
        auto* ev = reinterpret_cast<inotify_event*>(q);
        q += sizeof(inotify_event) + ev->len;
        std::string name = ev->len ? std::string(ev->name) : std::string();
        bool is_dir = ev->mask & IN_ISDIR;
        auto it = dirs_.find(ev->wd);
        if ((ev->mask & IN_CREATE || ev->mask & IN_MOVED_TO) && is_dir && it != dirs_.end() && !skipped_name(name))
          add_tree(it->second + "/" + name);
        if (ev->mask & IN_IGNORED) dirs_.erase(ev->wd);
        bool change = (ev->mask & IN_Q_OVERFLOW) || relevant(name, is_dir);
        if ((ev->mask & (IN_DELETE_SELF | IN_MOVE_SELF)) && it != dirs_.end() && it->second == root) {
          root_gone = change = true;
        }
        if (!change) continue;
        d.note_change();
      }
    }
    return root_gone;
  }

  size_t size() const { return dirs_.size(); }
  bool full() const { return full_; }

 private:
  bool add(const std::string& d) {
    int wd = inotify_add_watch(fd_, d.c_str(), kMask);
    if (wd < 0) {
      if (errno == ENOSPC) full_ = true;
      return false;
    }
    dirs_[wd] = d;
    return true;
  }

  int fd_;
  const std::vector<std::string>& skip_;
  std::unordered_map<int, std::string> dirs_;  // watch descriptor -> absolute folder
  bool full_ = false;
  alignas(inotify_event) char buf_[64 * 1024];
};

}  // namespace

RepoWatcher::RepoWatcher(std::string root, std::vector<std::string> skip_dirs, WatchOptions opt,
                         std::function<void()> on_change)
    : root_(std::move(root)), skip_(std::move(skip_dirs)), opt_(opt), on_change_(std::move(on_change)) {
  if (pipe(stop_pipe_) != 0) stop_pipe_[0] = stop_pipe_[1] = -1;
  thread_ = std::thread([this] { run(); });
}

RepoWatcher::~RepoWatcher() {
  stop_ = true;
  if (stop_pipe_[1] >= 0) {
    char c = 1;
    ssize_t ignored = write(stop_pipe_[1], &c, 1);
    (void)ignored;
  }
  if (thread_.joinable()) thread_.join();
  for (int fd : stop_pipe_)
    if (fd >= 0) close(fd);
}

void RepoWatcher::run() {
  if (!opt_.force_poll && run_inotify()) return;
  if (stop_) return;
  polling_ = true;
  run_poll();
}

void RepoWatcher::run_poll() {
  while (!stop_) {
    pollfd p{stop_pipe_[0], POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(opt_.poll_s * 1000)) > 0) return;  // stopped
    on_change_();
  }
}

bool RepoWatcher::run_inotify() {
  int fd = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
  if (fd < 0) {
    log_warn("inotify unavailable ({}); checking '{}' for changes every {} s", strerror(errno), root_, opt_.poll_s);
    return false;
  }
  InotifyTree tree(fd, skip_);
  tree.add_tree(root_);
  watched_ = static_cast<int>(tree.size());
  if (tree.full() || tree.size() == 0) {
    log_warn("cannot watch every folder of '{}' with inotify ({}); checking for changes every {} s instead", root_,
             tree.full() ? "the watch limit fs.inotify.max_user_watches is reached" : "the folder is missing",
             opt_.poll_s);
    close(fd);
    return false;
  }
  log_debug("watching {} folders of {}", tree.size(), root_);
  Debounce debounce;
  bool root_gone = false;
  while (!stop_) {
    pollfd p[2] = {{fd, POLLIN, 0}, {stop_pipe_[0], POLLIN, 0}};
    int timeout_ms = debounce.pending ? 50 : -1;
    if (poll(p, 2, timeout_ms) < 0 && errno != EINTR) break;
    if (p[1].revents) break;
    root_gone = tree.read_events(root_, debounce);
    watched_ = static_cast<int>(tree.size());
    if (debounce.due(opt_.debounce_s)) {
      debounce.pending = false;
      on_change_();
    }
    if (root_gone) break;
  }
  close(fd);
  if (root_gone && !stop_) {
    log_warn("'{}' was deleted or moved; the last loaded index keeps serving, and the folder is checked every {} s",
             root_, opt_.poll_s);
    return false;
  }
  return true;
}

}  // namespace repoctx
