// Cross-file resolution over the index: module members (with re-exports through imports and __init__),
// class hierarchies (MRO of in-repository bases), self/cls/super() members, function-level imports, and
// the transitive import closure of a file (ProjAgent 4.3's "accessible files").
//
// Resolution is conservative: a chain is followed only while each step is certain (a module, a class, an
// instance of a class through its receiver); anything else stops it. It is computed on demand from the
// per-file facts of the index, so a re-index of one file never invalidates stored results.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "index/repo_view.h"
#include "repo/c/includes.h"
#include "repo/javascript/manifests.h"

namespace repoctx {

// Bumped whenever resolution changes what a name resolves to: facts derived from it and kept on disk next to
// an index (the structural strategy's unit references) are then rebuilt instead of read.
inline constexpr const char* kResolverVersion = "resolve-v1";

struct Resolution {
  enum class Kind { none, entity, module, builtin, external };
  Kind kind = Kind::none;
  int entity = -1;         // kind == entity
  int file = -1;           // kind == module (the module's file)
  std::vector<int> along;  // every repository entity named explicitly along the chain, in order
};

// What the body of a hidden target must not contribute: references, imports and nested entities inside it.
struct HiddenBody {
  int entity = -1;
  int file = -1;
};

// A file cut at a completion cursor: its definitions starting on or after `line`, and its imports there,
// are absent (what a copy of the repository whose file ends at the cursor holds).
struct FileCut {
  int file = -1;
  int line = 0;
};

class SymbolGraph {
 public:
  explicit SymbolGraph(const RepoView& view);

  const RepoView& view() const { return v_; }

  // Resolves `chain` ("a.b.c", "self.x", "super().m") as written in `scope` (global entity index, or -1
  // for module level) of `file`.
  Resolution resolve(int file, int scope, const std::string& chain, const HiddenBody* hidden = nullptr,
                     const FileCut* cut = nullptr) const;

  // The repository entities a scope (an entity and everything nested in it) references.
  std::vector<int> referenced_entities(int entity, const HiddenBody* hidden = nullptr) const;

  // Method resolution order of a class (itself first), in-repository bases only.
  std::vector<int> mro(int cls, const FileCut* cut = nullptr) const;
  // Member `name` of class `cls` through its MRO (methods, class attributes, nested classes).
  std::optional<int> class_member(int cls, const std::string& name, const FileCut* cut = nullptr) const;
  // All members of a class through its MRO (nearest definition of each name).
  std::vector<int> class_members(int cls) const;
  // Name `name` as seen at module level of `file`: its definitions, then its imports (re-exports).
  Resolution module_member(int file, const std::string& name, const FileCut* cut = nullptr) const;

  // The repository entity (or module) an import statement names: `from m import x` -> x as m defines or
  // re-exports it; Java `import p.C` -> class C of package p, whichever of the package's files defines it;
  // `import static p.C.m` and `import p.C.Inner` -> that member of C. Star imports name nothing.
  Resolution import_target(int file, const Import& im) const;

  // Absolute module an import refers to ("" when a relative import climbs above the root).
  std::string import_module(int file, const Import& im) const;
  // Repository files an import statement loads (the module, its parent packages, imported submodules).
  std::vector<int> import_files(int file, const Import& im) const;
  // Files directly imported by `file` (any scope), excluding the ones hidden.
  std::vector<int> imported_files(int file, const HiddenBody* hidden = nullptr) const;
  // Transitive closure of imported_files, starting file included (ProjAgent 4.3).
  std::vector<int> accessible_files(int file, const HiddenBody* hidden = nullptr) const;

  // The class enclosing an entity (nearest), or -1.
  int enclosing_class(int entity) const;
  // Top-level definition of `name` in `file` (the last one when redefined), or -1.
  int top_level(int file, const std::string& name) const;

  static bool is_builtin(const std::string& name);
  bool is_java(int file) const { return v_.files()[file].language == Language::java; }
  bool is_csharp(int file) const { return v_.files()[file].language == Language::csharp; }
  // Java or C#: the file's module is a declared package or namespace whose types need no import.
  bool declares_namespace(int file) const { return module_is_declared_namespace(v_.files()[file].language); }
  bool is_go(int file) const { return v_.files()[file].language == Language::go; }
  bool is_javascript(int file) const { return is_javascript_family(v_.files()[file].language); }
  bool is_rust(int file) const { return v_.files()[file].language == Language::rust; }
  bool is_c(int file) const { return is_c_family(v_.files()[file].language); }  // C or C++
  bool is_cpp(int file) const { return v_.files()[file].language == Language::cpp; }
  // Java and C#: the top-level type `name` of package (namespace) `pkg`, whichever file defines it, or -1.
  int package_type(const std::string& pkg, const std::string& name) const;
  // C#: the type `name` seen from namespace `ns`: declared in `ns` or in a namespace enclosing it, or -1.
  int csharp_namespace_type(const std::string& ns, const std::string& name) const;
  // Go: the package-level definition `qualname` of package `pkg` ("F", "T", or a method "T.M"), whichever
  // file of the package declares it, or -1.
  int go_package_member(const std::string& pkg, const std::string& qualname, const FileCut* cut = nullptr) const;
  // Rust: the method `name` an `impl` block gives the type `type` (an entity), preferring the type's own file,
  // else any file of its crate, or -1.
  int rust_impl_method(int type, const std::string& name, const FileCut* cut = nullptr) const;
  // Rust: every method the `impl` blocks of its crate give the type `type`, in index order.
  const std::vector<int>& rust_impl_methods(int type) const;
  // C: the file-scope definition `name` another file of the repository gives `file` (the linker's and the
  // preprocessor's view: an external function or variable anywhere, a header's macros, types and prototypes;
  // a prototype in a header the file includes stands for its function), or -1.
  int c_global(int file, const std::string& name, const FileCut* cut = nullptr) const;

