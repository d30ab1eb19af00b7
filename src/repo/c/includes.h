// C's module system: a file is its path (a module name is the '/'-separated path below the repository root),
// and `#include` names a header by a path the compiler searches for in the includer's folder (quoted form)
// and then in the include directories of its build.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

namespace repoctx {

// rel_paths: '/'-separated paths relative to the root; only *.c and *.h are named, each by its own path.
std::unordered_map<std::string, std::string> c_module_names(const std::vector<std::string>& rel_paths);

// Which file of a repository an `#include` names, without the build's -I list (no build is run): the quoted
// form's path beside the includer first; else every file whose path ends with the spelled path at a folder
// boundary (`<linux/sched.h>` finds include/linux/sched.h wherever the include directory is), the one sharing
// the longest folder prefix with the includer winning, then the shortest path, then the first in path order.
class IncludeResolver {
 public:
  explicit IncludeResolver(const std::vector<std::string>& paths);  // index i = file i (non-C paths ignored)
  // The file index the include names, or -1 (a system or third-party header).
  int resolve(const std::string& includer, const std::string& spelled, bool quoted) const;

 private:
  std::vector<std::string> paths_;
  std::unordered_map<std::string, int> by_path_;
  std::unordered_map<std::string, std::vector<int>> by_suffix_;  // "linux/sched.h" -> files ending so
};

// "a/b/../c/./d.h" -> "a/c/d.h"; a path climbing above its start keeps no "..": "" when it does.
std::string normalize_relative(const std::string& path);

}  // namespace repoctx
