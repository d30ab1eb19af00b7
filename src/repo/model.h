// The repository model: what one source file defines, imports and references, as extracted by tree-sitter.
// Everything here is per file and depends only on that file's bytes, so the index can re-parse one file
// without touching the others; cross-file resolution happens later (index/symbol_graph.h).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace repoctx {

enum class Language {
  python,
  java,
  unknown,
  go,
  javascript,
  typescript,
  rust,
  c,
  cpp,
  csharp
};  // values are stored in query images: append only
const char* language_name(Language l);
Language language_from_name(std::string_view name);  // inverse of language_name; unknown otherwise
Language language_from_path(const std::string& path);
// The line-comment marker of a language ("#" for Python, "//" for C, Java, Go, JavaScript and Rust).
inline const char* line_comment(Language l) {
  return l == Language::python ? "#" : "//";
}
// Whether a file's module is named by its path (Python's packages, Go's folders and go.mod) rather than by a
// declaration inside it (Java's package, C#'s namespace).
inline bool module_follows_path(Language l) {
  return l != Language::java && l != Language::csharp;
}
// Java and C#: a file's module is the package or namespace it declares, shared by many files, whose types
// every file of it sees without an import.
inline bool module_is_declared_namespace(Language l) {
  return l == Language::java || l == Language::csharp;
}
// C and C++ share one module system (#include) and one extractor (tree-sitter-cpp extends tree-sitter-c).
inline bool is_c_family(Language l) {
  return l == Language::c || l == Language::cpp;
}
// JavaScript and TypeScript share one extractor and one module system (a module is a file).
inline bool is_javascript_family(Language l) {
  return l == Language::javascript || l == Language::typescript;
}
// A test file by the usual conventions: under tests/, test/ or testing/, named test_*.py, *_test.py,
// conftest.py, *_test.go, *.test.js / *.spec.ts (and __tests__/) (Java's src/test/ included; Rust's tests/
// and benches/ folders by the first rule).
bool is_test_path(const std::string& path);

enum class EntityKind {
  // Python (the contract tests/oracle/ast_entities.py checks against Python's ast)
  klass,      // "class"
  function,   // "function": module-level or nested def
  method,     // "method": def directly in a class body
  variable,   // "variable": module-level assignment target
  attribute,  // "attribute": class-level assignment target
  // Java
  interface,    // "interface" (also @interface, enum and record map to class/interface)
  field,        // "field"
  constructor,  // "constructor"
};
const char* kind_name(EntityKind k);
std::optional<EntityKind> kind_from_name(const std::string& s);
inline bool is_callable(EntityKind k) {
  return k == EntityKind::function || k == EntityKind::method || k == EntityKind::constructor;
}
inline bool is_type(EntityKind k) {
  return k == EntityKind::klass || k == EntityKind::interface;
}

struct Parameter {
  std::string name;
  enum Kind : uint8_t { positional_only, positional, var_positional, keyword_only, var_keyword } kind = positional;
  bool has_default = false;
  std::string annotation;  // source text, empty if none
};

struct Entity {
  std::string name;
  std::string qualname;  // Python __qualname__ style: "C.m", "f.<locals>.g"; Java: "Outer.Inner.m"
  EntityKind kind = EntityKind::function;
  int parent = -1;  // index of the enclosing entity in ParsedFile::entities, -1 = module

  // Lines are 1-based and inclusive, with Python ast's convention: start = the def/class keyword line,
  // end = the last line of the last statement.
  int start_line = 0, end_line = 0;
  int decorated_start_line = 0;                // first decorator line (== start_line when undecorated)
  int header_end_line = 0;                     // line of the ':' that ends the header
  int doc_start_line = 0, doc_end_line = 0;    // docstring statement (0 when none)
  int body_start_line = 0, body_end_line = 0;  // statements after the docstring (0 when none)
  uint32_t start_byte = 0, end_byte = 0;       // [decorated start, end)
  uint32_t body_start_byte = 0;                // first byte of the first statement after the docstring

