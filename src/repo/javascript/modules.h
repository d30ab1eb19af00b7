// JavaScript and TypeScript modules: a module is a file, named by its path without the extension
// ("src/util/index.ts" -> "src/util/index"), and an import specifier names one by a path relative to the
// importing file ("./a", "../lib") or to the repository root (a bare specifier, as with a baseUrl of ".").
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

namespace repoctx {

// rel path -> module for every JavaScript/TypeScript file among rel_paths.
std::unordered_map<std::string, std::string> javascript_module_names(const std::vector<std::string>& rel_paths);

// "a/b.ts" -> "a/b", "a/b.js" -> "a/b", "a/b.d.ts" -> "a/b.d" (a declaration file is named apart from the
// code it describes); other paths unchanged.
std::string strip_javascript_extension(const std::string& path);

// The modules an import specifier of the file at `from_path` may name, most specific first: the path itself
// (an extension written in the specifier dropped: TypeScript's "./a.js" is ./a.ts), its declaration file,
// then its folder's index module and declaration; a bare specifier ("lodash", "app/util") is tried from the root and
// from src/. Empty for a relative specifier that climbs above the root.
std::vector<std::string> javascript_specifier_modules(const std::string& from_path, const std::string& spec);

}  // namespace repoctx
