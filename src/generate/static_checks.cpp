#include "generate/static_checks.h"

#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "generate/external_classes.h"
#include "repo/parser.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;

json StaticFinding::to_json() const {
  return {{"check", check}, {"line", line}, {"message", message}};
}

namespace {

// Arity of a call against a parameter list; "" when the call is acceptable. `skip_first` drops the bound
// receiver (self/cls).
std::string arity_problem(const std::vector<Parameter>& params, bool skip_first, const Reference& call) {
  std::vector<const Parameter*> ps;
  for (size_t i = skip_first ? 1 : 0; i < params.size(); ++i) ps.push_back(&params[i]);
  bool var_pos = false, var_kw = false;
  int max_pos = 0;
  for (const auto* p : ps) {
    if (p->kind == Parameter::var_positional)
      var_pos = true;
    else if (p->kind == Parameter::var_keyword)
      var_kw = true;
    else if (p->kind == Parameter::positional_only || p->kind == Parameter::positional)
      ++max_pos;
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
    if (bound[i] || p->has_default || p->kind == Parameter::var_positional || p->kind == Parameter::var_keyword)
      continue;
    return fmt::format("missing required argument '{}'", p->name);
  }
  return "";
}

std::string params_text(const EntityRec& f) {
  return f.signature;
}

// Decorators other than these may change a signature (functools.wraps, click, overloads...).
bool signature_is_plain(const EntityRec& f, bool* skip_first, bool is_method) {
  *skip_first = is_method;
  for (const auto& d : f.decorators) {
    if (d == "staticmethod")
      *skip_first = false;
    else if (d == "classmethod")
      *skip_first = true;
    else
      return false;
  }
  return true;
}

// The dotted name outside the repository a base expression of `file` denotes ("ABC" after `from abc
// import ABC` -> "abc.ABC", "dict" -> "builtins.dict"), or "" when it is not certain.
std::string external_name(const Engine& e, int file, std::string base) {
  if (auto b = base.find('['); b != std::string::npos) base.resize(b);  // Generic[T]
  std::string root = base.substr(0, base.find('.')), rest = base.substr(root.size());
  const Import* bound = nullptr;
  for (const auto& im : e.view().imports(file))
    if (im.scope < 0 && !im.star && im.bound_name() == root) bound = &im;  // the last binding wins
  if (bound) {
    if (bound->level > 0) return "";
    if (!bound->name.empty()) return bound->module + "." + bound->name + rest;
    if (!bound->alias.empty()) return bound->module + rest;
    return root + rest;  // `import collections.abc` binds `collections`
  }
  if (rest.empty() && e.graph().top_level(file, root) < 0 && SymbolGraph::is_builtin(root)) return "builtins." + root;
  return "";
}

// Is every class of `cls`'s hierarchy inside the repository or a known external base (no unknown base,
// no metaclass other than ABCMeta, no dynamic attribute hooks)? Only then can a missing member be
// certain. The members of the external bases met are collected into `external`.
bool hierarchy_is_closed(const Engine& e, int cls,
                         std::vector<const std::unordered_set<std::string>*>* external = nullptr) {
  const auto& g = e.graph();
  const auto& ents = e.view().entities();
  auto mro = g.mro(cls);
  for (int c : mro) {
    const auto& ce = ents[c];
    for (const auto& d : ce.decorators)
      if (!decorator_is_transparent(d)) return false;
    for (const auto& b : ce.bases) {
      if (b == "metaclass=ABCMeta" || b == "metaclass=abc.ABCMeta") continue;  // adds register() on the class only
      if (b.find('=') != std::string::npos) return false;  // other metaclasses, class keyword arguments
      auto r = g.resolve(ce.file, ce.parent_index, b);
      if (r.kind == Resolution::Kind::entity && is_type(ents[r.entity].kind)) {
        if (std::find(mro.begin(), mro.end(), r.entity) == mro.end()) return false;
        continue;
      }
      std::string dotted = external_name(e, ce.file, b);
      if (dotted.empty()) return false;
      const auto* members = known_base_members(dotted);
      if (!members) members = external_class_members(dotted);
      if (!members) return false;
      if (external) external->push_back(members);
    }
    // __slots__ is not a hook: it restricts instances to the slot names (strings of the class's file,
    // which instance_attribute() treats as assigned, or computed: then "dynamic").
    for (const char* hook : {"__getattr__", "__getattribute__", "__dict__"})
      if (g.class_member(c, hook)) return false;
  }
  return true;
}

// How an attribute may exist on instances of `cls` without being a member: assigned by a method of the
// hierarchy (self.x = ..., obj.x = ... in __new__), named in a string of one of its files, or possibly
// set through setattr / __dict__ / vars with a computed name.
enum class InstanceAttribute { none, assigned, dynamic };
InstanceAttribute instance_attribute(const Engine& e, int cls, const std::string& name) {
  const auto& g = e.graph();
  const auto& ents = e.view().entities();
  bool dynamic = false;
  for (int c : g.mro(cls)) {
    const auto& ce = ents[c];
    // An import in the class body binds a class attribute (email.message.Message: `from email.iterators
    // import walk`).
    int first = e.view().files()[ce.file].first_entity;
    for (const auto& im : e.view().imports(ce.file))
      if (im.scope >= 0 && first + im.scope == c && (im.star || im.bound_name() == name))
        return InstanceAttribute::assigned;
    // Assignments the reference list may not mark as stores (x.name = ..., setattr(x, "name", ...)).
    const std::string& src = e.view().content(ce.file);
    if (src.find("." + name + " =") != std::string::npos || src.find("\"" + name + "\"") != std::string::npos ||
        src.find("'" + name + "'") != std::string::npos)
      return InstanceAttribute::assigned;
    for (const auto& r : e.view().references(ce.file)) {
      if (r.line < ce.start_line || r.line > ce.end_line) continue;
      if (r.is_store && r.chain.size() > name.size() &&
          r.chain.compare(r.chain.size() - name.size() - 1, std::string::npos, "." + name) == 0)
        return InstanceAttribute::assigned;  // self.x = ..., obj.x = ... (obj built in __new__), cls.x = ...
      if (r.chain == "setattr" || r.chain == "vars" || r.chain.find("__dict__") != std::string::npos)
        dynamic = true;  // self.__dict__.update(locals())
    }
    if (g.class_member(c, "__slots__")) dynamic = true;  // slot names may be computed
  }
  return dynamic ? InstanceAttribute::dynamic : InstanceAttribute::none;
}

// Repository-wide facts the checks consult, computed once per engine on first use. One cache for all of
// them, keyed by the engine and a fingerprint of its view, so an engine built later at the same address
// (tests open and close many) never reads another repository's facts.
struct RepoFacts {
  std::once_flag stores_once, words_once, open_once;
  std::set<std::string> stored_names;                // attribute names assigned anywhere (x.name = ...)
  std::unordered_map<std::string, int> word_counts;  // identifier-like words of every file
  std::unordered_set<int> bases_with_open_subclass;  // classes some outside-mixing subclass derives from
};

RepoFacts& repo_facts(const Engine& e) {
  static std::mutex mu;
  static std::map<std::tuple<const Engine*, size_t, size_t, std::string>, std::unique_ptr<RepoFacts>> by_engine;
  const auto& files = e.view().files();
  auto key = std::make_tuple(&e, files.size(), e.view().entities().size(),
                             files.empty() ? std::string() : files.front().hash + files.back().hash);
  std::lock_guard<std::mutex> lock(mu);
  auto& slot = by_engine[key];
  if (!slot) slot = std::make_unique<RepoFacts>();
  return *slot;
}

// Attribute names assigned anywhere in the repository (x.name = ..., tuple targets): subclasses and helpers
// set fields their bases read (astropy's Kernel subclasses set `_default_size` for Kernel1D.__init__).
bool stored_anywhere(const Engine& e, const std::string& name) {
  RepoFacts& f = repo_facts(e);
  std::call_once(f.stores_once, [&] {
    for (size_t fi = 0; fi < e.view().files().size(); ++fi)
      for (const auto& r : e.view().references(static_cast<int>(fi)))
        if (r.is_store) {
          auto d = r.chain.rfind('.');
          if (d != std::string::npos) f.stored_names.insert(r.chain.substr(d + 1));
        }
  });
  return f.stored_names.count(name) > 0;
}

// Identifier-like words of a text and how often each occurs (code, strings and comments alike).
void count_words(std::string_view text, std::unordered_map<std::string, int>& counts) {
  size_t i = 0;
  while (i < text.size()) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if (std::isalpha(c) || c == '_') {
      size_t j = i + 1;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
      ++counts[std::string(text.substr(i, j - i))];
      i = j;
    } else {
      ++i;
    }
  }
}

