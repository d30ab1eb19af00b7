#include "util/temp_dir.h"
#include "util/file_io.h"

#include <stdlib.h>

#include <cerrno>
#include <cstring>
#include <fstream>
#include <vector>

#include "util/error.h"

namespace repoctx {

namespace fs = std::filesystem;

TempDir::TempDir(const std::string& prefix) {
  std::string tmpl = (fs::temp_directory_path() / (prefix + "XXXXXX")).string();
  std::vector<char> buf(tmpl.begin(), tmpl.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data()))
    throw Error(ExitCode::failure, "cannot create a temporary folder " + tmpl + ": " + std::strerror(errno) +
                                       " (set TMPDIR to a writable folder)");
  path_ = buf.data();
}

void remove_tree(const fs::path& path) {
  std::error_code ec;
  if (fs::is_symlink(path, ec) || !fs::is_directory(path, ec)) {
    fs::remove(path, ec);
    return;
  }
  // A test may have made parts read-only: make them removable first.
  fs::permissions(path, fs::perms::owner_all, fs::perm_options::add, ec);
  for (auto it = fs::recursive_directory_iterator(path, fs::directory_options::skip_permission_denied, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec))
    if (!it->is_symlink(ec) && it->is_directory(ec))
      fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
  fs::remove_all(path, ec);
}

TempDir::~TempDir() {
  remove_tree(path_);
}

void TempDir::write(const std::string& rel, const std::string& content) const {
  auto p = path_ / rel;
  fs::create_directories(p.parent_path());
  std::ofstream(p, std::ios::binary) << content;
}

std::string TempDir::read(const std::string& rel) const {
  return read_file_if_present((path_ / rel).string()).value_or("");
}

}  // namespace repoctx
