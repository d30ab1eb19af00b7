#include "server/warmer.h"

#include <chrono>

#include "util/cancel.h"
#include "util/log.h"

namespace repoctx {

IndexWarmer::IndexWarmer(std::vector<Source> indexes)
    : indexes_(std::move(indexes)), warmed_(new std::atomic<int64_t>[indexes_.size()]) {
  for (size_t i = 0; i < indexes_.size(); ++i) warmed_[i] = 0;
  thread_ = std::thread([this] { run(); });
}

IndexWarmer::~IndexWarmer() {
  stop_ = true;
  thread_.join();
}

bool IndexWarmer::warm(size_t i) const {
  if (i >= indexes_.size()) return false;
  const api::Index* index = indexes_[i].get();
  return index && warmed_[i].load() == index->info().generation;
}

void IndexWarmer::run() {
  auto stop = [this] { return stop_.load() || interrupted(); };
  std::vector<int64_t> tried(indexes_.size(), 0);  // a snapshot whose warming failed is not tried again
  while (!stop()) {
    for (size_t i = 0; i < indexes_.size() && !stop(); ++i) {
      const std::string& name = indexes_[i].name;
      const api::Index* index = indexes_[i].get();
      if (!index) continue;
      int64_t gen = index->info().generation;
      if (gen == tried[i]) continue;
      tried[i] = gen;
      auto t0 = std::chrono::steady_clock::now();
      try {
        if (int64_t g = index->warm(stop)) {
          warmed_[i] = g;
          tried[i] = g;
          log_info("{}: warm (snapshot {}) in {:.2f} s", name, g,
                   std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
        }
      } catch (const std::exception& e) {  // requests build what they need on first use, as without warming
        log_warn("{}: warming failed: {}", name, e.what());
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
}

}  // namespace repoctx