// Does `name` occur in the repository outside the indexed text of `target`? A name set through setattr
// with a computed key must come from somewhere: a string, a parameter name, a list of fields. A name the
// repository never spells outside the checked function cannot be such a key.
bool spelled_elsewhere(const Engine& e, int target, const std::string& name) {
  RepoFacts& f = repo_facts(e);
  std::call_once(f.words_once, [&] {
    for (size_t fi = 0; fi < e.view().files().size(); ++fi)
      count_words(e.view().content(static_cast<int>(fi)), f.word_counts);
  });
  auto it = f.word_counts.find(name);
  int total = it == f.word_counts.end() ? 0 : it->second;
  if (total == 0) return false;
  const auto& te = e.view().entities()[target];
  const std::string& src = e.view().content(te.file);
  auto starts = line_starts(src);
  std::unordered_map<std::string, int> inside;
  count_words(line_range(src, starts, te.start_line, te.end_line), inside);
  auto w = inside.find(name);
  return total > (w == inside.end() ? 0 : w->second);
}

// Is the attribute `name` certainly missing on instances of `cls`? `target` is the checked function (its
// own indexed text does not count as a use elsewhere); `file_text` the candidate file.
bool attribute_certainly_missing(const Engine& e, int cls, const std::string& name, int target,
                                 const std::string& file_text) {
  const auto& g = e.graph();
  if (g.class_member(cls, name)) return false;
  std::vector<const std::unordered_set<std::string>*> external;
  if (!hierarchy_is_closed(e, cls, &external)) return false;
  for (const auto* m : external)
    if (m->count(name)) return false;
  if (stored_anywhere(e, name)) return false;  // obj.x = ... anywhere (subclasses, helpers, monkeypatching)
  if (file_text.find("." + name + " =") != std::string::npos ||
      file_text.find("\"" + name + "\"") != std::string::npos || file_text.find("'" + name + "'") != std::string::npos)
    return false;
  switch (instance_attribute(e, cls, name)) {
    case InstanceAttribute::assigned:
      return false;
    case InstanceAttribute::dynamic:
      // Computed keys are often a prefix plus a spelled name (setattr(self, "_" + component, v)): every
      // suffix after an underscore must be unspelled too.
      for (size_t at = 0; at != std::string::npos; at = name.find('_', at + 1)) {
        std::string suffix = at == 0 && name[0] != '_' ? name : name.substr(at + (name[at] == '_' ? 1 : 0));
        if (!suffix.empty() && spelled_elsewhere(e, target, suffix)) return false;
      }
      return !spelled_elsewhere(e, target, name);
    case InstanceAttribute::none:
      return true;
  }
  return false;
}

