// A terminal progress bar on stderr, drawn only when stderr is a terminal (logs stay clean).
// Hand-written: Debian ships no C++ progress-bar library.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace repoctx {

class Progress {
 public:
  Progress(std::string label, uint64_t total, bool enabled = true);
  ~Progress();
  void add(uint64_t n = 1, uint64_t bytes = 0);
  void finish();

 private:
  void draw(bool final);
  std::string label_;
  uint64_t total_, done_ = 0, bytes_ = 0;
  bool enabled_, finished_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
  std::mutex mu_;
};

}  // namespace repoctx
