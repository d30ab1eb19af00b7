#include "util/progress.h"

#include <unistd.h>

#include <cstdio>

namespace repoctx {

Progress::Progress(std::string label, uint64_t total, bool enabled)
    : label_(std::move(label)),
      total_(total),
      enabled_(enabled && isatty(STDERR_FILENO)),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

Progress::~Progress() {
  finish();
}

void Progress::add(uint64_t n, uint64_t bytes) {
  std::lock_guard lock(mu_);
  done_ += n;
  bytes_ += bytes;
  auto now = std::chrono::steady_clock::now();
  if (now - last_draw_ > std::chrono::milliseconds(100)) {
    last_draw_ = now;
    draw(false);
  }
}

void Progress::finish() {
  std::lock_guard lock(mu_);
  if (finished_) return;
  finished_ = true;
  draw(true);
}

void Progress::draw(bool final) {
  if (!enabled_) return;
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double frac = total_ ? static_cast<double>(done_) / static_cast<double>(total_) : 1.0;
  int width = 30, filled = static_cast<int>(frac * width);
  std::string bar(static_cast<size_t>(filled), '#');
  bar.append(static_cast<size_t>(width - filled), '.');
  double rate = secs > 0 ? static_cast<double>(done_) / secs : 0;
  double eta = rate > 0 && total_ > done_ ? static_cast<double>(total_ - done_) / rate : 0;
  std::fprintf(stderr, "\r%s [%s] %llu/%llu  %.1f MB  %.0f/s  eta %.0fs   ", label_.c_str(), bar.c_str(),
               static_cast<unsigned long long>(done_), static_cast<unsigned long long>(total_),
               static_cast<double>(bytes_) / 1e6, rate, eta);
  if (final) std::fputc('\n', stderr);
  std::fflush(stderr);
}

}  // namespace repoctx
