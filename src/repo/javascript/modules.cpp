#include "repo/javascript/modules.h"

#include <cstring>

#include "repo/model.h"
#include "util/text.h"

namespace repoctx {

std::string strip_javascript_extension(const std::string& path) {
  // A declaration file keeps its ".d": "x.d.ts" beside "x.js" describes it, and imports reach the code.
  for (const char* ext : {".tsx", ".ts", ".mts", ".cts", ".jsx", ".js", ".mjs", ".cjs"})
    if (ends_with(path, ext) && path.size() > std::strlen(ext)) return path.substr(0, path.size() - std::strlen(ext));
  return path;
}

std::unordered_map<std::string, std::string> javascript_module_names(const std::vector<std::string>& rel_paths) {
  std::unordered_map<std::string, std::string> out;
  for (const auto& rel : rel_paths)
    if (is_javascript_family(language_from_path(rel))) out[rel] = strip_javascript_extension(rel);
  return out;
}

namespace {

// Joins and normalises '/'-separated parts ("." and ".." resolved); false when ".." climbs above the root.
bool normalise(const std::string& path, std::string& out) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= path.size()) {
    size_t j = path.find('/', i);
    if (j == std::string::npos) j = path.size();
    std::string part = path.substr(i, j - i);
    if (part == "..") {
      if (parts.empty()) return false;
      parts.pop_back();
    } else if (!part.empty() && part != ".") {
      parts.push_back(part);
    }
    i = j + 1;
  }
  out.clear();
  for (const auto& p : parts) {
    if (!out.empty()) out.push_back('/');
    out += p;
  }
  return true;
}

}  // namespace

std::vector<std::string> javascript_specifier_modules(const std::string& from_path, const std::string& spec) {
  std::vector<std::string> out;
  if (spec.empty()) return out;
  auto add = [&](const std::string& path) {
    std::string module = strip_javascript_extension(path);
    if (!module.empty()) {
      out.push_back(module);
      out.push_back(module + ".d");
    }
    std::string index = module.empty() ? "index" : module + "/index";
    out.push_back(index);
    out.push_back(index + ".d");
  };
  if (spec[0] == '.') {
    size_t slash = from_path.rfind('/');
    std::string dir = slash == std::string::npos ? std::string() : from_path.substr(0, slash);
    std::string joined;
    if (!normalise(dir.empty() ? spec : dir + "/" + spec, joined)) return out;
    add(joined);
    return out;
  }
  if (spec[0] == '/' || spec.find(':') != std::string::npos) return out;  // absolute paths, node:fs, URLs
  std::string joined;
  if (normalise(spec, joined)) {
    add(joined);
    add("src/" + joined);
  }
  return out;
}

}  // namespace repoctx
