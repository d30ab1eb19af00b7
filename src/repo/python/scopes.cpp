#include "repo/python/scopes.h"

#include <algorithm>

namespace repoctx::py {

ScopeTable::ScopeTable() {
  scopes_.emplace_back().type = ScopeType::module;
}

Scope& ScopeTable::open(ScopeType type, int entity, Scope* parent, std::string prefix) {
  Scope& sc = scopes_.emplace_back();
  sc.type = type;
  sc.entity = entity;
  sc.parent = parent;
  sc.prefix = std::move(prefix);
  return sc;
}

void ScopeTable::bind(Scope& sc, std::string_view name) {
  if (sc.type != ScopeType::function) return;
  sc.locals.emplace(name);
  ++sc.bind_events[std::string(name)];
}

// Is `name` bound locally in this function or an enclosing function (closure)?
bool ScopeTable::is_local(const Scope& sc, const std::string& name) {
  for (const Scope* s = &sc; s; s = s->parent) {
    if (s->type != ScopeType::function) continue;
    if (s->globals.count(name)) return false;
    if (s->locals.count(name)) return true;
  }
  return false;
}

// Every binding of `name` in this function is `name = C(...)` with one and the same C.
bool ScopeTable::typed_local(const Scope& sc, const std::string& name) {
  auto it = sc.ctor_binds.find(name);
  if (it == sc.ctor_binds.end() || sc.globals.count(name) || sc.rebound_elsewhere.count(name)) return false;
  auto ev = sc.bind_events.find(name);
  if (ev == sc.bind_events.end() || ev->second != static_cast<int>(it->second.size())) return false;
  for (const auto& b : it->second)
    if (b.first != it->second.front().first) return false;
  return true;
}

bool ScopeTable::is_receiver(const Scope& sc, const std::string& name) {
  for (const Scope* s = &sc; s; s = s->parent) {
    if (s->type != ScopeType::function) continue;
    if (!s->receiver.empty() && s->receiver == name) return true;
    if (s->locals.count(name)) return false;  // rebound by an inner function
  }
  return false;
}

void ScopeTable::finish(ParsedFile& out) const {
  size_t keep = 0;
  for (size_t i = 0; i < out.references.size(); ++i) {
    const Scope& sc = *ref_scope_[i];
    const std::string& chain = out.references[i].chain;
    std::string root = chain.substr(0, chain.find('.'));
    // Names bound locally (in this function or an enclosing one, Python's closure rule) are not
    // repository symbols, except the method receiver (self/cls), which the resolver maps to the class.
    if (root != "super()" && is_local(sc, root) && !is_receiver(sc, root)) {
      if (sc.type == ScopeType::function && chain.size() > root.size() && typed_local(sc, root))
        out.local_references.push_back(std::move(out.references[i]));
      continue;
    }
    if (keep != i) out.references[keep] = std::move(out.references[i]);
    ++keep;
  }
  out.references.resize(keep);
  for (const Scope& sc : scopes_) {
    if (sc.type != ScopeType::function) continue;
    ScopeInfo info;
    info.entity = sc.entity;
    info.locals.assign(sc.locals.begin(), sc.locals.end());
    std::sort(info.locals.begin(), info.locals.end());
    info.globals.assign(sc.globals.begin(), sc.globals.end());
    std::sort(info.globals.begin(), info.globals.end());
    for (const auto& [name, binds] : sc.ctor_binds)
      if (typed_local(sc, name)) info.typed_locals.push_back({name, binds.front().first, binds.front().second});
    std::sort(info.typed_locals.begin(), info.typed_locals.end(),
              [](const TypedLocal& a, const TypedLocal& b) { return a.name < b.name; });
    out.scopes.push_back(std::move(info));
  }
}

}  // namespace repoctx::py
