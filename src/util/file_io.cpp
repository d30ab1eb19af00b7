#include "util/file_io.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <exception>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <thread>
#include <vector>

#include "util/error.h"

namespace repoctx {

std::optional<std::string> read_file_if_present(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return std::nullopt;
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

bool write_file_atomically(const std::string& path, std::string_view bytes) {
  static std::atomic<unsigned> writes{0};  // two writers of one process stay apart
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(writes++);
  std::error_code ec;
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f.write(bytes.data(), static_cast<std::streamsize>(bytes.size())) || !f.flush())
      ec = std::make_error_code(std::errc::io_error);
  }
  if (!ec) std::filesystem::rename(tmp, path, ec);
  if (!ec) return true;
  std::filesystem::remove(tmp, ec);
  return false;
}

std::string read_file(const std::string& path, const std::string& what) {
  auto text = read_file_if_present(path);
  if (!text) throw Error(ExitCode::not_found, "cannot read the " + what + " '" + path + "'");
  return std::move(*text);
}

void parallel_for(size_t n, int threads, const std::function<void(size_t)>& body) {
  std::atomic<size_t> next{0};
  std::mutex err_mu;
  std::exception_ptr err;
  auto work = [&] {
    try {
      for (size_t i = next++; i < n; i = next++) body(i);
    } catch (...) {
      std::lock_guard lk(err_mu);
      if (!err) err = std::current_exception();
      next = n;  // no new item starts
    }
  };
  size_t extra = static_cast<size_t>(std::max(1, threads)) - 1;
  std::vector<std::thread> pool;
  for (size_t t = 0; t < std::min(extra, n > 0 ? n - 1 : 0); ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  if (err) std::rethrow_exception(err);
}

}  // namespace repoctx
