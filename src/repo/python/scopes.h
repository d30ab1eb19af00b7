// Python's scoping rules for the extractor: one Scope per module, class and function body, the names each
// binds, and, once the whole file is walked, which recorded references are to locals (Python decides
// that from the whole function, later assignments included).
#pragma once

#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include "repo/model.h"

namespace repoctx::py {

enum class ScopeType { module, klass, function };

struct Scope {
  ScopeType type = ScopeType::module;
  int entity = -1;                         // entity index, -1 for the module
  std::string prefix;                      // qualname prefix for definitions inside this scope
  std::unordered_set<std::string> locals;  // function scopes: locally bound names
  std::unordered_set<std::string> globals;
  // Receiver-type inference (static check (3)): every binding of a name, and those of the form
  // `name = Chain(...)` (chain, line). A name is typed only when the two agree.
  std::unordered_map<std::string, int> bind_events;
  std::unordered_map<std::string, std::vector<std::pair<std::string, int>>> ctor_binds;
  std::unordered_set<std::string> rebound_elsewhere;  // `nonlocal x` in a nested function
  std::string receiver;                               // methods: name of the first parameter (self/cls), unless static
  Scope* parent = nullptr;
};

class ScopeTable {
 public:
  ScopeTable();
  Scope& module() { return scopes_.front(); }
  // A new scope for a class or function body (stable address: references keep a pointer to it).
  Scope& open(ScopeType type, int entity, Scope* parent, std::string prefix);
  // A binding of `name` in `sc` (only function scopes bind locals).
  static void bind(Scope& sc, std::string_view name);
  // The scope of the reference just appended to the file's references (one call per reference).
  void note_reference(const Scope& sc) { ref_scope_.push_back(&sc); }
  // Moves references to locals out of `out.references` (those to typed locals into local_references)
  // and writes the function scopes' facts into `out.scopes`.
  void finish(ParsedFile& out) const;

 private:
  static bool is_local(const Scope& sc, const std::string& name);
  static bool typed_local(const Scope& sc, const std::string& name);
  static bool is_receiver(const Scope& sc, const std::string& name);
  std::deque<Scope> scopes_;
  std::vector<const Scope*> ref_scope_;
};

}  // namespace repoctx::py
