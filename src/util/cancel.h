// Cancellation: one process-wide flag, set by the CLI's SIGINT/SIGTERM handlers (or by a server shutting
// down) and polled by every long loop: indexing, token generation, HTTP retries and waits, the procedural
// stages, evaluation, benchmarks, training. A loop that sees it keeps what it finished (cache rows, results,
// partial traces) and stops; the CLI exits with 130 (ExitCode::interrupted).
#pragma once

#include <atomic>
#include <string>

#include "util/error.h"

namespace repoctx {

// Async-signal-safe to set (a lock-free atomic store).
inline std::atomic<bool> g_interrupted{false};

inline bool interrupted() {
  return g_interrupted.load(std::memory_order_relaxed);
}

// Throws Error(interrupted) when cancellation was requested; `what` says what was kept, e.g.
// "finished tasks are kept; re-run to resume".
inline void throw_if_interrupted(const std::string& what = "work finished so far is kept") {
  if (interrupted()) throw Error(ExitCode::interrupted, "interrupted; " + what);
}

}  // namespace repoctx
