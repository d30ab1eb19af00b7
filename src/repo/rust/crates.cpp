#include "repo/rust/crates.h"

#include <unordered_set>

#include "repo/modules.h"
#include "util/text.h"

namespace repoctx {

namespace {

std::string crate_identifier(std::string_view name) {
  std::string out(name);
  for (auto& c : out)
    if (c == '-' || c == '.') c = '_';
  return out;
}

// "a/b/mod.rs" -> "a.b", "a/b.rs" -> "a.b"
std::string dotted_module(std::string_view rel) {
  std::string m(rel.substr(0, rel.size() - 3));
  if (m == "mod") return "";
  if (ends_with(m, "/mod")) m.resize(m.size() - 4);
  for (auto& c : m)
    if (c == '/') c = '.';
  return m;
}

}  // namespace

// Only two keys of two tables are read ([lib] name, [package] name), each a basic or literal string on one
// line, which is how Cargo writes and documents them; a full TOML parser would add a dependency for that.
std::string cargo_crate_name(const std::string& text) {
  std::string section, lib_name, package_name;
  for (auto raw : split_lines(text)) {
    std::string_view l = trim(raw);
    if (starts_with(l, "[")) {
      section = std::string(trim(l.substr(1, l.find(']') == std::string_view::npos ? l.size() - 1 : l.find(']') - 1)));
      continue;
    }
    if (section != "lib" && section != "package") continue;
    if (!starts_with(l, "name")) continue;
    std::string_view rest = trim(l.substr(4));
    if (!starts_with(rest, "=")) continue;
    rest = trim(rest.substr(1));
    if (rest.size() < 2 || (rest.front() != '"' && rest.front() != '\'')) continue;
    size_t close = rest.find(rest.front(), 1);
    if (close == std::string_view::npos) continue;
    std::string name = crate_identifier(rest.substr(1, close - 1));
    (section == "lib" ? lib_name : package_name) = name;
  }
  return lib_name.empty() ? package_name : lib_name;
}

std::unordered_map<std::string, std::string> rust_module_names(const std::vector<std::string>& rel_paths,
                                                               const std::string& root, const std::string& root_name) {
  NearestManifest manifests(root, "Cargo.toml", cargo_crate_name);
  std::unordered_set<std::string> paths;
  for (const auto& rel : rel_paths)
    if (ends_with(rel, ".rs")) paths.insert(rel);
  std::unordered_map<std::string, std::string> out;
  for (const auto& rel : paths) {
    const NearestManifest::Found& c = manifests.at(parent_folder(rel));
    std::string crate_dir = c.found ? c.dir : std::string();
    std::string name = c.found ? c.value : crate_identifier(root_name);
    std::string below = crate_dir.empty() ? rel : rel.substr(crate_dir.size() + 1);
    std::string src_dir = crate_dir.empty() ? "src/" : crate_dir + "/src/";
    std::string module;
    if (starts_with(below, "src/")) {
      std::string in_src = below.substr(4);
      if (in_src == "lib.rs")
        module = name;
      else if (in_src == "main.rs")
        module = paths.count(src_dir + "lib.rs") ? name + ".main" : name;
      else
        module = name + "." + dotted_module(in_src);
    } else {
      std::string m = dotted_module(below);
      module = m.empty() ? name : name + "." + m;
    }
    out[rel] = std::move(module);
  }
  return out;
}

}  // namespace repoctx
