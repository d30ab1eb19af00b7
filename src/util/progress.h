// Progress of a long stage on stderr: a bar redrawn in place when stderr is a terminal; when it is not (CI
// logs, pipes), a plain line every 10 seconds for stages that run that long, so logs stay short.
// Hand-written: Debian ships no C++ progress-bar library.
#pragma once

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>

namespace repoctx {

class Progress {
 public:
  // `total_bytes` > 0: the ETA follows bytes rather than items (stages that take the largest items first
  // would otherwise promise minutes for seconds of work).
  Progress(std::string label, uint64_t total, bool enabled = true, uint64_t total_bytes = 0);
  ~Progress();
  void add(uint64_t n = 1, uint64_t bytes = 0);
  void finish();
  // Seconds left, or a negative number while there is too little to go on (under a second or 2%).
  double eta_seconds() const;

 private:
  void draw(bool final);
  std::string label_;
  uint64_t total_, total_bytes_, done_ = 0, bytes_ = 0;
  bool enabled_, tty_, finished_ = false;
  std::chrono::steady_clock::time_point start_, last_draw_;
  mutable std::mutex mu_;
};

}  // namespace repoctx
