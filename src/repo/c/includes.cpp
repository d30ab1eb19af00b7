#include "repo/c/includes.h"

#include <algorithm>

#include "repo/model.h"
#include "repo/modules.h"
#include "util/text.h"

namespace repoctx {

namespace {

bool is_c_path(const std::string& p) {
  return is_c_family(language_from_path(p));
}

// Folders two paths share from the root ("a/b/x.c", "a/b/c/y.h" -> 2).
int shared_folders(const std::string& a, const std::string& b) {
  int n = 0;
  size_t i = 0;
  while (i < a.size() && i < b.size() && a[i] == b[i]) {
    if (a[i] == '/') ++n;
    ++i;
  }
  return n;
}

}  // namespace

bool is_c_header_path(const std::string& path) {
  for (const char* ext : {".h", ".hh", ".hpp", ".hxx", ".h++", ".inl", ".ipp", ".tpp"})
    if (ends_with(path, ext)) return true;
  return false;
}

bool looks_like_cpp(std::string_view source) {
  int preproc_depth = 0;  // inside `#ifdef __cplusplus`: what a C header shows C++ compilers only
  for (std::string_view line : split_lines(source.substr(0, std::min<size_t>(source.size(), 256 * 1024)))) {
    std::string_view l = trim(line);
    if (starts_with(l, "#")) {
      std::string_view d = trim(l.substr(1));
      // `#include <vector>`: the C++ standard library's headers have no extension (C's end in .h).
      if (preproc_depth == 0 && starts_with(d, "include") && d.find('<') != std::string_view::npos &&
          d.find('>') != std::string_view::npos &&
          d.substr(d.find('<'), d.find('>') - d.find('<')).find('.') == std::string_view::npos)
        return true;
      if (starts_with(d, "if")) {
        if (preproc_depth > 0 || l.find("__cplusplus") != std::string_view::npos) ++preproc_depth;
      } else if (starts_with(d, "endif") && preproc_depth > 0) {
        --preproc_depth;
      }
      continue;
    }
    if (preproc_depth > 0) continue;
    for (std::string_view opener :
         {"namespace ", "template <", "template<", "using namespace ", "public:", "private:", "protected:"})
      if (starts_with(l, opener)) return true;
    if (starts_with(l, "class ") && l.find(';') == std::string_view::npos) return true;
    if (l.find("std::") != std::string_view::npos && !starts_with(l, "//") && !starts_with(l, "*")) return true;
  }
  return false;
}

std::unordered_map<std::string, std::string> c_module_names(const std::vector<std::string>& rel_paths) {
  std::unordered_map<std::string, std::string> out;
  for (const auto& rel : rel_paths)
    if (is_c_path(rel)) out.emplace(rel, rel);
  return out;
}

std::string normalize_relative(const std::string& path) {
  std::string out;
  return normalise_relative_path(path, out) ? out : std::string();
}

IncludeResolver::IncludeResolver(const std::vector<std::string>& paths, const CompileIncludes* build)
    : paths_(paths), build_(build && !build->empty() ? build : nullptr) {
  for (size_t i = 0; i < paths_.size(); ++i) {
    const std::string& p = paths_[i];
    if (!is_c_path(p)) continue;
    int id = static_cast<int>(i);
    by_path_.emplace(p, id);
    by_suffix_[p].push_back(id);
    for (size_t slash = p.find('/'); slash != std::string::npos; slash = p.find('/', slash + 1))
      by_suffix_[p.substr(slash + 1)].push_back(id);
  }
}

int IncludeResolver::resolve(const std::string& includer, const std::string& spelled, bool quoted) const {
  if (quoted) {
    std::string dir = parent_folder(includer);
    std::string beside = normalize_relative(dir.empty() ? spelled : dir + "/" + spelled);
    if (auto it = by_path_.find(beside); !beside.empty() && it != by_path_.end()) return it->second;
  }
  if (build_)
    for (const std::string& dir : build_->dirs_for(includer, quoted)) {
      std::string p = normalize_relative(dir.empty() ? spelled : dir + "/" + spelled);
      if (auto it = by_path_.find(p); !p.empty() && it != by_path_.end()) return it->second;
    }
  // `#include "../x.h"` not found beside the includer: the path below its leading climbs.
  std::string_view s = spelled;
  while (starts_with(s, "../") || starts_with(s, "./")) s = s.substr(s.find('/') + 1);
  std::string key = normalize_relative(std::string(s));
  auto it = by_suffix_.find(key);
  if (key.empty() || it == by_suffix_.end()) return -1;
  int best = -1, best_shared = -1;
  for (int f : it->second) {
    int shared = shared_folders(includer, paths_[f]);
    if (best < 0 || shared > best_shared ||
        (shared == best_shared && (paths_[f].size() < paths_[best].size() ||
                                   (paths_[f].size() == paths_[best].size() && paths_[f] < paths_[best])))) {
      best = f;
      best_shared = shared;
    }
  }
  return best;
}

}  // namespace repoctx