// Does some repository class derive from `cls` through a hierarchy that leaves the repository (a mixin
// combined with an outside base)? Computed once per engine for every class.
bool has_open_subclass(const Engine& e, int cls) {
  RepoFacts& f = repo_facts(e);
  std::call_once(f.open_once, [&] {
    const auto& ents = e.view().entities();
    for (size_t c = 0; c < ents.size(); ++c) {
      if (!is_type(ents[c].kind) || ents[c].bases.empty() || hierarchy_is_closed(e, static_cast<int>(c), nullptr))
        continue;
      for (int b : e.graph().mro(static_cast<int>(c)))
        if (b != static_cast<int>(c)) f.bases_with_open_subclass.insert(b);
    }
  });
  return f.bases_with_open_subclass.count(cls) > 0;
}

// A method of a class that its subclasses are expected to complete (mixins and abstract bases call
// members only subclasses define): a name some class of the repository defines is never reported on
// such a receiver.
bool defined_by_some_class(const Engine& e, const std::string& name) {
  const auto& ents = e.view().entities();
  for (int x : e.view().entities_named(name))
    if (ents[x].parent_index >= 0 && is_type(ents[ents[x].parent_index].kind)) return true;
  return false;
}

// Indentation of a line; npos for blank and comment-only lines, which neither open nor close a block.
size_t indent_of(std::string_view l) {
  size_t i = 0;
  while (i < l.size() && (l[i] == ' ' || l[i] == '\t')) ++i;
  return i == l.size() || l[i] == '#' ? std::string::npos : i;
}

