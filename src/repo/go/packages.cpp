#include "repo/go/packages.h"

#include <filesystem>

#include "repo/modules.h"
#include "util/text.h"

namespace repoctx {

std::string go_mod_module(const std::string& text) {
  for (auto line : split_lines(text)) {
    std::string_view l = trim(line);
    if (!starts_with(l, "module")) continue;
    l = trim(l.substr(6));
    if (size_t c = l.find("//"); c != std::string_view::npos) l = trim(l.substr(0, c));
    if (l.size() >= 2 && (l.front() == '"' || l.front() == '`')) l = l.substr(1, l.size() - 2);
    return std::string(l);
  }
  return {};
}

std::unordered_map<std::string, std::string> go_package_paths(const std::vector<std::string>& rel_paths,
                                                              const std::string& root, const std::string& root_name) {
  namespace fs = std::filesystem;
  NearestManifest go_mods(root, "go.mod", go_mod_module);
  std::string abs_root = fs::absolute(root).lexically_normal().generic_string();
  std::unordered_map<std::string, std::string> out;
  std::unordered_map<std::string, std::string> path_of_dir;
  for (const auto& rel : rel_paths) {
    if (!ends_with(rel, ".go")) continue;
    std::string dir = parent_folder(rel);
    auto known = path_of_dir.find(dir);
    if (known == path_of_dir.end()) {
      std::string path;
      const NearestManifest::Found& m = go_mods.at(dir);
      if (m.found) {
        std::string below = m.dir.empty() ? dir : dir.size() > m.dir.size() ? dir.substr(m.dir.size() + 1) : "";
        path = m.value == "std" ? below : join_relative(m.value, below);
      } else {
        std::string abs_dir = join_relative(abs_root, dir);
        size_t src = abs_dir.rfind("/src/");
        path = src != std::string::npos ? abs_dir.substr(src + 5) : join_relative(root_name, dir);
      }
      known = path_of_dir.emplace(dir, path).first;
    }
    out[rel] = known->second;
  }
  return out;
}

}  // namespace repoctx
