#include "util/paths.h"

#include <cstdlib>
#include <filesystem>

#include "util/error.h"

namespace fs = std::filesystem;

namespace repoctx {

std::string exe_dir() {
  std::error_code ec;
  fs::path exe = fs::read_symlink("/proc/self/exe", ec);
  return ec ? std::string(".") : exe.parent_path().string();
}

namespace {

fs::path beside_exe(const char* env, const char* folder, const std::string& rel) {
  if (const char* d = std::getenv(env); d && *d) return fs::path(d) / rel;
  return fs::path(exe_dir()).parent_path() / folder / "repoctx" / rel;
}

}  // namespace

std::string data_file(const std::string& rel) {
  fs::path p = beside_exe("REPOCTX_DATA_DIR", "share", rel);
  std::error_code ec;
  if (!fs::exists(p, ec))
    throw Error(ExitCode::not_found, "repoctx's data file '" + p.string() +
                                         "' is missing (reinstall repoctx, or set REPOCTX_DATA_DIR to the folder "
                                         "that holds " +
                                         rel + ")");
  return p.string();
}

std::string helper_program(const std::string& name) {
  fs::path p = beside_exe("REPOCTX_LIBEXEC_DIR", "libexec", name);
  std::error_code ec;
  return fs::exists(p, ec) ? p.string() : std::string();
}

}  // namespace repoctx
