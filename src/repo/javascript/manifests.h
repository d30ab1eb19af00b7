// What a bare import specifier names beyond the repository's paths: the packages the repository holds
// (package.json `name`, `exports`, `main`: a monorepo's `import "@org/util"`) and the path mappings of
// TypeScript's compiler options (tsconfig.json or jsconfig.json `baseUrl` and `paths`: `import "@app/x"`).
// Read at index time, kept in the index (meta "javascript_resolution") as JSON, so that resolution at query
// time reads no file outside the index.
#pragma once

#include <string>
#include <vector>

namespace repoctx {

// A specifier pattern ("." or "./sub" or "./*" of `exports`; "@app/*" or "jquery" of `paths`) and the paths
// it maps to, relative to the repository root, in the order they are tried; a '*' in the pattern is copied
// into a target's '*'.
struct SpecifierMapping {
  std::string pattern;
  std::vector<std::string> targets;
};

struct JavascriptPackage {
  std::string name;                       // "@babel/core"
  std::string dir;                        // its folder, relative to the root ("" = the root)
  bool has_exports = false;               // then only `exports` names its entry points (Node ignores `main`)
  std::vector<SpecifierMapping> exports;  // patterns "." and "./..."
  std::string main;                       // `main`, relative to the root ("" = none: dir/index)
  std::vector<SpecifierMapping> imports;  // `imports`: "#name" specifiers of the package's own files
};

struct JavascriptPathScope {  // one tsconfig.json or jsconfig.json: the files at or below dir use it
  std::string dir;
  bool has_base = false;
  std::string base;  // baseUrl, relative to the root
  std::vector<SpecifierMapping> paths;
};

struct JavascriptResolution {
  std::vector<JavascriptPackage> packages;  // by dir
  std::vector<JavascriptPathScope> scopes;  // by dir

  bool empty() const { return packages.empty() && scopes.empty(); }
  std::string to_json() const;
  // The empty resolution for "" or a value that is not one (an index written before it was stored).
  static JavascriptResolution from_json(const std::string& text);

  // The nearest scope at or above the folder of `from_path`, or null.
  const JavascriptPathScope* scope_of(const std::string& from_path) const;
  // The nearest package holding `from_path`, or null.
  const JavascriptPackage* package_of(const std::string& from_path) const;
  // The packages named `name`, the one holding `from_path` first, then the shallowest.
  std::vector<const JavascriptPackage*> packages_named(const std::string& name, const std::string& from_path) const;
};

// The package.json files (named ones) and tsconfig.json/jsconfig.json files nearest to the JavaScript and
// TypeScript files among rel_paths. A manifest that does not parse, or is a symbolic link, is passed over
// (the next one up counts); a tsconfig's `extends` is followed within the repository.
JavascriptResolution read_javascript_resolution(const std::string& root, const std::vector<std::string>& rel_paths);

// The targets a specifier maps to through `mappings` (an exact pattern first, else the wildcard pattern with
// the longest prefix), '*' replaced; empty when none matches.
std::vector<std::string> map_specifier(const std::vector<SpecifierMapping>& mappings, const std::string& spec);

}  // namespace repoctx
