#include "repo/modules.h"

#include <filesystem>
#include <fstream>
#include <unordered_set>

#include "util/text.h"

namespace repoctx {

std::string parent_folder(const std::string& p) {
  size_t s = p.rfind('/');
  return s == std::string::npos ? std::string() : p.substr(0, s);
}

std::string join_relative(const std::string& a, const std::string& b) {
  if (a.empty()) return b;
  if (b.empty()) return a;
  return a + "/" + b;
}

bool normalise_relative_path(std::string_view path, std::string& out) {
  std::vector<std::string_view> parts;
  while (!path.empty()) {
    size_t slash = path.find('/');
    std::string_view part = path.substr(0, slash);
    path = slash == std::string_view::npos ? std::string_view() : path.substr(slash + 1);
    if (part.empty() || part == ".") continue;
    if (part == "..") {
      if (parts.empty()) return false;
      parts.pop_back();
      continue;
    }
    parts.push_back(part);
  }
  out.clear();
  for (auto part : parts) {
    if (!out.empty()) out.push_back('/');
    out.append(part);
  }
  return true;
}

std::string module_from_relpath(const std::string& rel) {
  std::string m = rel;
  if (ends_with(m, ".pyi"))
    m.resize(m.size() - 4);
  else if (ends_with(m, ".py"))
    m.resize(m.size() - 3);
  if (m == "__init__") return "";
  if (ends_with(m, "/__init__")) m.resize(m.size() - 9);
  for (auto& c : m)
    if (c == '/') c = '.';
  return m;
}

std::unordered_map<std::string, std::string> python_module_names(const std::vector<std::string>& rel_paths,
                                                                 const std::string& root_name) {
  std::unordered_set<std::string> packages;  // directories ("" = root) holding an __init__.py
  for (const auto& p : rel_paths) {
    if (p == "__init__.py" || ends_with(p, "/__init__.py")) packages.insert(parent_folder(p));
  }
  bool root_is_package = packages.count("");
  std::unordered_map<std::string, std::string> out;
  for (const auto& p : rel_paths) {
    if (!ends_with(p, ".py") && !ends_with(p, ".pyi")) continue;
    std::string dir = parent_folder(p);
    // Climb while the directory is a package: the import root is the parent of the top-most one.
    std::string top;
    bool in_package = false;
    std::string d = dir;
    while (packages.count(d)) {
      in_package = true;
      top = d;
      if (d.empty()) break;
      d = parent_folder(d);
      if (!packages.count(d)) break;
    }
    std::string rel_mod;
    if (in_package && top.empty()) {
      rel_mod = module_from_relpath(p);
      out[p] = rel_mod.empty() ? root_name : root_name + "." + rel_mod;
      continue;
    }
    if (in_package) {
      std::string import_root = parent_folder(top);
      std::string sub = import_root.empty() ? p : p.substr(import_root.size() + 1);
      out[p] = module_from_relpath(sub);
      continue;
    }
    std::string m = module_from_relpath(p);
    out[p] = root_is_package ? (m.empty() ? root_name : root_name + "." + m) : m;
  }
  return out;
}

std::optional<std::string> read_manifest_head(const std::string& root, const std::string& rel) {
  namespace fs = std::filesystem;
  fs::path manifest = fs::path(root) / rel;
  std::error_code ec;
  if (!fs::is_regular_file(fs::symlink_status(manifest, ec))) return std::nullopt;
  std::ifstream in(manifest, std::ios::binary);
  if (!in) return std::nullopt;
  std::string head(64 << 10, '\0');
  in.read(head.data(), static_cast<std::streamsize>(head.size()));
  head.resize(static_cast<size_t>(in.gcount()));
  return head;
}

const NearestManifest::Found& NearestManifest::at(const std::string& start) {
  std::vector<std::string> walked;
  Found f;
  std::string d = start;
  for (;;) {
    if (auto it = of_dir_.find(d); it != of_dir_.end()) {
      f = it->second;
      break;
    }
    walked.push_back(d);
    if (auto head = read_manifest_head(root_, join_relative(d, file_name_)))
      if (std::string value = read_(*head); !value.empty()) {
        f = {true, d, std::move(value)};
        break;
      }
    if (d.empty()) break;
    d = parent_folder(d);
  }
  for (const auto& w : walked) of_dir_[w] = f;
  return of_dir_[start];
}

}  // namespace repoctx