// Lines of the `try:` blocks of a body whose handlers catch `exc` (or Exception, BaseException, everything):
// calls there may fail on purpose (try: f(new_signature) except TypeError: f(old_signature)).
std::vector<bool> lines_in_try_catching(const std::string& text, const std::vector<uint32_t>& starts, int first,
                                        int last, std::string_view exc) {
  std::vector<bool> marked(static_cast<size_t>(last + 2), false);
  for (int ln = first; ln <= last; ++ln) {
    std::string_view l = line_range(text, starts, ln, ln);
    size_t ind = indent_of(l);
    if (ind == std::string::npos || !starts_with(trim(l), "try:")) continue;
    int end = ln, k = ln + 1;  // the try body: the deeper-indented lines after `try:`
    for (; k <= last; ++k) {
      size_t ni = indent_of(line_range(text, starts, k, k));
      if (ni != std::string::npos && ni <= ind) break;
      end = k;
    }
    bool catches = false;  // the handlers: `except` lines at the try's indentation, with their bodies
    for (; k <= last; ++k) {
      std::string_view n = line_range(text, starts, k, k);
      size_t ni = indent_of(n);
      if (ni == std::string::npos || ni > ind) continue;
      std::string_view h = trim(n);
      if (ni < ind || !starts_with(h, "except")) break;  // else/finally/the next statement
      if (starts_with(h, "except:") || h.find(exc) != std::string_view::npos ||
          h.find("Exception") != std::string_view::npos)
        catches = true;
    }
    if (catches)
      for (int k = ln; k <= end; ++k) marked[static_cast<size_t>(k)] = true;
  }
  return marked;
}

// Lines of a body where calls are expected to fail: inside `with pytest.raises(...)` / `assertRaises`
// blocks and on lines (with their deeper-indented continuations) that call raises(...)/assertRaises(...).
std::vector<bool> lines_expecting_errors(const std::string& text, const std::vector<uint32_t>& starts, int first,
                                         int last) {
  std::vector<bool> marked(static_cast<size_t>(last + 2), false);
  for (int ln = first; ln <= last; ++ln) {
    std::string_view l = line_range(text, starts, ln, ln);
    if (l.find("raises") == std::string_view::npos && l.find("Raises") == std::string_view::npos) continue;
    size_t ind = indent_of(l);
    marked[static_cast<size_t>(ln)] = true;
    for (int k = ln + 1; k <= last; ++k) {
      std::string_view n = line_range(text, starts, k, k);
      size_t ni = indent_of(n);
      if (ni != std::string::npos && ni <= ind && n.substr(ni, 1) != ")" && n.substr(ni, 1) != "]") break;
      marked[static_cast<size_t>(k)] = true;
    }
  }
  return marked;
}

}  // namespace

