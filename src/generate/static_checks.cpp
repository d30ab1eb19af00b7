#include "generate/static_checks.h"

#include <chrono>
#include <map>
#include <mutex>
#include <set>

#include <fmt/format.h>

#include "repo/parser.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;

json StaticFinding::to_json() const { return {{"check", check}, {"line", line}, {"message", message}}; }

namespace {

// Arity of a call against a parameter list; "" when the call is acceptable. `skip_first` drops the bound
// receiver (self/cls).
std::string arity_problem(const std::vector<Parameter>& params, bool skip_first, const Reference& call) {
  std::vector<const Parameter*> ps;
  for (size_t i = skip_first ? 1 : 0; i < params.size(); ++i) ps.push_back(&params[i]);
  bool var_pos = false, var_kw = false;
  int max_pos = 0;
  for (const auto* p : ps) {
    if (p->kind == Parameter::var_positional) var_pos = true;
    else if (p->kind == Parameter::var_keyword) var_kw = true;
    else if (p->kind == Parameter::positional_only || p->kind == Parameter::positional) ++max_pos;
  }
  if (call.nargs < 0) return "";  // *args / **kwargs at the call site: the count is unknown
  if (!var_pos && call.nargs > max_pos)
    return fmt::format("takes at most {} positional argument{} but {} {} given", max_pos, max_pos == 1 ? "" : "s",
                       call.nargs, call.nargs == 1 ? "was" : "were");
  std::vector<bool> bound(ps.size(), false);
  int pos = 0;
  for (size_t i = 0; i < ps.size() && pos < call.nargs; ++i)
    if (ps[i]->kind == Parameter::positional_only || ps[i]->kind == Parameter::positional) {
      bound[i] = true;
      ++pos;
    }
  for (const auto& kw : call.kwargs) {
    bool found = false;
    for (size_t i = 0; i < ps.size(); ++i)
      if (ps[i]->name == kw && (ps[i]->kind == Parameter::positional || ps[i]->kind == Parameter::keyword_only)) {
        if (bound[i]) return fmt::format("got multiple values for argument '{}'", kw);
        bound[i] = true;
        found = true;
      }
    if (!found && !var_kw) return fmt::format("got an unexpected keyword argument '{}'", kw);
  }
  for (size_t i = 0; i < ps.size(); ++i) {
    const auto* p = ps[i];
    if (bound[i] || p->has_default || p->kind == Parameter::var_positional || p->kind == Parameter::var_keyword) continue;
    return fmt::format("missing required argument '{}'", p->name);
  }
  return "";
}

std::string params_text(const EntityRec& f) { return f.signature; }

// Decorators other than these may change a signature (functools.wraps, click, overloads...).
bool signature_is_plain(const EntityRec& f, bool* skip_first, bool is_method) {
  *skip_first = is_method;
  for (const auto& d : f.decorators) {
    if (d == "staticmethod") *skip_first = false;
    else if (d == "classmethod") *skip_first = true;
    else return false;
  }
  return true;
}

// Is the whole hierarchy of `cls` inside the repository (no unknown base, no metaclass, no dynamic
// attribute hooks)? Only then can a missing member be certain.
bool hierarchy_is_closed(const Engine& e, int cls) {
  const auto& g = e.graph();
  const auto& ents = e.view().entities();
  auto mro = g.mro(cls);
  for (int c : mro) {
    const auto& ce = ents[c];
    if (!ce.decorators.empty()) return false;
    for (const auto& b : ce.bases) {
      if (b == "object") continue;
      if (b.find('=') != std::string::npos) return false;  // metaclass=..., keyword arguments
      auto r = g.resolve(ce.file, ce.parent_index, b);
      if (r.kind != Resolution::Kind::entity || !is_type(ents[r.entity].kind)) return false;
      if (std::find(mro.begin(), mro.end(), r.entity) == mro.end()) return false;
    }
    for (const char* hook : {"__getattr__", "__getattribute__", "__slots__", "__dict__"})
      if (g.class_member(c, hook)) return false;
  }
  return true;
}

// Names assigned on instances anywhere in the classes of the hierarchy (self.x = ...), plus class-level
// names (members). A missing method must be none of them.
bool instance_attribute_exists(const Engine& e, int cls, const std::string& name) {
  const auto& g = e.graph();
  const auto& ents = e.view().entities();
  for (int c : g.mro(cls)) {
    const auto& ce = ents[c];
    // Assignments the reference list may not mark as stores (x.name = ..., setattr(x, "name", ...)).
    const std::string& src = e.view().content(ce.file);
    if (src.find("." + name + " =") != std::string::npos || src.find("\"" + name + "\"") != std::string::npos ||
        src.find("'" + name + "'") != std::string::npos)
      return true;
    for (const auto& r : e.view().references(ce.file)) {
      if (r.line < ce.start_line || r.line > ce.end_line) continue;
      if (r.is_store && r.chain.size() > name.size() && r.chain.compare(r.chain.size() - name.size() - 1, std::string::npos, "." + name) == 0)
        return true;  // self.x = ..., obj.x = ... (obj built in __new__), cls.x = ...
      if (r.chain == "setattr" || r.chain == "self.__dict__" || r.chain == "vars") return true;  // dynamic
    }
  }
  return false;
}

// Attribute names assigned anywhere in the repository (x.name = ..., tuple targets): subclasses and helpers
// set fields their bases read (astropy's Kernel subclasses set `_default_size` for Kernel1D.__init__).
bool stored_anywhere(const Engine& e, const std::string& name) {
  static std::mutex mu;
  static std::map<const Engine*, std::set<std::string>> by_engine;
  std::lock_guard<std::mutex> lock(mu);
  auto it = by_engine.find(&e);
  if (it == by_engine.end()) {
    std::set<std::string> names;
    for (size_t f = 0; f < e.view().files().size(); ++f)
      for (const auto& r : e.view().references(static_cast<int>(f)))
        if (r.is_store) {
          auto d = r.chain.rfind('.');
          if (d != std::string::npos) names.insert(r.chain.substr(d + 1));
        }
    it = by_engine.emplace(&e, std::move(names)).first;
  }
  return it->second.count(name) > 0;
}

}  // namespace

