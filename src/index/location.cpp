#include "index/location.h"

#include <filesystem>
#include <fstream>

namespace fs = std::filesystem;

namespace repoctx {

void ensure_index_dir(const std::string& db_path, std::error_code& ec) {
  fs::path parent = fs::path(db_path).parent_path();
  if (parent.empty()) return;
  fs::create_directories(parent, ec);
  std::error_code ignored;
  if (!ec && parent.filename() == ".repoctx" && !fs::exists(parent / ".gitignore", ignored))
    std::ofstream(parent / ".gitignore") << "# Written by repoctx: its index is never part of the repository.\n*\n";
}

}  // namespace repoctx
