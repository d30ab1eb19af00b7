// C's module system: a file is its path (a module name is the '/'-separated path below the repository root),
// and `#include` names a header by a path the compiler searches for in the includer's folder (quoted form)
// and then in the include directories of its build.
#pragma once

#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "repo/c/compile_commands.h"

namespace repoctx {

// A header: what an #include names, whose definitions every includer sees (.h, .hh, .hpp, .hxx, .h++, and the
// template bodies headers include: .inl, .ipp, .tpp).
bool is_c_header_path(const std::string& path);

// Whether a .h header's text is C++: a line opening with `namespace`, `class X`, `template <`, an access
// specifier or `using namespace`, a `std::` name, or an `#include <vector>` of an extensionless standard
// header. A C header that guards C++ lines with `#ifdef __cplusplus` stays C.
bool looks_like_cpp(std::string_view source);

// rel_paths: '/'-separated paths relative to the root; only C and C++ sources and headers are named, each by
// its own path.
std::unordered_map<std::string, std::string> c_module_names(const std::vector<std::string>& rel_paths);

// Which file of a repository an `#include` names, without the build's -I list (no build is run): the quoted
// form's path beside the includer first; else every file whose path ends with the spelled path at a folder
// boundary (`<linux/sched.h>` finds include/linux/sched.h wherever the include directory is), the one sharing
// the longest folder prefix with the includer winning, then the shortest path, then the first in path order.
// With the build's compilation database (`build`), the includer's include folders are searched first, in the
// compiler's order, after the quoted form's folder.
class IncludeResolver {
 public:
  // index i = file i (empty: not C or C++); `build` (may be null) outlives the resolver.
  explicit IncludeResolver(const std::vector<std::string>& paths, const CompileIncludes* build = nullptr);
  // The file index the include names, or -1 (a system or third-party header).
  int resolve(const std::string& includer, const std::string& spelled, bool quoted) const;

 private:
  std::vector<std::string> paths_;
  const CompileIncludes* build_;
  std::unordered_map<std::string, int> by_path_;
  std::unordered_map<std::string, std::vector<int>> by_suffix_;  // "linux/sched.h" -> files ending so
};

// "a/b/../c/./d.h" -> "a/c/d.h"; a path climbing above its start keeps no "..": "" when it does.
std::string normalize_relative(const std::string& path);

}  // namespace repoctx