  std::string signature;                // header text "def f(a, b=1) -> int:" with whitespace collapsed
  std::string docstring;                // cleaned like inspect.cleandoc
  std::vector<std::string> decorators;  // decorator expressions without '@'
  std::vector<std::string> bases;       // class bases / Java extends+implements / a Rust impl method's trait
  std::vector<Parameter> params;        // callables only
  bool is_async = false;
};

struct Import {
  int line = 0;
  int scope = -1;            // enclosing entity index (-1 = module level)
  std::string module;        // "a.b" for `import a.b` / `from a.b import x`; "" for `from . import x`
  int level = 0;             // number of leading dots of a relative import
  std::string name;          // imported name for `from m import name`; empty for `import m`
  std::string alias;         // `as` alias, empty if none
  bool star = false;         // `from m import *`
  bool conditional = false;  // inside try/if at module level (e.g. optional dependencies)
  // The local name this import binds: alias, else name, else the first component of module.
  std::string bound_name() const;
};

enum class RefKind : uint8_t { name = 0, attribute = 1, call = 2 };

// A name, attribute chain or call inside a body, before resolution. The chain is the maximal dotted
// path rooted at a plain name ("self.x.y", "np.linalg.norm"); `super().m` is recorded as "super().m".
struct Reference {
  int scope = -1;  // innermost enclosing entity (function, method, class); -1 = module level
  std::string chain;
  RefKind kind = RefKind::name;
  int line = 0;
  int nargs = -1;                   // calls: positional argument count (-1 when *args/**kw make it unknown)
  std::vector<std::string> kwargs;  // calls: keyword argument names
  bool is_store = false;            // assignment target (self.x = ...)
};

// Names bound locally in a function scope (parameters, assignment targets, ...): a reference to such a
// name is not a reference to a module-level definition (Python's scoping rule).
// A local whose every binding in its function is `name = chain(...)` with the same callee: when the callee
// is a class, the local is an instance of it (static check (3), receiver-type inference).
struct TypedLocal {
  std::string name;
  std::string constructor;  // the callee chain as written ("Foo", "mod.Foo")
  int line = 0;             // first binding
};

struct ScopeInfo {
  int entity = -1;
  std::vector<std::string> locals;
  std::vector<TypedLocal> typed_locals;  // not stored in the index: used on fresh parses of candidate code
  std::vector<std::string> globals;      // `global x`
  std::vector<std::string> nonlocals;    // `nonlocal x`
};

struct ParseError {
  int start_line = 0, end_line = 0;
  std::string message;
  // Not a syntax error: a region the extractor did not analyse because it nests deeper than its limits
  // (kMaxSyntaxDepth, kMaxBlockNesting in repo/parser.h); the file is indexed as far as that depth.
  bool partial = false;
};

struct ParsedFile {
  std::string path;    // relative to the repository root, '/' separators
  std::string module;  // dotted module name ("pkg.sub.mod"; "pkg" for pkg/__init__.py)
  Language language = Language::unknown;
  std::string package;  // Java package
  std::vector<Entity> entities;
  std::vector<Import> imports;
  std::vector<Reference> references;
  std::vector<ScopeInfo> scopes;
  // References rooted at a typed local (`x.m()` after `x = Foo()`), kept apart from `references` because
  // the resolver must not mistake the local for a module-level name. Not stored in the index.
  std::vector<Reference> local_references;
  std::vector<ParseError> errors;  // regions tree-sitter could not parse; entities elsewhere are kept
  // Why part of the file was not analysed (nesting beyond the extractor's limits); empty when all was.
  std::string partial_reason() const;
  int line_count = 0;
};

// The "hidden body" form of a file for a target entity: every line of the statements after the docstring
// is replaced so that line numbers, the blank-line structure and the entity's end line stay identical
// while no token of the body remains (non-blank lines become "#", the last line "..."). Retrieval for a
// target must answer exactly as it would on a copy of the repository holding this text.
std::string mask_body(const std::string& source, const Entity& e);

}  // namespace repoctx