std::vector<StaticFinding> check_function(const Engine& e, int target, const std::string& file_text) {
  const auto& ents = e.view().entities();
  const auto& te = ents[target];
  const auto& fr = e.view().files()[te.file];
  // The last parse is kept: the false-alarm sweep checks every function of a file against one text.
  thread_local SourceParser parser;
  thread_local std::string last_text;
  thread_local ParsedFile pf;
  if (file_text.size() != last_text.size() || file_text != last_text || pf.path != fr.path) {
    pf = parser.parse(fr.path, fr.module, file_text, Language::python);
    last_text = file_text;
  }
  std::vector<StaticFinding> out;
  // The target as it reads in the new text: same qualname, the definition starting at the same line.
  int ti = -1;
  for (size_t i = 0; i < pf.entities.size(); ++i)
    if (pf.entities[i].qualname == te.qualname && pf.entities[i].start_line == te.start_line) ti = static_cast<int>(i);
  for (const auto& er : pf.errors) {
    int line = er.start_line;
    if (ti < 0 || (line >= pf.entities[ti].start_line && line <= pf.entities[ti].end_line))
      out.push_back({"syntax", line, fmt::format("syntax error at line {}: the code does not parse", line)});
  }
  if (ti < 0) {
    if (out.empty()) out.push_back({"syntax", te.start_line, "the function `" + te.qualname + "` is no longer defined at line " +
                                                                 std::to_string(te.start_line)});
    return out;
  }
  if (!out.empty()) return out;  // names of code that does not parse are not worth checking
  const auto& ne = pf.entities[ti];
  const auto& g = e.graph();
  int cls = te.kind == EntityKind::method && te.parent_index >= 0 && is_type(ents[te.parent_index].kind) ? te.parent_index : -1;
  // Names bound in the function or around it that the reference list may still show as free: imports
  // inside the function, and parameters of the target and of enclosing functions.
  std::set<std::string> bound;
  for (const auto& im : pf.imports)
    if (im.scope >= 0 && (im.scope == ti || (pf.entities[im.scope].start_line >= ne.start_line &&
                                             pf.entities[im.scope].end_line <= ne.end_line)))
      bound.insert(im.bound_name());
  for (int p = ti; p >= 0; p = pf.entities[p].parent)
    for (const auto& prm : pf.entities[p].params) bound.insert(prm.name);
  // Tests that expect exceptions (raises(TypeError, lambda: f()), pytest.raises) call wrongly on purpose.
  bool expects_errors = false, catches_name_error = false;
  for (const auto& d : te.decorators)  // tests marked as expected to fail or skipped
    if (d.find("XFAIL") != std::string::npos || d.find("xfail") != std::string::npos || d.find("skip") != std::string::npos)
      expects_errors = true;
  {
    auto starts = line_starts(file_text);
    std::string_view body = line_range(file_text, starts, ne.body_start_line > 0 ? ne.body_start_line : ne.start_line, ne.end_line);
    expects_errors = body.find("raises") != std::string_view::npos || body.find("assertRaises") != std::string_view::npos;
    catches_name_error = body.find("NameError") != std::string_view::npos;  // try: get_ipython() except NameError
  }
  bool file_has_star = false;
  for (const auto& im : e.view().imports(te.file))
    if (im.name == "*") file_has_star = true;
  // Names the candidate text itself assigns as attributes anywhere (self.x = ... in the new body, in other
  // methods, tuple targets): a read of such a field is never reported.
  std::set<std::string> stored_fields;
  for (const auto& r : pf.references)
    if (r.is_store) {
      auto d = r.chain.rfind('.');
      if (d != std::string::npos) stored_fields.insert(r.chain.substr(d + 1));
    }
  std::set<std::string> reported_fields;
  for (const auto& r : pf.references) {
    if (r.kind == RefKind::attribute && !r.is_store && cls >= 0 && r.scope == ti && !expects_errors &&
        r.line >= ne.body_start_line && r.line <= ne.end_line && r.chain.rfind("self.", 0) == 0 &&
        !te.params.empty() && te.params[0].name == "self") {
      // (2) a field read on self: it must be defined in the class hierarchy (member, property, or an
      // attribute some method of the hierarchy assigns).
      std::string rest = r.chain.substr(5);
      std::string field = rest.substr(0, rest.find('.'));
      if (field.empty() || (field.size() > 4 && field.rfind("__", 0) == 0) || reported_fields.count(field) ||
          stored_fields.count(field) || g.class_member(cls, field))
        continue;
      // `_x` behind a member `x`: a descriptor or property stores it (astropy's Parameter, MetaData).
      {
        size_t u = field.find_first_not_of('_');
        if (u != 0 && u != std::string::npos && g.class_member(cls, field.substr(u))) continue;
      }
      bool defined_somewhere = false;
      for (int x : e.view().entities_named(field))
        if (ents[x].parent_index >= 0 && is_type(ents[ents[x].parent_index].kind)) defined_somewhere = true;
      const std::string& cn = ents[cls].name;
      if (defined_somewhere || stored_anywhere(e, field) || cn.find("Mixin") != std::string::npos || cn.find("Base") != std::string::npos ||
          cn.find("Abstract") != std::string::npos || !hierarchy_is_closed(e, cls) || instance_attribute_exists(e, cls, field) ||
          file_text.find("." + field + " =") != std::string::npos || file_text.find("\"" + field + "\"") != std::string::npos ||
          file_text.find("'" + field + "'") != std::string::npos)
        continue;
      reported_fields.insert(field);
      out.push_back({"field_access", r.line, fmt::format("`self.{}`: class `{}` and its bases define no attribute `{}` "
                                                         "(no member, and no method assigns it)", field, ents[cls].qualname, field)});
      continue;
    }
    if (r.kind != RefKind::call || r.line < ne.body_start_line || r.line > ne.end_line) continue;
    if (r.scope != ti) continue;  // nested functions have scopes of their own
    if (expects_errors) continue;
    auto dot = r.chain.find('.');
    if (bound.count(r.chain.substr(0, dot))) {
      if (dot == std::string::npos) continue;
    }
    if (dot == std::string::npos) {
      // (4) a standalone function call.
      auto res = g.resolve(te.file, te.parent_index >= 0 && cls < 0 ? te.parent_index : -1, r.chain);
      if (res.kind == Resolution::Kind::none) {
        if (SymbolGraph::is_builtin(r.chain) || file_has_star || catches_name_error || g.top_level(te.file, r.chain) >= 0) continue;
        bool imported = false;  // bound by an import the resolver could not follow (dynamic modules)
        for (const auto& im : e.view().imports(te.file))
          if (im.bound_name() == r.chain) imported = true;
        if (imported) continue;
        // Defined nowhere the scope can see: not local (the parser excluded locals), not in the module,
        // not imported, not a builtin.
        bool defined_elsewhere_in_scope = false;
        for (int p = te.parent_index; p >= 0; p = ents[p].parent_index)
          if (is_callable(ents[p].kind)) defined_elsewhere_in_scope = true;  // closures: enclosing locals unknown here
        if (defined_elsewhere_in_scope) continue;
        out.push_back({"function_call", r.line, fmt::format("`{}` is not defined: no function, class or import of that name "
                                                            "is visible from `{}`", r.chain, te.qualname)});
        continue;
      }
      if (res.kind != Resolution::Kind::entity) continue;
      const auto& f = ents[res.entity];
      if (!is_callable(f.kind) || f.kind == EntityKind::method) continue;
      // A name defined more than once in its module (conditional definitions, redefinitions) has no
      // single signature.
      if (e.view().find_entities(f.file, f.qualname).size() > 1) continue;
      bool skip = false;
      if (!signature_is_plain(f, &skip, false)) continue;
      auto why = arity_problem(f.params, false, r);
      if (!why.empty())
        out.push_back({"function_call", r.line, fmt::format("`{}()` {} (signature: `{}`)", r.chain, why, params_text(f))});
      continue;
    }
    // (1) self.m(...) / cls.m(...) on the enclosing class.
    std::string recv = r.chain.substr(0, dot), name = r.chain.substr(dot + 1);
    if (cls < 0 || (recv != "self" && recv != "cls") || name.find('.') != std::string::npos) continue;
    if (name.size() > 4 && name.substr(0, 2) == "__" && name.substr(name.size() - 2) == "__") continue;  // object's own
    if (te.params.empty() || te.params[0].name != recv) continue;  // self/cls must be the receiver parameter
    auto m = g.class_member(cls, name);
    if (!m) {
      // Mixins and abstract bases call methods their subclasses define: a missing method is certain only
      // when no class of the repository defines that name at all.
      bool defined_somewhere = false;
      for (int x : e.view().entities_named(name))
        if (ents[x].parent_index >= 0 && is_type(ents[ents[x].parent_index].kind)) defined_somewhere = true;
      if (defined_somewhere) continue;
      // Mixins and abstract bases expect their users' subclasses to provide members.
      const std::string& cn = ents[cls].name;
      if (cn.find("Mixin") != std::string::npos || cn.find("Base") != std::string::npos ||
          cn.find("Abstract") != std::string::npos)
        continue;
      if (!hierarchy_is_closed(e, cls) || instance_attribute_exists(e, cls, name)) continue;
      out.push_back({"method_call", r.line, fmt::format("`{}.{}()`: class `{}` and its bases define no attribute `{}`", recv, name,
                                                        ents[cls].qualname, name)});
      continue;
    }
    const auto& f = ents[*m];
    if (!is_callable(f.kind)) continue;
    bool skip_first = true;
    if (!signature_is_plain(f, &skip_first, true)) continue;
    if (instance_attribute_exists(e, cls, name)) continue;  // an instance attribute may shadow the method
    auto why = arity_problem(f.params, skip_first, r);
    if (!why.empty())
      out.push_back({"method_call", r.line, fmt::format("`{}()` {} (signature: `{}`)", r.chain, why, params_text(f))});
  }
  return out;
}

