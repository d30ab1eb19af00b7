#include "index/symbol_graph.h"

#include <algorithm>
#include <deque>
#include <functional>

#include "repo/javascript/modules.h"
#include "util/text.h"

namespace repoctx {

namespace {

// The name a CommonJS `require` binds: what the module assigned to module.exports, else the module itself.
const char* const kModuleExports = "module.exports";

const std::unordered_set<std::string>& builtins() {
  // dir(builtins) of CPython 3.11.
  static const std::unordered_set<std::string> names = [] {
    const char* all =
        "ArithmeticError AssertionError AttributeError BaseException BaseExceptionGroup BlockingIOError "
        "BrokenPipeError BufferError BytesWarning ChildProcessError ConnectionAbortedError ConnectionError "
        "ConnectionRefusedError ConnectionResetError DeprecationWarning EOFError Ellipsis EncodingWarning "
        "EnvironmentError Exception ExceptionGroup False FileExistsError FileNotFoundError FloatingPointError "
        "FutureWarning GeneratorExit IOError ImportError ImportWarning IndentationError IndexError "
        "InterruptedError IsADirectoryError KeyError KeyboardInterrupt LookupError MemoryError "
        "ModuleNotFoundError NameError None NotADirectoryError NotImplemented NotImplementedError OSError "
        "OverflowError PendingDeprecationWarning PermissionError ProcessLookupError RecursionError "
        "ReferenceError ResourceWarning RuntimeError RuntimeWarning StopAsyncIteration StopIteration "
        "SyntaxError SyntaxWarning SystemError SystemExit TabError TimeoutError True TypeError "
        "UnboundLocalError UnicodeDecodeError UnicodeEncodeError UnicodeError UnicodeTranslateError "
        "UnicodeWarning UserWarning ValueError Warning ZeroDivisionError __build_class__ __debug__ __doc__ "
        "__import__ __loader__ __name__ __package__ __spec__ __file__ __builtins__ abs aiter all anext any "
        "ascii bin bool breakpoint bytearray bytes callable chr classmethod compile complex copyright credits "
        "delattr dict dir divmod enumerate eval exec exit filter float format frozenset getattr globals "
        "hasattr hash help hex id input int isinstance issubclass iter len license list locals map max "
        "memoryview min next object oct open ord pow print property quit range repr reversed round set "
        "setattr slice sorted staticmethod str sum super tuple type vars zip";
    std::unordered_set<std::string> s;
    std::string_view v(all);
    size_t i = 0;
    while (i < v.size()) {
      size_t j = v.find(' ', i);
      if (j == std::string_view::npos) j = v.size();
      s.emplace(v.substr(i, j - i));
      i = j + 1;
    }
    return s;
  }();
  return names;
}

std::vector<std::string> split_chain(const std::string& chain) {
  std::vector<std::string> parts;
  size_t i = 0;
  while (i <= chain.size()) {
    size_t j = chain.find('.', i);
    if (j == std::string::npos) j = chain.size();
    parts.push_back(chain.substr(i, j - i));
    i = j + 1;
  }
  return parts;
}

bool has_decorator(const Entity& e, std::string_view name) {
  return std::any_of(e.decorators.begin(), e.decorators.end(), [&](const std::string& d) { return d == name; });
}

}  // namespace

bool SymbolGraph::is_builtin(const std::string& name) {
  return builtins().count(name) > 0;
}

SymbolGraph::SymbolGraph(const RepoView& view) : v_(view) {}

void SymbolGraph::build_tables() const {
  std::call_once(tables_once_, [&] {
    const auto& files = v_.files();
    const auto& ents = v_.entities();
    top_level_.resize(files.size());
    for (size_t i = 0; i < ents.size(); ++i) {
      const EntityRec& e = ents[i];
      if (e.parent_index >= 0) continue;
      if (files[e.file].language == Language::go) {
        go_members_[files[e.file].module + '\x1f' + e.qualname] = static_cast<int>(i);
        if (e.kind == EntityKind::method) continue;  // "T.M" is the type's member, not a package name
      }
      if (files[e.file].language == Language::rust && e.kind == EntityKind::method) {  // an impl's "T.m"
        const std::string& m = files[e.file].module;
        size_t dot = e.qualname.rfind('.');
        if (dot != std::string::npos)
          rust_methods_[m.substr(0, m.find('.')) + '\x1f' + e.qualname.substr(0, dot)].push_back(static_cast<int>(i));
        continue;
      }
      top_level_[e.file][e.name] = static_cast<int>(i);
      if (files[e.file].language == Language::csharp && is_type(e.kind))
        csharp_types_[files[e.file].module + '\x1f' + e.name].push_back(static_cast<int>(i));
      // C++'s `void A::f() {}` is A's member, reached through A, not a name of the program.
      if (is_c_family(files[e.file].language) && e.kind != EntityKind::method)
        c_names_[e.name].push_back(static_cast<int>(i));
    }
    // Java's and C#'s package types: of the files of a package in path order, the first whose last top-level
    // definition of the name is a type (a lookup was a scan of every file of the package, and a C# namespace
    // holds hundreds).
    for (size_t f = 0; f < files.size(); ++f) {
      if (files[f].module.empty() || !module_is_declared_namespace(files[f].language)) continue;
      for (const auto& [name, e] : top_level_[f])
        if (is_type(ents[e].kind)) namespace_types_.emplace(files[f].module + '\x1f' + name, e);
    }
    for (const auto& f : files) {
      if (f.module.empty() || f.language == Language::go || is_c_family(f.language) || is_javascript_family(f.language))
        continue;
      std::string m = f.module;
      for (size_t dot = m.rfind('.'); dot != std::string::npos; dot = m.rfind('.')) {
        m.resize(dot);
        packages_.insert(m);
      }
      if (ends_with(f.path, "__init__.py")) packages_.insert(f.module);
    }
  });
}

int SymbolGraph::c_global(int file, const std::string& name, const FileCut* cut) const {
  build_tables();
  auto it = c_names_.find(name);
  if (it == c_names_.end()) return -1;
  const auto& ents = v_.entities();
  const auto& files = v_.files();
  const std::string& here = files[file].path;
  const std::vector<int>& included = imported_files_unhidden(file);
  // A .c file's static definitions and macros are its own; a header's are every includer's.
  auto visible = [&](const EntityRec& e) {
    if (is_c_header_path(files[e.file].path)) return true;
    return std::none_of(e.decorators.begin(), e.decorators.end(),
                        [](const std::string& d) { return d == "static" || d == "define"; });
  };
  // Among several definitions (one per architecture, per configuration): a directly included header's, then
  // the one nearest the file in the folder tree, then the first indexed.
  int best = -1;
  long best_score = -1;
  for (int e : it->second) {
    const EntityRec& en = ents[e];
    if (en.file == file || !visible(en) || cut_away(cut, e)) continue;
    const std::string& there = files[en.file].path;
    size_t i = 0, shared = 0;
    for (; i < here.size() && i < there.size() && here[i] == there[i]; ++i) shared += here[i] == '/';
    // A header's prototype stands for the function where the file includes it; elsewhere the definition does.
    bool declaration = !en.decorators.empty() && en.decorators[0] == "declaration";
    bool direct = std::binary_search(included.begin(), included.end(), en.file);
    long score = static_cast<long>(shared) + (direct ? 100000L : 0L) - (declaration && !direct ? 50000L : 0L);
    if (score > best_score) {
      best = e;
      best_score = score;
    }
  }
  return best;
}

int SymbolGraph::top_level(int file, const std::string& name) const {
  build_tables();
  auto it = top_level_[file].find(name);
  return it == top_level_[file].end() ? -1 : it->second;
}

int SymbolGraph::enclosing_class(int entity) const {
  const auto& ents = v_.entities();
  for (int e = entity >= 0 ? ents[entity].parent_index : -1; e >= 0; e = ents[e].parent_index)
    if (is_type(ents[e].kind)) return e;
  return -1;
}

std::string SymbolGraph::import_module(int file, const Import& im) const {
  if (is_c(file)) {  // the header's path (its module name), or the include as written (outside the repository)
    std::call_once(includes_once_, [&] {
      std::vector<std::string> paths;
      paths.reserve(v_.files().size());
      for (const auto& f : v_.files()) paths.push_back(is_c_family(f.language) ? f.path : std::string());
      compile_includes_ = CompileIncludes::from_json(v_.c_include_dirs());
      includes_ = std::make_unique<IncludeResolver>(paths, &compile_includes_);
    });
    int f = includes_->resolve(v_.files()[file].path, im.module, im.level > 0);
    return f >= 0 ? v_.files()[f].module : im.module;
  }
  if (is_javascript(file)) {
    // The first module the specifier may name that the repository has; else the specifier as written
    // (a package outside the repository: external).
    std::call_once(javascript_once_,
                   [&] { javascript_resolution_ = JavascriptResolution::from_json(v_.javascript_resolution()); });
    for (const auto& m : javascript_specifier_modules(v_.files()[file].path, im.module, &javascript_resolution_))
      if (v_.file_by_module(m)) return m;
    return im.module;
  }
  if (is_rust(file) && im.level == 0) {
    // A path not made absolute at extraction (`use a::b`): a child of this module (Rust 2018), a module of the
    // crate root (Rust 2015), else another crate, in that order.
    const std::string& here = v_.files()[file].module;
    std::string crate = here.substr(0, here.find('.'));
    std::string first = im.module.substr(0, im.module.find('.'));
    build_tables();
    for (const std::string& base : {here, crate}) {
      std::string c = base + "." + first;
      if (v_.file_by_module(c) || packages_.count(c)) return base + "." + im.module;
    }
    return im.module;
  }
  if (im.level == 0) return im.module;
  const FileRec& f = v_.files()[file];
  std::string pkg = f.module;
  bool is_init = ends_with(f.path, "__init__.py") || ends_with(f.path, "__init__.pyi");
  if (!is_init) {
    size_t dot = pkg.rfind('.');
    pkg = dot == std::string::npos ? std::string() : pkg.substr(0, dot);
  }
  for (int i = 1; i < im.level; ++i) {
    if (pkg.empty()) return "";
    size_t dot = pkg.rfind('.');
    pkg = dot == std::string::npos ? std::string() : pkg.substr(0, dot);
  }
  if (im.module.empty()) return pkg;
  return pkg.empty() ? im.module : pkg + "." + im.module;
}

SymbolGraph::Value SymbolGraph::module_value(const std::string& module) const {
  build_tables();
  Value v;
  if (module.empty()) return v;
  if (auto f = v_.file_by_module(module)) {
    v.kind = Value::Kind::module;
    v.file = *f;
    v.module = module;
  } else if (packages_.count(module)) {
    v.kind = Value::Kind::package;
    v.module = module;
  } else {
    v.kind = Value::Kind::external;
    v.module = module;
  }
  return v;
}

SymbolGraph::Value SymbolGraph::from_resolution(const Resolution& r) const {
  Value v;
  switch (r.kind) {
    case Resolution::Kind::entity:
      v.entity = r.entity;
      v.kind = is_type(v_.entities()[r.entity].kind) ? Value::Kind::klass : Value::Kind::entity;
      break;
    case Resolution::Kind::module:
      v.kind = Value::Kind::module;
      v.file = r.file;
      v.module = v_.files()[r.file].module;
      break;
    case Resolution::Kind::builtin:
      v.kind = Value::Kind::builtin;
      break;
    case Resolution::Kind::external:
      v.kind = Value::Kind::external;
      break;
    default:
      break;
  }
  return v;
}

SymbolGraph::Value SymbolGraph::resolve_import_binding(int file, const Import& im, const std::string& bound,
                                                       const FileCut* cut) const {
  if (im.name.empty()) {
    // `import a.b.c` binds `a`; `import a.b.c as x` binds x to a.b.c (JavaScript: `import * as x`, require).
    if (!im.alias.empty()) return module_value(import_module(file, im));
    (void)bound;
    return module_value(im.module.substr(0, im.module.find('.')));
  }
  std::string target = import_module(file, im);
  if (target.empty() && im.level > 0) return Value{};
  Value mod = module_value(target);
  if (mod.kind == Value::Kind::module) {
    Resolution r = module_member(mod.file, im.name, cut);
    if (r.kind != Resolution::Kind::none) return from_resolution(r);
    if (im.name == kModuleExports && is_javascript(file)) return mod;  // require of a module of exports.x = ...
  }
  Value sub = module_value(target + "." + im.name);
  if (sub.kind == Value::Kind::module || sub.kind == Value::Kind::package) return sub;
  Value out;
  if (mod.kind == Value::Kind::external) out.kind = Value::Kind::external;
  return out;
}

bool SymbolGraph::cut_away(const FileCut* cut, int entity) const {
  const EntityRec& en = v_.entities()[entity];
  return cut && en.file == cut->file && en.start_line >= cut->line;
}

Resolution SymbolGraph::module_member(int file, const std::string& name, const FileCut* cut) const {
  if (cut) {  // never cached: the cut file's members depend on the cut
    std::unordered_set<std::string> seen;
    return module_member_impl(file, name, seen, cut);
  }
  std::string key = std::to_string(file) + '\x1f' + name;
  {
    std::lock_guard lk(mu_);
    auto it = member_cache_.find(key);
    if (it != member_cache_.end()) return it->second;
  }
  std::unordered_set<std::string> seen;
  Resolution r = module_member_impl(file, name, seen, nullptr);
  std::lock_guard lk(mu_);
  member_cache_.emplace(key, r);
  return r;
}

int SymbolGraph::top_level_before(int file, const std::string& name, const FileCut* cut) const {
  int top = top_level(file, name);
  if (top >= 0 && cut_away(cut, top)) {  // the last definition before the cut, if any
    const FileRec& f = v_.files()[file];
    const auto& ents = v_.entities();
    top = -1;
    for (int i = f.first_entity; i < f.first_entity + f.n_entities; ++i)
      if (ents[i].parent_index < 0 && ents[i].name == name && !cut_away(cut, i)) top = i;
  }
  return top;
}

Resolution SymbolGraph::named_import_member(int file, const Import& im, std::unordered_set<std::string>& seen,
                                            const FileCut* cut) const {
  Resolution r;
  if (declares_namespace(file)) return import_target(file, im);
  Value val;
  if (im.name.empty()) {
    val = im.alias.empty() ? module_value(im.module.substr(0, im.module.find('.')))
                           : module_value(import_module(file, im));
  } else {
    std::string target = import_module(file, im);
    Value mod = module_value(target);
    if (mod.kind == Value::Kind::module) {
      Resolution inner = module_member_impl(mod.file, im.name, seen, cut);
      if (inner.kind != Resolution::Kind::none) return inner;
      if (im.name == kModuleExports && is_javascript(file)) {
        r.kind = Resolution::Kind::module;
        r.file = mod.file;
        return r;
      }
    }
    Value sub = module_value(target + "." + im.name);
    if (sub.kind == Value::Kind::module)
      val = sub;
    else if (mod.kind == Value::Kind::external)
      val.kind = Value::Kind::external;
  }
  if (val.kind == Value::Kind::module) {
    r.kind = Resolution::Kind::module;
    r.file = val.file;
  } else if (val.kind == Value::Kind::external) {
    r.kind = Resolution::Kind::external;
  }
  return r;
}

Resolution SymbolGraph::module_member_impl(int file, const std::string& name, std::unordered_set<std::string>& seen,
                                           const FileCut* cut) const {
  Resolution r;
  std::string key = std::to_string(file) + '\x1f' + name;
  if (!seen.insert(key).second) return r;  // import cycle
  if (int e = top_level_before(file, name, cut); e >= 0) {
    r.kind = Resolution::Kind::entity;
    r.entity = e;
    return r;
  }
  // A Java package is one module spread over one file per top-level type: its other files' types are
  // members too (same-package references need no import). A C# namespace's types, and those of the
  // namespaces enclosing it, are visible without a using directive.
  if (declares_namespace(file)) {
    const std::string& ns = v_.files()[file].module;
    if (int e = is_csharp(file) ? csharp_namespace_type(ns, name) : package_type(ns, name); e >= 0) {
      r.kind = Resolution::Kind::entity;
      r.entity = e;
      return r;
    }
  }
  // C: one namespace of file-scope names across the program, reached through headers and the linker.
  if (is_c(file)) {
    if (int e = c_global(file, name, cut); e >= 0) {
      r.kind = Resolution::Kind::entity;
      r.entity = e;
    }
    return r;
  }
  // A Go package's files share one scope: every package-level name of the folder is visible.
  if (is_go(file))
    if (int e = go_package_member(v_.files()[file].module, name, cut); e >= 0) {
      r.kind = Resolution::Kind::entity;
      r.entity = e;
      return r;
    }
  const auto& imps = v_.imports(file);
  for (auto it = imps.rbegin(); it != imps.rend(); ++it) {
    const Import& im = *it;
    if (im.scope != -1 || im.star) continue;
    if (im.bound_name() != name) continue;
    if (cut && file == cut->file && im.line >= cut->line) continue;
    Resolution ir = named_import_member(file, im, seen, cut);
    if (ir.kind != Resolution::Kind::none) return ir;
  }
  for (const Import& im : imps) {
    if (im.scope != -1 || !im.star) continue;
    if (cut && file == cut->file && im.line >= cut->line) continue;
    if (declares_namespace(file)) {
      // `import p.*` / `using p;`: the types of package p (on demand: after single-type imports and the file's
      // package); `using static A.B.C;`: the members of type C of namespace A.B.
      int e = package_type(import_module(file, im), im.name.empty() ? name : im.name);
      if (e >= 0 && !im.name.empty()) e = class_member(e, name).value_or(-1);
      if (e >= 0) {
        r.kind = Resolution::Kind::entity;
        r.entity = e;
        return r;
      }
      continue;
    }
    Value mod = module_value(import_module(file, im));
    if (mod.kind != Value::Kind::module) continue;
    Resolution inner = module_member_impl(mod.file, name, seen, cut);
    if (inner.kind == Resolution::Kind::entity || inner.kind == Resolution::Kind::module) return inner;
  }
  const std::string& m = v_.files()[file].module;
  if (!m.empty()) {
    if (auto sub = v_.file_by_module(m + "." + name)) {
      r.kind = Resolution::Kind::module;
      r.file = *sub;
    }
  }
  return r;
}

std::vector<int> SymbolGraph::mro(int cls, const FileCut* cut) const {
  if (cut && v_.entities()[cls].file != cut->file) cut = nullptr;  // a class of another file: the cached order
  if (!cut) {
    std::lock_guard lk(mu_);
    auto it = mro_cache_.find(cls);
    if (it != mro_cache_.end()) return it->second;
  }
  std::vector<int> out{cls};
  std::vector<int> stack{cls};
  std::unordered_set<int> seen{cls};
  // Depth-first, left to right: equal to C3 for the single-inheritance chains that dominate real code,
  // and never wrong about *which* classes are in the hierarchy (what the checks and features need).
  std::function<void(int)> visit = [&](int c) {
    const EntityRec& ce = v_.entities()[c];
    int scope = ce.parent_index;
    for (std::string base : ce.bases) {
      size_t br = base.find('[');
      if (br != std::string::npos) base.resize(br);
      base = std::string(trim(base));
      if (base.empty() || base.find('(') != std::string::npos) continue;
      Resolution r = resolve(ce.file, scope, base, nullptr, cut);
      if (r.kind != Resolution::Kind::entity || !is_type(v_.entities()[r.entity].kind)) continue;
      if (!seen.insert(r.entity).second) continue;
      out.push_back(r.entity);
      visit(r.entity);
    }
  };
  visit(cls);
  // A Rust type's traits are named by its impl blocks (`impl Tr for T`, in any module of the crate): each
  // method carries its trait, resolved where the impl is written; their provided methods are the type's too.
  if (is_rust(v_.entities()[cls].file) && is_type(v_.entities()[cls].kind))
    for (int m : rust_impl_methods(cls))
      for (const std::string& tr : v_.entities()[m].bases) {
        Resolution r = resolve(v_.entities()[m].file, -1, tr, nullptr, cut);
        if (r.kind != Resolution::Kind::entity || !is_type(v_.entities()[r.entity].kind)) continue;
        if (!seen.insert(r.entity).second) continue;
        out.push_back(r.entity);
        visit(r.entity);
      }
  if (cut) return out;
  std::lock_guard lk(mu_);
  mro_cache_.emplace(cls, out);
  return out;
}

std::optional<int> SymbolGraph::class_member(int cls, const std::string& name, const FileCut* cut) const {
  const auto& ents = v_.entities();
  for (int c : mro(cls, cut)) {
    const FileRec& f = v_.files()[ents[c].file];
    int found = -1;
    for (int i = c + 1; i < f.first_entity + f.n_entities; ++i) {
      if (ents[i].start_line > ents[c].end_line || cut_away(cut, i)) break;
      if (ents[i].parent_index == c && ents[i].name == name) found = i;  // the last definition wins
    }
    if (found < 0 && is_go(ents[c].file) && ents[c].parent_index < 0)
      found = go_package_member(f.module, ents[c].name + "." + name, cut);
    if (found < 0 && is_rust(ents[c].file)) found = rust_impl_method(c, name, cut);
    if (found < 0 && is_csharp(ents[c].file)) found = csharp_partial_member(c, name);
    if (found >= 0) return found;
  }
  return std::nullopt;
}

std::vector<int> SymbolGraph::class_members(int cls) const {
  const auto& ents = v_.entities();
  std::vector<int> out;
  std::unordered_set<std::string> names;
  for (int c : mro(cls)) {
    const FileRec& f = v_.files()[ents[c].file];
    std::vector<int> here;
    for (int i = c + 1; i < f.first_entity + f.n_entities; ++i) {
      if (ents[i].start_line > ents[c].end_line) break;
      if (ents[i].parent_index == c) here.push_back(i);
    }
    for (auto it = here.rbegin(); it != here.rend(); ++it)
      if (names.insert(ents[*it].name).second) out.push_back(*it);
  }
  return out;
}

SymbolGraph::Value SymbolGraph::member(const Value& v, const std::string& name, const FileCut* cut) const {
  Value out;
  switch (v.kind) {
    case Value::Kind::module:
      return from_resolution(module_member(v.file, name, cut));
    case Value::Kind::package:
      return module_value(v.module + "." + name);
    case Value::Kind::klass:
    case Value::Kind::instance: {
      auto m = class_member(v.entity, name, cut);
      if (!m) return out;
      out.entity = *m;
      out.kind = is_type(v_.entities()[*m].kind) ? Value::Kind::klass : Value::Kind::entity;
      return out;
    }
    case Value::Kind::external:
      out.kind = Value::Kind::external;
      return out;
    default:
      return out;
  }
}

SymbolGraph::Value SymbolGraph::lookup_root(int file, int scope, const std::string& root, const HiddenBody* hidden,
                                            const FileCut* cut) const {
  const auto& ents = v_.entities();
  // self / cls: the first parameter of the nearest enclosing method that declares it.
  for (int e = scope; e >= 0; e = ents[e].parent_index) {
    const EntityRec& en = ents[e];
    // JavaScript's `this` in a method, constructor or field initialiser: an instance of the class.
    if (root == "this" && is_javascript(file) && en.parent_index >= 0 && is_type(ents[en.parent_index].kind) &&
        (is_callable(en.kind) || en.kind == EntityKind::field)) {
      Value v;
      v.receiver = true;
      v.entity = en.parent_index;
      v.kind = Value::Kind::instance;
      return v;
    }
    // C++: `this` in a member function, and a bare name its class (or a base) declares.
    if (is_cpp(file) && is_callable(en.kind))
      if (Value v = cpp_member_root(file, e, root, cut); v.entity >= 0) return v;
    // C#: `this` and bare member names in a method, constructor, property or field initialiser.
    if (is_csharp(file) && en.parent_index >= 0 && is_type(ents[en.parent_index].kind) && !is_type(en.kind))
      if (Value v = member_scope_root(en.parent_index, root, cut); v.entity >= 0) return v;
    // A Go method's receiver: an instance of the type its qualified name names ("T.M").
    if (is_go(file) && en.kind == EntityKind::method && en.parent_index < 0 && !en.params.empty() &&
        en.params[0].name == root) {
      Value v;
      v.receiver = true;
      size_t dot = en.qualname.find('.');
      if (dot == std::string::npos) return Value{};
      v.entity = go_package_member(v_.files()[file].module, en.qualname.substr(0, dot), cut);
      if (v.entity < 0 || !is_type(ents[v.entity].kind)) return Value{};
      v.kind = Value::Kind::instance;
      return v;
    }
    // A Rust impl method's `self`: an instance of the type its qualified name names ("T.m").
    if (is_rust(file) && root == "self" && en.kind == EntityKind::method && en.parent_index < 0 && !en.params.empty() &&
        en.params[0].name == "self")
      return rust_receiver(file, en, cut);
    if (en.kind == EntityKind::method && !en.params.empty() && en.params[0].name == root &&
        en.params[0].kind <= Parameter::positional && !has_decorator(en, "staticmethod")) {
      Value v;
      v.entity = en.parent_index;
      v.receiver = true;
      if (v.entity < 0 || !is_type(ents[v.entity].kind)) return Value{};
      v.kind = has_decorator(en, "classmethod") || en.name == "__new__" || en.name == "__init_subclass__" ||
                       en.name == "__class_getitem__"
                   ? Value::Kind::klass
                   : Value::Kind::instance;
      return v;
    }
  }
  // Names in a class body see the class's own earlier definitions.
  if (scope >= 0 && is_type(ents[scope].kind)) {
    auto m = class_member(scope, root, cut);
    if (m && ents[*m].parent_index == scope) {
      Value v;
      v.entity = *m;
      v.kind = is_type(ents[*m].kind) ? Value::Kind::klass : Value::Kind::entity;
      return v;
    }
  }
  // Imports inside enclosing functions.
  const auto& imps = v_.imports(file);
  const FileRec& f = v_.files()[file];
  for (int e = scope; e >= 0; e = ents[e].parent_index) {
    if (!is_callable(ents[e].kind)) continue;
    int ord = e - f.first_entity;
    for (auto it = imps.rbegin(); it != imps.rend(); ++it) {
      if (it->scope != ord || it->star || it->bound_name() != root) continue;
      if (cut && file == cut->file && it->line >= cut->line) continue;
      if (hidden && hidden->file == file && hidden->entity >= 0 && v_.is_within(e, hidden->entity)) continue;
      return resolve_import_binding(file, *it, root, cut);
    }
  }
  Resolution r = module_member(file, root, cut);
  if (r.kind != Resolution::Kind::none) return from_resolution(r);
  if (is_rust(file)) return rust_path_root(file, root);
  Value none;
  if (is_builtin(root)) none.kind = Value::Kind::builtin;
  return none;
}

Resolution SymbolGraph::resolve(int file, int scope, const std::string& chain, const HiddenBody* hidden,
                                const FileCut* cut) const {
  Resolution res;
  auto parts = split_chain(chain);
  if (parts.empty()) return res;
  Value cur;
  size_t i = 1;
  if (parts[0] == "super()") {
    int cls = scope >= 0 && is_type(v_.entities()[scope].kind) ? scope : enclosing_class(scope);
    if (cls < 0 || parts.size() < 2) return res;
    auto order = mro(cls, cut);
    for (size_t k = 1; k < order.size() && cur.kind == Value::Kind::none; ++k) {
      Value c;
      c.kind = Value::Kind::klass;
      c.entity = order[k];
      auto m = class_member(order[k], parts[1], cut);
      if (m && v_.entities()[*m].parent_index == order[k]) cur = member(c, parts[1], cut);
    }
    if (cur.kind == Value::Kind::none) return res;
    i = 2;
  } else {
    cur = lookup_root(file, scope, parts[0], hidden, cut);
    // C++ `ns::a::f`: namespaces are no entities; the first part that resolves starts the chain (the standard
    // library's `std::` names none of the repository's).
    while (cur.kind == Value::Kind::none && is_cpp(file) && i < parts.size() && parts[0] != "std") {
      cur = lookup_root(file, scope, parts[i], hidden, cut);
      ++i;
    }
  }
  auto note = [&](const Value& v) {
    if (v.entity >= 0 && !v.receiver && (v.kind == Value::Kind::klass || v.kind == Value::Kind::entity))
      res.along.push_back(v.entity);
  };
  note(cur);
  for (; i < parts.size(); ++i) {
    Value nxt = member(cur, parts[i], cut);
    if (nxt.kind == Value::Kind::none) break;
    note(nxt);
    cur = nxt;
  }
  if (cur.receiver) return res;  // a bare `self` names no repository symbol
  switch (cur.kind) {
    case Value::Kind::klass:
    case Value::Kind::entity:
      res.kind = Resolution::Kind::entity;
      res.entity = cur.entity;
      break;
    case Value::Kind::module:
      res.kind = Resolution::Kind::module;
      res.file = cur.file;
      break;
    case Value::Kind::builtin:
      res.kind = Resolution::Kind::builtin;
      break;
    case Value::Kind::external:
      res.kind = Resolution::Kind::external;
      break;
    default:
      break;
  }
  return res;
}

std::vector<int> SymbolGraph::referenced_entities(int entity, const HiddenBody* hidden) const {
  const auto& ents = v_.entities();
  const EntityRec& me = ents[entity];
  const FileRec& f = v_.files()[me.file];
  std::vector<int> out;
  for (const Reference& r : v_.references(me.file)) {
    if (r.scope < 0) continue;
    int scope = f.first_entity + r.scope;
    if (!v_.is_within(scope, entity)) continue;
    if (hidden && hidden->file == me.file && v_.is_within(scope, hidden->entity)) continue;
    Resolution res = resolve(me.file, scope, r.chain, hidden);
    for (int e : res.along)
      if (!v_.is_within(e, entity)) out.push_back(e);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

int SymbolGraph::go_package_member(const std::string& pkg, const std::string& qualname, const FileCut* cut) const {
  build_tables();
  auto it = go_members_.find(pkg + '\x1f' + qualname);
  if (it == go_members_.end() || cut_away(cut, it->second)) return -1;
  return it->second;
}

int SymbolGraph::rust_impl_method(int type, const std::string& name, const FileCut* cut) const {
  const auto& ents = v_.entities();
  int elsewhere = -1;  // the type's own file first: two types of one name in a crate keep their own impls
  for (int m : rust_impl_methods(type)) {
    if (ents[m].name != name || cut_away(cut, m)) continue;
    if (ents[m].file == ents[type].file) return m;
    if (elsewhere < 0) elsewhere = m;
  }
  return elsewhere;
}

const std::vector<int>& SymbolGraph::rust_impl_methods(int type) const {
  build_tables();
  static const std::vector<int> none;
  const EntityRec& t = v_.entities()[type];
  const std::string& module = v_.files()[t.file].module;
  auto it = rust_methods_.find(module.substr(0, module.find('.')) + '\x1f' + t.qualname);
  return it == rust_methods_.end() ? none : it->second;
}

SymbolGraph::Value SymbolGraph::cpp_member_root(int file, int function, const std::string& root,
                                                const FileCut* cut) const {
  int cls = cpp_method_class(file, function, cut);
  return cls < 0 ? Value{} : member_scope_root(cls, root, cut);
}

SymbolGraph::Value SymbolGraph::member_scope_root(int cls, const std::string& root, const FileCut* cut) const {
  Value v;
  if (root == "this") {
    v.receiver = true;
    v.entity = cls;
    v.kind = Value::Kind::instance;
  } else if (auto m = class_member(cls, root, cut)) {
    v.entity = *m;
    v.kind = is_type(v_.entities()[*m].kind) ? Value::Kind::klass : Value::Kind::entity;
  }
  return v;
}

int SymbolGraph::cpp_method_class(int file, int method, const FileCut* cut) const {
  const auto& ents = v_.entities();
  const EntityRec& en = ents[method];
  if (en.parent_index >= 0) return is_type(ents[en.parent_index].kind) ? en.parent_index : -1;
  if (en.kind != EntityKind::method) return -1;
  // "ns.A.f": A, the part before the name (a namespace before it is no entity).
  size_t dot = en.qualname.rfind('.');
  if (dot == std::string::npos) return -1;
  size_t start = en.qualname.rfind('.', dot - 1);
  std::string cls = en.qualname.substr(start == std::string::npos ? 0 : start + 1,
                                       dot - (start == std::string::npos ? 0 : start + 1));
  int e = c_global(file, cls, cut);
  if (e < 0) {  // the class defined in this file (c_global looks at the other files)
    int t = top_level(file, cls);
    e = t;
  }
  return e >= 0 && is_type(ents[e].kind) ? e : -1;
}

SymbolGraph::Value SymbolGraph::rust_receiver(int file, const EntityRec& method, const FileCut* cut) const {
  size_t dot = method.qualname.rfind('.');
  if (dot == std::string::npos) return Value{};
  std::string type = method.qualname.substr(0, dot);
  type = type.substr(type.rfind('.') + 1);
  Resolution t = module_member(file, type, cut);
  if (t.kind != Resolution::Kind::entity || !is_type(v_.entities()[t.entity].kind)) return Value{};
  Value v;
  v.receiver = true;
  v.entity = t.entity;
  v.kind = Value::Kind::instance;
  return v;
}

SymbolGraph::Value SymbolGraph::rust_path_root(int file, const std::string& root) const {
  const std::string& here = v_.files()[file].module;
  if (root == "crate") return module_value(here.substr(0, here.find('.')));
  if (root == "super") {
    size_t dot = here.rfind('.');
    return dot == std::string::npos ? Value{} : module_value(here.substr(0, dot));
  }
  Value v = module_value(root);  // another crate of the repository (`regex::Regex` without a `use`)
  return v.kind == Value::Kind::module ? v : Value{};
}

int SymbolGraph::csharp_namespace_type(const std::string& ns, const std::string& name) const {
  for (std::string n = ns; !n.empty();) {
    if (int e = package_type(n, name); e >= 0) return e;
    size_t dot = n.rfind('.');
    n = dot == std::string::npos ? "" : n.substr(0, dot);
  }
  return -1;
}

int SymbolGraph::csharp_partial_member(int cls, const std::string& name) const {
  const auto& ents = v_.entities();
  const EntityRec& c = ents[cls];
  if (c.parent_index >= 0) return -1;
  build_tables();
  auto it = csharp_types_.find(v_.files()[c.file].module + '\x1f' + c.name);
  if (it == csharp_types_.end()) return -1;
  for (int other : it->second) {
    if (other == cls) continue;
    const FileRec& fr = v_.files()[ents[other].file];
    for (int i = other + 1; i < fr.first_entity + fr.n_entities && ents[i].start_line <= ents[other].end_line; ++i)
      if (ents[i].parent_index == other && ents[i].name == name) return i;
  }
  return -1;
}

int SymbolGraph::package_type(const std::string& pkg, const std::string& name) const {
  if (pkg.empty()) return -1;
  build_tables();
  auto it = namespace_types_.find(pkg + '\x1f' + name);
  return it == namespace_types_.end() ? -1 : it->second;
}

Resolution SymbolGraph::import_target(int file, const Import& im) const {
  Resolution r;
  if (im.star) return r;
  if (im.name.empty()) {
    Value v = module_value(import_module(file, im));
    if (v.kind == Value::Kind::module) {
      r.kind = Resolution::Kind::module;
      r.file = v.file;
    } else if (v.kind == Value::Kind::external) {
      r.kind = Resolution::Kind::external;
    }
    return r;
  }
  std::string target = import_module(file, im);
  if (target.empty()) return r;
  if (declares_namespace(file)) {
    if (int c = package_type(target, im.name); c >= 0) {
      r.kind = Resolution::Kind::entity;
      r.entity = c;
      return r;
    }
    // `import static p.C.m` / `import p.C.Inner`: a member of the type C of package p.
    size_t dot = target.rfind('.');
    if (dot != std::string::npos)
      if (int c = package_type(target.substr(0, dot), target.substr(dot + 1)); c >= 0) {
        if (auto m = class_member(c, im.name)) {
          r.kind = Resolution::Kind::entity;
          r.entity = *m;
        }
        return r;
      }
    if (v_.files_in_module(target).empty()) r.kind = Resolution::Kind::external;
    return r;
  }
  Value mod = module_value(target);
  if (mod.kind == Value::Kind::module) {
    Resolution inner = module_member(mod.file, im.name);
    if (inner.kind != Resolution::Kind::none) return inner;
    if (im.name == kModuleExports && is_javascript(file)) {
      r.kind = Resolution::Kind::module;
      r.file = mod.file;
      return r;
    }
  }
  Value sub = module_value(target + "." + im.name);
  if (sub.kind == Value::Kind::module) {
    r.kind = Resolution::Kind::module;
    r.file = sub.file;
  } else if (mod.kind == Value::Kind::external) {
    r.kind = Resolution::Kind::external;
  }
  return r;
}

std::vector<int> SymbolGraph::import_files(int file, const Import& im) const {
  std::vector<int> out;
  std::string target = import_module(file, im);
  if (target.empty()) return out;
  if (is_go(file)) return v_.files_in_module(target);  // a Go import loads every file of the package's folder
  if (is_c(file)) {                                    // an #include reads one header
    if (auto f = v_.file_by_module(target)) out.push_back(*f);
    return out;
  }
  if (is_javascript(file)) {  // a JavaScript module is one file
    if (auto f = v_.file_by_module(target)) out.push_back(*f);
    return out;
  }
  if (is_rust(file)) {  // `use a::b::C` loads module a::b (C's file), or module a::b::C itself
    if (auto f = v_.file_by_module(target)) out.push_back(*f);
    if (!im.name.empty())
      if (auto f = v_.file_by_module(target + "." + im.name)) out.push_back(*f);
    return out;
  }
  if (declares_namespace(file)) {
    // A Java import loads the file of the type it names; a package star import (a C# using), every file of the
    // package; C#'s `using static A.B.C`, the file of C.
    if (im.star && is_csharp(file) && !im.name.empty()) {
      if (int c = package_type(target, im.name); c >= 0) out.push_back(v_.entities()[c].file);
      return out;
    }
    if (im.star) return v_.files_in_module(target);
    Resolution r = import_target(file, im);
    if (r.kind == Resolution::Kind::entity) out.push_back(v_.entities()[r.entity].file);
    return out;
  }
  // Importing a.b.c executes a/__init__, a/b/__init__ and a/b/c.
  std::string prefix;
  for (const auto& part : split_chain(target)) {
    prefix = prefix.empty() ? part : prefix + "." + part;
    if (auto f = v_.file_by_module(prefix)) out.push_back(*f);
  }
  if (!im.name.empty()) {
    if (auto f = v_.file_by_module(target + "." + im.name)) out.push_back(*f);
  }
  if (im.star) {
    // `from pkg import *` also loads the submodules listed in pkg.__all__; they are reached through
    // pkg/__init__'s own imports in practice.
  }
  return out;
}

std::vector<int> SymbolGraph::imported_files(int file, const HiddenBody* hidden) const {
  std::vector<int> out;
  const FileRec& f = v_.files()[file];
  for (const Import& im : v_.imports(file)) {
    if (hidden && hidden->file == file && im.scope >= 0 && v_.is_within(f.first_entity + im.scope, hidden->entity))
      continue;
    for (int g : import_files(file, im))
      if (g != file) out.push_back(g);
  }
  std::sort(out.begin(), out.end());
  out.erase(std::unique(out.begin(), out.end()), out.end());
  return out;
}

const std::vector<int>& SymbolGraph::imported_files_unhidden(int file) const {
  std::call_once(imported_once_, [&] {
    std::vector<std::vector<int>> table(v_.files().size());
    for (size_t f = 0; f < table.size(); ++f) table[f] = imported_files(static_cast<int>(f));
    imported_ = std::move(table);
  });
  return imported_[static_cast<size_t>(file)];
}

std::vector<int> SymbolGraph::accessible_files(int file, const HiddenBody* hidden) const {
  // A hidden body holding none of the file's imports changes nothing: the closure of the file is cached.
  bool hides_imports = false;
  if (hidden && hidden->file == file) {
    const FileRec& f = v_.files()[file];
    for (const Import& im : v_.imports(file))
      if (im.scope >= 0 && v_.is_within(f.first_entity + im.scope, hidden->entity)) {
        hides_imports = true;
        break;
      }
  }
  if (!hides_imports) {
    {
      std::lock_guard lk(mu_);
      auto it = closure_cache_.find(file);
      if (it != closure_cache_.end()) return it->second;
    }
    std::vector<int> order = accessible_files_walk(file, nullptr);
    std::lock_guard lk(mu_);
    return closure_cache_.emplace(file, std::move(order)).first->second;
  }
  return accessible_files_walk(file, hidden);
}

std::vector<int> SymbolGraph::accessible_files_walk(int file, const HiddenBody* hidden) const {
  std::vector<int> order{file};
  std::unordered_set<int> seen{file};
  std::deque<int> q{file};
  std::vector<int> start_hidden;  // the start file's imports without the ones inside the hidden body
  while (!q.empty()) {
    int cur = q.front();
    q.pop_front();
    const std::vector<int>* next = &start_hidden;
    if (cur == file && hidden && hidden->file == file)
      start_hidden = imported_files(cur, hidden);
    else
      next = &imported_files_unhidden(cur);
    for (int g : *next) {
      if (seen.insert(g).second) {
        order.push_back(g);
        q.push_back(g);
      }
    }
  }
  return order;
}

}  // namespace repoctx