 private:
  struct Value {
    enum class Kind { none, module, package, klass, instance, entity, builtin, external };
    Kind kind = Kind::none;
    int file = -1, entity = -1;
    std::string module;     // package without __init__.py
    bool receiver = false;  // self/cls itself (not a symbol of its own)
  };
  Value lookup_root(int file, int scope, const std::string& root, const HiddenBody* hidden, const FileCut* cut) const;
  Value member(const Value& v, const std::string& name, const FileCut* cut = nullptr) const;
  Value module_value(const std::string& module) const;
  Resolution module_member_impl(int file, const std::string& name, std::unordered_set<std::string>& seen,
                                const FileCut* cut) const;
  // module_member_impl's steps: the module's last top-level definition `name` before the cut (-1: none);
  // what a non-star, module-level import binding the name resolves to (kind none: nothing, look further).
  int top_level_before(int file, const std::string& name, const FileCut* cut) const;
  Resolution named_import_member(int file, const Import& im, std::unordered_set<std::string>& seen,
                                 const FileCut* cut) const;
  bool cut_away(const FileCut* cut, int entity) const;
  Value from_resolution(const Resolution& r) const;
  Value resolve_import_binding(int file, const Import& im, const std::string& bound,
                               const FileCut* cut = nullptr) const;

  const RepoView& v_;
  // Built at first use (a query that resolves nothing, e.g. BM25 for free text, never pays for them).
  void build_tables() const;
  mutable std::once_flag tables_once_;
  mutable std::vector<std::unordered_map<std::string, int>> top_level_;  // per file: name -> last top-level def
  mutable std::unordered_set<std::string> packages_;                     // dotted names of every package prefix
  // Go: "import path\x1fqualname" -> entity, for every package-level definition (methods by "T.M"), since a
  // Go package's files share one scope and a method may be declared in another file than its type.
  mutable std::unordered_map<std::string, int> go_members_;
  // Rust: "crate\x1fT" -> the methods of the `impl T` blocks anywhere in the crate (an impl may sit in any
  // module of its type's crate).
  mutable std::unordered_map<std::string, std::vector<int>> rust_methods_;
  // Java and C#: "package\x1fT" -> package_type's answer.
  mutable std::unordered_map<std::string, int> namespace_types_;
  // C#: "namespace\x1fT" -> every top-level declaration of type T (a partial type spreads over files).
  mutable std::unordered_map<std::string, std::vector<int>> csharp_types_;
  // C: name -> every file-scope definition of C files (one namespace: functions, variables, macros, tags,
  // typedef names and enumerators), and the repository's include lookup.
  mutable std::unordered_map<std::string, std::vector<int>> c_names_;
  mutable CompileIncludes compile_includes_;  // the build's include folders, parsed with includes_
  mutable std::unique_ptr<IncludeResolver> includes_;
  mutable std::once_flag includes_once_;
  mutable JavascriptResolution javascript_resolution_;  // parsed from the view on the first JavaScript import
  mutable std::once_flag javascript_once_;
  // Rust's roots that name modules rather than items: `crate`, `super`, and another crate of the repository.
  Value rust_path_root(int file, const std::string& root) const;
  // `self` in an impl method ("T.m"): an instance of T as the method's file names it.
  Value rust_receiver(int file, const EntityRec& method, const FileCut* cut) const;
  // The class of a C++ member function: its parent, or for `void A::f() {}` the class A its name names.
  int cpp_method_class(int file, int method, const FileCut* cut) const;
  // `this` (an instance of the class) or a member of the class a bare name names, inside C++ member function
  // `function`; entity -1 when neither.
  Value cpp_member_root(int file, int function, const std::string& root, const FileCut* cut) const;
  // Inside a member of class `cls` (C++, C#): `this` is an instance of it, a bare name a member it (or a base)
  // declares.
  Value member_scope_root(int cls, const std::string& root, const FileCut* cut) const;
  // C#: member `name` declared by another part of partial type `cls` (another file of its namespace), or -1.
  int csharp_partial_member(int cls, const std::string& name) const;
  // Per file: imported_files(file) with nothing hidden, built at the first accessible_files (a closure
  // walks most of a package's files, and rebuilding each file's import targets from module-name strings
  // for every query was a quarter of a warm structural request on sympy).
  const std::vector<int>& imported_files_unhidden(int file) const;
  std::vector<int> accessible_files_walk(int file, const HiddenBody* hidden) const;
  mutable std::once_flag imported_once_;
  mutable std::vector<std::vector<int>> imported_;
  mutable std::mutex mu_;
  mutable std::unordered_map<int, std::vector<int>> mro_cache_;
  // accessible_files(file) with nothing hidden, per file queried: a structural request asks for the
  // closure of its target's file, and walking it (most of sympy's files) would be ~5% of the request.
  mutable std::unordered_map<int, std::vector<int>> closure_cache_;
  mutable std::unordered_map<std::string, Resolution> member_cache_;  // "file\x1fname"
};

}  // namespace repoctx
