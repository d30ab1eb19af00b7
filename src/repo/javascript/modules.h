// JavaScript and TypeScript modules: a module is a file, named by its path without the extension
// ("src/util/index.ts" -> "src/util/index"), and an import specifier names one by a path relative to the
// importing file ("./a", "../lib"), or a bare one through the repository's manifests (repo/javascript/manifests.h)
// or from the repository root (as with a baseUrl of ".").
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

#include "repo/javascript/manifests.h"

namespace repoctx {

// rel path -> module for every JavaScript/TypeScript file among rel_paths.
std::unordered_map<std::string, std::string> javascript_module_names(const std::vector<std::string>& rel_paths);

// "a/b.ts" -> "a/b", "a/b.js" -> "a/b", "a/b.d.ts" -> "a/b.d" (a declaration file is named apart from the
// code it describes), "a/b.mts" -> "a/b.mjs", "a/b.cts" -> "a/b.cjs" (Node never adds .mjs or .cjs to a
// specifier: those files keep them); other paths unchanged.
std::string strip_javascript_extension(const std::string& path);

// Which of the files sharing a module name ("a.ts", "a.tsx", "a.js": module "a") an extension-less specifier
// loads: the lowest rank (TypeScript's sources .ts, .tsx, .mts, .cts, then .js, .jsx, .mjs, .cjs).
int javascript_extension_rank(const std::string& path);

// Is `spec` one of Node's built-in modules ("fs", "fs/promises", "util")? Node loads those before any
// package of the same name, so such an import names nothing in the repository.
bool is_node_builtin(const std::string& spec);

// The modules an import specifier of the file at `from_path` may name, most specific first: the path itself
// (an extension written in the specifier dropped: TypeScript's "./a.js" is ./a.ts), its declaration file,
// then its folder's index module and declaration. A bare specifier ("lodash", "@app/util") goes through the
// nearest tsconfig's `paths` and `baseUrl`, then the repository's packages of that name (`exports`, else
// `main` or a subpath of the package's folder), then is tried from the root and from src/. Empty for a
// relative specifier that climbs above the root. `resolution` may be null (no manifests).
std::vector<std::string> javascript_specifier_modules(const std::string& from_path, const std::string& spec,
                                                      const JavascriptResolution* resolution = nullptr);

}  // namespace repoctx
