#include "repo/javascript/modules.h"

#include <cstring>
#include <unordered_set>

#include "repo/model.h"
#include "repo/modules.h"
#include "util/text.h"

namespace repoctx {

std::string strip_javascript_extension(const std::string& path) {
  // A declaration file keeps its ".d": "x.d.ts" beside "x.js" describes it, and imports reach the code.
  // .mjs and .cjs stay: "./a" never loads them (Node adds no such extension), "./a.cjs" loads exactly that;
  // TypeScript's .mts and .cts are what "./a.mjs" and "./a.cjs" name in TypeScript.
  for (const char* ext : {".tsx", ".ts", ".jsx", ".js"})
    if (ends_with(path, ext) && path.size() > std::strlen(ext)) return path.substr(0, path.size() - std::strlen(ext));
  if (ends_with(path, ".mts") || ends_with(path, ".cts"))
    return path.substr(0, path.size() - 3) + path[path.size() - 3] + "js";
  return path;
}

std::unordered_map<std::string, std::string> javascript_module_names(const std::vector<std::string>& rel_paths) {
  std::unordered_map<std::string, std::string> out;
  for (const auto& rel : rel_paths)
    if (is_javascript_family(language_from_path(rel))) out[rel] = strip_javascript_extension(rel);
  return out;
}

int javascript_extension_rank(const std::string& path) {
  int rank = 0;
  for (const char* ext : {".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"}) {
    if (ends_with(path, ext)) return rank;
    ++rank;
  }
  return rank;
}

bool is_node_builtin(const std::string& spec) {
  // Node's built-in modules (require('module').builtinModules of Node 18-20, without the internal "_" ones).
  static const std::unordered_set<std::string> builtins = {"assert",
                                                           "assert/strict",
                                                           "async_hooks",
                                                           "buffer",
                                                           "child_process",
                                                           "cluster",
                                                           "console",
                                                           "constants",
                                                           "crypto",
                                                           "dgram",
                                                           "diagnostics_channel",
                                                           "dns",
                                                           "dns/promises",
                                                           "domain",
                                                           "events",
                                                           "fs",
                                                           "fs/promises",
                                                           "http",
                                                           "http2",
                                                           "https",
                                                           "inspector",
                                                           "inspector/promises",
                                                           "module",
                                                           "net",
                                                           "os",
                                                           "path",
                                                           "path/posix",
                                                           "path/win32",
                                                           "perf_hooks",
                                                           "process",
                                                           "punycode",
                                                           "querystring",
                                                           "readline",
                                                           "readline/promises",
                                                           "repl",
                                                           "stream",
                                                           "stream/consumers",
                                                           "stream/promises",
                                                           "stream/web",
                                                           "string_decoder",
                                                           "sys",
                                                           "timers",
                                                           "timers/promises",
                                                           "tls",
                                                           "trace_events",
                                                           "tty",
                                                           "url",
                                                           "util",
                                                           "util/types",
                                                           "v8",
                                                           "vm",
                                                           "wasi",
                                                           "worker_threads",
                                                           "zlib"};
  return builtins.count(spec) > 0;
}

std::vector<std::string> javascript_specifier_modules(const std::string& from_path, const std::string& spec,
                                                      const JavascriptResolution* resolution) {
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
  std::string joined;
  if (spec[0] == '.') {
    if (!normalise_relative_path(join_relative(parent_folder(from_path), spec), joined)) return out;
    if (resolution)  // a folder holding a package.json loads its `main` before its index ("./" in its tests)
      for (const auto& p : resolution->packages)
        if (p.dir == joined && !p.main.empty()) {
          if (!joined.empty()) out = {strip_javascript_extension(joined), strip_javascript_extension(joined) + ".d"};
          add(p.main);
        }
    add(joined);
    return out;
  }
  if (spec[0] == '#') {  // package.json `imports` of the package holding the file
    if (const JavascriptPackage* p = resolution ? resolution->package_of(from_path) : nullptr)
      for (const auto& target : map_specifier(p->imports, spec)) add(target);
    return out;
  }
  if (spec[0] == '/' || spec.find(':') != std::string::npos) return out;  // absolute paths, node:fs, URLs
  if (is_node_builtin(spec)) return out;  // Node loads its own before any package of that name
  if (resolution) {
    if (const JavascriptPathScope* scope = resolution->scope_of(from_path)) {
      for (const auto& target : map_specifier(scope->paths, spec)) add(target);
      if (scope->has_base && normalise_relative_path(join_relative(scope->base, spec), joined)) add(joined);
    }
    // "@org/name/sub/x" is package "@org/name", subpath "./sub/x"; "name/sub" is "name", "./sub".
    size_t cut = spec.find('/', spec[0] == '@' ? spec.find('/') + 1 : 0);
    std::string name = spec.substr(0, cut);
    std::string subpath = cut == std::string::npos ? "." : "." + spec.substr(cut);
    for (const JavascriptPackage* p : resolution->packages_named(name, from_path)) {
      if (p->has_exports) {
        for (const auto& target : map_specifier(p->exports, subpath)) add(target);
      } else if (subpath == ".") {
        add(p->main.empty() ? p->dir : p->main);
        if (!p->main.empty()) add(p->dir);  // a main naming a missing file: Node falls back to index
      } else if (normalise_relative_path(join_relative(p->dir, subpath), joined)) {
        add(joined);
      }
    }
  }
  if (normalise_relative_path(spec, joined)) {
    add(joined);
    add("src/" + joined);
  }
  return out;
}

}  // namespace repoctx
