// Keeps served indexes warm: a background thread that, for each index, runs api::Index::warm on its first
// snapshot and on every snapshot a refresh loads afterwards, so that no request pays for the per-file facts
// of LLM-free retrieval (a structural request on a file no request has touched costs several warm ones:
// docs/BENCHMARKS.md, "Serving"). Requests are answered meanwhile, the same answers either way.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "repoctx/repoctx.h"

namespace repoctx {

class IndexWarmer {
 public:
  // An index by the name the log uses; `get` answers null while it is not loaded yet (it is warmed once it
  // has). What `get` returns must outlive the warmer.
  struct Source {
    std::string name;
    std::function<const api::Index*()> get;
  };
  explicit IndexWarmer(std::vector<Source> indexes);
  ~IndexWarmer();  // stops (between files) and joins
  IndexWarmer(const IndexWarmer&) = delete;
  IndexWarmer& operator=(const IndexWarmer&) = delete;

  // Whether index i's current snapshot is warm.
  bool warm(size_t i) const;

 private:
  void run();
  std::vector<Source> indexes_;
  std::unique_ptr<std::atomic<int64_t>[]> warmed_;  // per index: the generation last warmed (0: none)
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace repoctx