FalseAlarmReport check_all_real_bodies(const Engine& e, int max_functions) {
  auto t0 = std::chrono::steady_clock::now();
  FalseAlarmReport rep;
  const auto& ents = e.view().entities();
  for (size_t fi = 0; fi < e.view().files().size(); ++fi) {
    const auto& fr = e.view().files()[fi];
    if (fr.path.size() < 3 || fr.path.substr(fr.path.size() - 3) != ".py") continue;
    bool any = false;
    for (int i = fr.first_entity; i < fr.first_entity + fr.n_entities; ++i) {
      if (!is_callable(ents[i].kind) || ents[i].body_start_line <= 0) continue;
      if (max_functions > 0 && rep.functions >= max_functions) break;
      any = true;
      ++rep.functions;
      for (auto& f : check_function(e, i, e.view().content(static_cast<int>(fi))))
        rep.findings.emplace_back(fr.path + "::" + ents[i].qualname, std::move(f));
    }
    if (any) ++rep.files;
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

DetectionReport injected_error_detection(const Engine& e, int stride) {
  auto t0 = std::chrono::steady_clock::now();
  DetectionReport rep;
  const auto& ents = e.view().entities();
  int seen = 0;
  for (size_t fi = 0; fi < e.view().files().size(); ++fi) {
    const auto& fr = e.view().files()[fi];
    if (fr.path.size() < 3 || fr.path.substr(fr.path.size() - 3) != ".py") continue;
    const std::string& src = e.view().content(static_cast<int>(fi));
    auto starts = line_starts(src);
    // A plain module-level function of this file to call with one argument too many.
    int callee = -1;
    for (int i = fr.first_entity; i < fr.first_entity + fr.n_entities && callee < 0; ++i) {
      const auto& c = ents[i];
      if (c.kind != EntityKind::function || c.parent_index >= 0 || !c.decorators.empty()) continue;
      bool plain = e.view().find_entities(c.file, c.qualname).size() == 1;
      for (const auto& p : c.params)
        if (p.kind == Parameter::var_positional) plain = false;
      if (plain) callee = i;
    }
    for (int i = fr.first_entity; i < fr.first_entity + fr.n_entities; ++i) {
      const auto& en = ents[i];
      if (!is_callable(en.kind) || en.body_start_line <= 0) continue;
      if (seen++ % stride) continue;
      size_t at = starts[static_cast<size_t>(en.body_start_line - 1)];
      size_t indent = 0;
      while (at + indent < src.size() && src[at + indent] == ' ') ++indent;
      auto with = [&](const std::string& line) { return src.substr(0, at) + std::string(indent, ' ') + line + "\n" + src.substr(at); };
      auto count = [&](const std::string& kind, const std::string& check, const std::string& line) {
        auto fs = check_function(e, i, with(line));
        auto& [caught, total] = rep.by_kind[kind];
        ++total;
        for (const auto& f : fs)
          if (f.check == check) {
            ++caught;
            break;
          }
      };
      bool method = en.kind == EntityKind::method && !en.params.empty() && en.params[0].name == "self";
      if (method) count("missing_method", "method_call", "self.zq_no_such_method_7()");
      if (method) count("undefined_field", "field_access", "zq_value = self.zq_no_such_field_7");
      if (callee >= 0 && callee != i) {
        int max_pos = 0;
        for (const auto& p : ents[callee].params)
          if (p.kind == Parameter::positional || p.kind == Parameter::positional_only) ++max_pos;
        std::string args;
        for (int k = 0; k <= max_pos; ++k) args += (k ? ", " : "") + std::string("None");
        count("wrong_arity", "function_call", ents[callee].name + "(" + args + ")");
      }
      count("undefined_function", "function_call", "zq_undefined_function_7()");
      count("syntax", "syntax", "zq_value = (1 +");
    }
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace repoctx