std::vector<StaticFinding> check_function(const Engine& e, int target, const std::string& file_text,
                                          CheckCoverage* coverage) {
  CheckCoverage ignored;
  CheckCoverage& cov = coverage ? *coverage : ignored;
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
  // Syntax: an error region overlapping the function. When the indexed file parses cleanly, an error
  // after the function's first line is the candidate's too: an unclosed bracket makes tree-sitter's
  // recovery end the function early and report the error further down.
  for (const auto& er : pf.errors) {
    int lo = ti >= 0 ? pf.entities[ti].start_line : te.start_line,
        hi = ti >= 0 ? pf.entities[ti].end_line : te.end_line;
    bool overlaps = er.start_line <= hi && er.end_line >= lo;
    bool after = fr.n_errors == 0 && er.end_line >= te.start_line;
    if (!overlaps && !after) continue;
    int line = std::max(er.start_line, te.start_line);
    out.push_back({"syntax", line, fmt::format("syntax error at line {}: the code does not parse", line)});
    break;
  }
  if (ti < 0) {
    if (out.empty())
      out.push_back(
          {"syntax", te.start_line,
           "the function `" + te.qualname + "` is no longer defined at line " + std::to_string(te.start_line)});
    return out;
  }
  if (!out.empty()) return out;  // names of code that does not parse are not worth checking
  const auto& ne = pf.entities[ti];
  const auto& g = e.graph();
  int cls = te.kind == EntityKind::method && te.parent_index >= 0 && is_type(ents[te.parent_index].kind)
                ? te.parent_index
                : -1;
  // Names bound in the function or around it that the reference list may still show as free: imports
  // inside the function, and parameters of the target and of enclosing functions.
  std::set<std::string> bound;
  for (const auto& im : pf.imports)
    if (im.scope >= 0 && (im.scope == ti || (pf.entities[im.scope].start_line >= ne.start_line &&
                                             pf.entities[im.scope].end_line <= ne.end_line)))
      bound.insert(im.bound_name());
  for (int p = ti; p >= 0; p = pf.entities[p].parent)
    for (const auto& prm : pf.entities[p].params) bound.insert(prm.name);
  auto starts = line_starts(file_text);
  int body_first = ne.body_start_line > 0 ? ne.body_start_line : ne.start_line;
  // Calls expected to fail: tests marked xfail/skip, lines inside raises(...) blocks; a body that catches
  // TypeError (or everything) may call with wrong arguments on purpose, one that catches NameError may
  // call undefined names (try: get_ipython() except NameError).
  bool whole_body_expects_errors = false;
  for (const auto& d : te.decorators)
    if (d.find("XFAIL") != std::string::npos || d.find("xfail") != std::string::npos ||
        d.find("skip") != std::string::npos)
      whole_body_expects_errors = true;
  auto expecting = lines_expecting_errors(file_text, starts, body_first, ne.end_line);
  auto type_error_caught = lines_in_try_catching(file_text, starts, body_first, ne.end_line, "TypeError");
  auto name_error_caught = lines_in_try_catching(file_text, starts, body_first, ne.end_line, "NameError");
  auto at = [](const std::vector<bool>& lines, const Reference& r) {
    return r.line >= 0 && static_cast<size_t>(r.line) < lines.size() && lines[static_cast<size_t>(r.line)];
  };
  auto call_expects_error = [&](const Reference& r) {
    return whole_body_expects_errors ||
           (r.line >= 0 && static_cast<size_t>(r.line) < expecting.size() && expecting[static_cast<size_t>(r.line)]);
  };
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
  // self may be an instance of any subclass: mixins and abstract bases call members only their subclasses
  // define. Not reported on self: a name some class of the repository defines, a name of a well-known
  // library base (a base-less class calling self.assertEqual is a unittest mixin), anything on a class a
  // repository subclass mixes with bases from outside (hypothesis' HypothesisTestCase + Django's
  // TestCase), anything on a class named like a mixin, and on a class named like a base (Base, Abstract) a
  // name the repository spells outside this function.
  auto completed_by_subclasses = [&](int c, const std::string& name) {
    if (defined_by_some_class(e, name) || known_base_name(name) || has_open_subclass(e, c)) return true;
    const std::string& cn = ents[c].name;
    if (cn.find("Mixin") != std::string::npos) return true;  // completed by the class it is mixed with
    // An abstract base's hook for its users' subclasses is spelled in their documentation or examples.
    return (cn.find("Base") != std::string::npos || cn.find("Abstract") != std::string::npos) &&
           spelled_elsewhere(e, target, name);
  };
  std::set<std::string> reported_fields;
  for (const auto& r : pf.references) {
    if (r.kind == RefKind::attribute && !r.is_store && cls >= 0 && r.scope == ti && !call_expects_error(r) &&
        r.line >= ne.body_start_line && r.line <= ne.end_line && r.chain.rfind("self.", 0) == 0 && !te.params.empty() &&
        te.params[0].name == "self") {
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
      if (completed_by_subclasses(cls, field) || !attribute_certainly_missing(e, cls, field, target, file_text))
        continue;
      reported_fields.insert(field);
      out.push_back({"field_access", r.line,
                     fmt::format("`self.{}`: class `{}` and its bases define no attribute `{}` "
                                 "(no member, and no method assigns it)",
                                 field, ents[cls].qualname, field)});
      continue;
    }
    if (r.kind != RefKind::call || r.line < ne.body_start_line || r.line > ne.end_line) continue;
    if (r.scope != ti) continue;  // nested functions have scopes of their own
    if (call_expects_error(r)) continue;
    auto dot = r.chain.find('.');
    if (bound.count(r.chain.substr(0, dot))) {
      if (dot == std::string::npos) continue;
    }
    if (dot == std::string::npos) {
      // (4) a standalone function call. The parser already dropped names local to this function or to an
      // enclosing one (closures), so what is left must be a module-level, imported or builtin name.
      auto res = g.resolve(te.file, te.parent_index >= 0 && cls < 0 ? te.parent_index : -1, r.chain);
      if (res.kind == Resolution::Kind::none) {
        if (SymbolGraph::is_builtin(r.chain) || file_has_star || at(name_error_caught, r) ||
            g.top_level(te.file, r.chain) >= 0)
          continue;
        bool imported = false;  // bound by an import the resolver could not follow (dynamic modules)
        for (const auto& im : e.view().imports(te.file))
          if (im.bound_name() == r.chain) imported = true;
        if (imported) continue;
        // Also bound nowhere in the candidate text at module level (a definition the new code adds).
        bool defined_in_text = false;
        for (const auto& pe : pf.entities)
          if (pe.parent < 0 && pe.name == r.chain) defined_in_text = true;
        for (const auto& im : pf.imports)
          if (im.scope < 0 && (im.star || im.bound_name() == r.chain)) defined_in_text = true;
        // A module may create names from strings (ssl's `_IntFlag._convert_('Options', ...)`, turtle's
        // exec of generated functions named in lists).
        if (defined_in_text || file_text.find("'" + r.chain + "'") != std::string::npos ||
            file_text.find("\"" + r.chain + "\"") != std::string::npos)
          continue;
        out.push_back({"function_call", r.line,
                       fmt::format("`{}` is not defined: no function, class or import of that name "
                                   "is visible from `{}`",
                                   r.chain, te.qualname)});
        continue;
      }
      if (res.kind != Resolution::Kind::entity || at(type_error_caught, r)) continue;
      const auto& f = ents[res.entity];
      if (!is_callable(f.kind) || f.kind == EntityKind::method) continue;
      // A name defined more than once in its module (conditional definitions, redefinitions) has no
      // single signature.
      if (e.view().find_entities(f.file, f.qualname).size() > 1) continue;
      bool skip = false;
      if (!signature_is_plain(f, &skip, false)) continue;
      ++cov.argument_counts;
      auto why = arity_problem(f.params, false, r);
      if (!why.empty())
        out.push_back(
            {"function_call", r.line, fmt::format("`{}()` {} (signature: `{}`)", r.chain, why, params_text(f))});
      continue;
    }
    // (1) self.m(...) / cls.m(...) on the enclosing class.
    std::string recv = r.chain.substr(0, dot), name = r.chain.substr(dot + 1);
    if (cls < 0 || (recv != "self" && recv != "cls") || name.find('.') != std::string::npos) continue;
    if (name.size() > 4 && name.substr(0, 2) == "__" && name.substr(name.size() - 2) == "__") continue;  // object's own
    if (te.params.empty() || te.params[0].name != recv) continue;  // self/cls must be the receiver parameter
    auto m = g.class_member(cls, name);
    if (!m) {
      if (completed_by_subclasses(cls, name) || !attribute_certainly_missing(e, cls, name, target, file_text)) continue;
      out.push_back({"method_call", r.line,
                     fmt::format("`{}.{}()`: class `{}` and its bases define no attribute `{}`", recv, name,
                                 ents[cls].qualname, name)});
      continue;
    }
    const auto& f = ents[*m];
    if (!is_callable(f.kind) || at(type_error_caught, r)) continue;
    bool skip_first = true;
    if (!signature_is_plain(f, &skip_first, true)) continue;
    if (instance_attribute(e, cls, name) != InstanceAttribute::none)
      continue;  // an instance attribute may shadow the method
    // self may be a subclass whose override takes other arguments (multiprocessing's BaseProcess._Popen(self)
    // is a staticmethod _Popen(process_obj) in every subclass): the call must suit every override.
    bool overridden_differently = false;
    for (int x : e.view().entities_named(name)) {
      int p = ents[x].parent_index;
      if (x == *m || p < 0 || !is_type(ents[p].kind) || ents[x].signature == f.signature) continue;
      auto sub_mro = g.mro(p);
      if (std::find(sub_mro.begin(), sub_mro.end(), cls) != sub_mro.end()) overridden_differently = true;
    }
    if (overridden_differently) continue;
    ++cov.argument_counts;
    auto why = arity_problem(f.params, skip_first, r);
    if (!why.empty())
      out.push_back({"method_call", r.line, fmt::format("`{}()` {} (signature: `{}`)", r.chain, why, params_text(f))});
  }
  // (3) variable-method calls: `x = C(...)` (every binding of x in the function) then `x.m(...)`: C is a
  // repository class with a closed hierarchy and no __new__ (which could return another type), so x is a
  // C and m must be one of its attributes, called with a valid argument count.
  const ScopeInfo* scope = nullptr;
  for (const auto& si : pf.scopes)
    if (si.entity == ti) scope = &si;
  if (scope && !scope->typed_locals.empty()) {
    std::map<std::string, std::pair<int, int>> types;  // local -> (class entity, first binding line)
    for (const auto& tl : scope->typed_locals) {
      if (bound.count(tl.name)) continue;  // also a parameter or bound by an import: its type is not one
      auto res = g.resolve(te.file, te.parent_index >= 0 && cls < 0 ? te.parent_index : -1, tl.constructor);
      if (res.kind != Resolution::Kind::entity || !is_type(ents[res.entity].kind)) continue;
      int c = res.entity;
      // The resolver answers with the last entity along a chain it could follow part of
      // (`C.__dict__.copy` -> C): the callee must be the class itself.
      if (tl.constructor.substr(tl.constructor.rfind('.') + 1) != ents[c].name) continue;
      if (e.view().find_entities(ents[c].file, ents[c].qualname).size() > 1) continue;  // conditional definitions
      if (g.class_member(c, "__new__") || !hierarchy_is_closed(e, c)) continue;
      types[tl.name] = {c, tl.line};
    }
    std::set<std::string> reported;
    for (const auto& r : pf.local_references) {
      if (r.kind != RefKind::call || r.scope != ti || r.line < ne.body_start_line || r.line > ne.end_line) continue;
      auto dot = r.chain.find('.');
      if (dot == std::string::npos || r.chain.find('.', dot + 1) != std::string::npos) continue;
      auto t = types.find(r.chain.substr(0, dot));
      if (t == types.end() || r.line <= t->second.second || call_expects_error(r)) continue;
      int c = t->second.first;
      ++cov.typed_receiver_calls;
      std::string name = r.chain.substr(dot + 1);
      if (name.size() > 4 && name.rfind("__", 0) == 0) continue;
      auto m = g.class_member(c, name);
      if (!m) {
        if (reported.count(r.chain) || !attribute_certainly_missing(e, c, name, target, file_text)) continue;
        reported.insert(r.chain);
        out.push_back(
            {"variable_method", r.line,
             fmt::format("`{}()`: `{}` is a `{}` (assigned `{} = {}(...)`), and class `{}` "
                         "and its bases define no attribute `{}`",
                         r.chain, t->first, ents[c].qualname, t->first, ents[c].name, ents[c].qualname, name)});
        continue;
      }
      const auto& f = ents[*m];
      if (!is_callable(f.kind) || at(type_error_caught, r)) continue;
      bool skip_first = true;
      if (!signature_is_plain(f, &skip_first, true)) continue;
      if (instance_attribute(e, c, name) != InstanceAttribute::none) continue;
      ++cov.argument_counts;
      auto why = arity_problem(f.params, skip_first, r);
      if (!why.empty())
        out.push_back({"variable_method", r.line,
                       fmt::format("`{}()` {} (`{}` is a `{}`; signature: `{}`)", r.chain, why, t->first,
                                   ents[c].qualname, params_text(f))});
    }
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
      for (auto& f : check_function(e, i, e.view().content(static_cast<int>(fi)), &rep.coverage))
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
    // A top-level class of this file to instantiate into a local (for check (3)): any class qualifies,
    // the check itself decides whether the receiver's type is certain.
    int klass = -1;
    for (int i = fr.first_entity; i < fr.first_entity + fr.n_entities && klass < 0; ++i)
      if (ents[i].kind == EntityKind::klass && ents[i].parent_index < 0) klass = i;
    for (int i = fr.first_entity; i < fr.first_entity + fr.n_entities; ++i) {
      const auto& en = ents[i];
      if (!is_callable(en.kind) || en.body_start_line <= 0) continue;
      if (seen++ % stride) continue;
      size_t at = starts[static_cast<size_t>(en.body_start_line - 1)];
      size_t indent = 0;
      while (at + indent < src.size() && src[at + indent] == ' ') ++indent;
      auto with = [&](const std::string& line) {
        return src.substr(0, at) + std::string(indent, ' ') + line + "\n" + src.substr(at);
      };
      auto count = [&](const std::string& kind, const std::string& check, const std::string& line) {
        auto fs = check_function(e, i, with(line));
        auto& [caught, total] = rep.by_kind[kind];
        ++total;
        bool got = false;
        for (const auto& f : fs)
          if (f.check == check) {
            ++caught;
            got = true;
            break;
          }
        if (!got) rep.misses.push_back({kind, fr.path + "::" + en.qualname});
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
      if (klass >= 0)
        count("variable_method", "variable_method",
              "zq_obj_7 = " + ents[klass].name + "()\n" + std::string(indent, ' ') + "zq_obj_7.zq_no_such_method_7()");
      count("syntax", "syntax", "zq_value = (1 +");
    }
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

}  // namespace repoctx
