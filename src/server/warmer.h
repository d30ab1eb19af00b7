// Keeps served indexes warm: a background thread that, for each index, runs api::Index::warm on its first
// snapshot and on every snapshot a refresh loads afterwards, so that no request pays for the per-file facts
// of LLM-free retrieval (a structural request on a file no request has touched costs several warm ones:
// docs/BENCHMARKS.md, "Serving"). Requests are answered meanwhile, the same answers either way.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "repoctx/repoctx.h"

namespace repoctx {

class IndexWarmer {
 public:
  // `indexes` (with the names the log uses) must outlive the warmer.
  explicit IndexWarmer(std::vector<std::pair<std::string, const api::Index*>> indexes);
  ~IndexWarmer();  // stops (between files) and joins
  IndexWarmer(const IndexWarmer&) = delete;
  IndexWarmer& operator=(const IndexWarmer&) = delete;

  // Whether index i's current snapshot is warm.
  bool warm(size_t i) const;

 private:
  void run();
  std::vector<std::pair<std::string, const api::Index*>> indexes_;
  std::unique_ptr<std::atomic<int64_t>[]> warmed_;  // per index: the generation last warmed (0: none)
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace repoctx
