// Reading whole files and running a loop on threads: the two things many stages need and each would
// otherwise write again.
#pragma once

#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

namespace repoctx {

// The bytes of the file at `path`. Throws Error(not_found, "cannot read the <what> '<path>'") when it cannot
// be opened.
std::string read_file(const std::string& path, const std::string& what = "file");
// The bytes, or nullopt when the file cannot be opened.
std::optional<std::string> read_file_if_present(const std::string& path);
// Writes `bytes` to a temporary file beside `path` and renames it over `path`, so that a reader sees the old
// file or the new one, never a part. False (and nothing left behind) when any step fails.
bool write_file_atomically(const std::string& path, std::string_view bytes);

// Runs body(i) for every i in [0, n) on up to `threads` threads (the calling thread is one of them); items are
// taken in order from a shared counter. The first exception any body throws stops the items not yet started
// and is rethrown on the calling thread once every thread has stopped.
void parallel_for(size_t n, int threads, const std::function<void(size_t)>& body);

}  // namespace repoctx
