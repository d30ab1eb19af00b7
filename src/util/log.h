// Logging: warnings and info go to stderr through fmt; --quiet silences info.
#pragma once

#include <fmt/core.h>

#include <atomic>
#include <cstdio>

namespace repoctx {

enum class LogLevel { quiet = 0, warn = 1, info = 2, debug = 3 };
inline std::atomic<int> g_log_level{static_cast<int>(LogLevel::info)};

template <class... Args>
void log_warn(fmt::format_string<Args...> f, Args&&... args) {
  if (g_log_level >= static_cast<int>(LogLevel::warn))
    fmt::print(stderr, "warning: {}\n", fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void log_info(fmt::format_string<Args...> f, Args&&... args) {
  if (g_log_level >= static_cast<int>(LogLevel::info))
    fmt::print(stderr, "{}\n", fmt::format(f, std::forward<Args>(args)...));
}
template <class... Args>
void log_debug(fmt::format_string<Args...> f, Args&&... args) {
  if (g_log_level >= static_cast<int>(LogLevel::debug))
    fmt::print(stderr, "debug: {}\n", fmt::format(f, std::forward<Args>(args)...));
}

}  // namespace repoctx
