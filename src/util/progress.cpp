#include "util/progress.h"

#include <unistd.h>

#include <cstdio>

namespace repoctx {

Progress::Progress(std::string label, uint64_t total, bool enabled, uint64_t total_bytes)
    : label_(std::move(label)),
      total_(total),
      total_bytes_(total_bytes),
      enabled_(enabled),
      tty_(isatty(STDERR_FILENO)),
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
  if (now - last_draw_ > (tty_ ? std::chrono::milliseconds(100) : std::chrono::milliseconds(10000))) {
    last_draw_ = now;
    draw(false);
  }
}

void Progress::finish() {
  std::lock_guard lock(mu_);
  if (finished_) return;
  finished_ = true;
  // A non-terminal gets a closing line only for a stage that printed progress lines before.
  if (tty_ || last_draw_ != start_) draw(true);
}

double Progress::eta_seconds() const {
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double frac = total_bytes_ > 0 ? static_cast<double>(bytes_) / static_cast<double>(total_bytes_)
                : total_ > 0     ? static_cast<double>(done_) / static_cast<double>(total_)
                                 : 1.0;
  if (secs < 1.0 || frac < 0.02) return -1;
  return frac >= 1.0 ? 0.0 : secs * (1.0 - frac) / frac;
}

void Progress::draw(bool final) {
  if (!enabled_) return;
  double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  double frac = total_ ? static_cast<double>(done_) / static_cast<double>(total_) : 1.0;
  double eta = eta_seconds();
  char eta_text[32] = "";
  if (!final && eta >= 0) std::snprintf(eta_text, sizeof eta_text, "  eta %.0fs", eta);
  char mb[32] = "";
  if (bytes_ > 0) std::snprintf(mb, sizeof mb, "  %.1f MB", static_cast<double>(bytes_) / 1e6);
  if (tty_) {
    int width = 30, filled = static_cast<int>(frac * width);
    std::string bar(static_cast<size_t>(filled), '#');
    bar.append(static_cast<size_t>(width - filled), '.');
    std::fprintf(stderr, "\r%s [%s] %llu/%llu%s  %.1fs%s   ", label_.c_str(), bar.c_str(),
                 static_cast<unsigned long long>(done_), static_cast<unsigned long long>(total_), mb, secs, eta_text);
    if (final) std::fputc('\n', stderr);
  } else {
    std::fprintf(stderr, "%s: %llu/%llu%s  %.0fs%s\n", label_.c_str(), static_cast<unsigned long long>(done_),
                 static_cast<unsigned long long>(total_), mb, secs, eta_text);
  }
  std::fflush(stderr);
}

}  // namespace repoctx
