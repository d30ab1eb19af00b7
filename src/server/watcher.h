// Keeps a served index fresh: watches a repository's folders with inotify (every folder, new ones added as
// they appear) and calls back once changes settle; where inotify cannot watch the tree (no inotify, the
// watch limit reached, the root gone) it falls back to calling back every `poll_s` seconds, which costs one
// incremental index run (a walk that stats every file) each time.
#pragma once

#include <atomic>
#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace repoctx {

struct WatchOptions {
  double debounce_s = 0.3;  // quiet time after the last change before the callback
  double poll_s = 2.0;      // fallback polling interval
  bool force_poll = false;  // never use inotify (tests, network file systems)
};

class RepoWatcher {
 public:
  // `on_change` runs on the watcher's own thread; `skip_dirs` are absolute folders never watched (the
  // index's own folder, so that writing the index does not look like a change).
  RepoWatcher(std::string root, std::vector<std::string> skip_dirs, WatchOptions opt, std::function<void()> on_change);
  ~RepoWatcher();  // stops and joins
  RepoWatcher(const RepoWatcher&) = delete;
  RepoWatcher& operator=(const RepoWatcher&) = delete;

  bool polling() const { return polling_; }
  int watched_dirs() const { return watched_; }

 private:
  void run();
  bool run_inotify();  // false: fall back to polling
  void run_poll();

  std::string root_;
  std::vector<std::string> skip_;
  WatchOptions opt_;
  std::function<void()> on_change_;
  std::atomic<bool> stop_{false}, polling_{false};
  std::atomic<int> watched_{0};
  int stop_pipe_[2] = {-1, -1};
  std::thread thread_;
};

}  // namespace repoctx
