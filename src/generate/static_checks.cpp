#include "generate/static_checks.h"

#include <chrono>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <tuple>
#include <unordered_map>
#include <unordered_set>

#include <fmt/format.h>

#include "generate/external_classes.h"
#include "generate/python_syntax.h"
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

// Repository-wide facts the checks consult, computed once per engine on first use and owned by it
// (Engine::derived), so they live exactly as long as the view they describe.
struct RepoFacts {
  std::once_flag stores_once, words_once, open_once;
  std::set<std::string> stored_names;                // attribute names assigned anywhere (x.name = ...)
  std::unordered_map<std::string, int> word_counts;  // identifier-like words of every file
  std::unordered_set<int> bases_with_open_subclass;  // classes some outside-mixing subclass derives from
};

RepoFacts& repo_facts(const Engine& e) {
  return e.derived<RepoFacts>();
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

namespace {

// One function checked in one candidate text: what every check consults, and one method per check.
class FunctionCheck {
 public:
  FunctionCheck(const Engine& e, int target, const std::string& file_text, CheckCoverage& cov, PythonCompiler* python)
      : e_(e),
        g_(e.graph()),
        ents_(e.view().entities()),
        target_(target),
        te_(ents_[target]),
        text_(file_text),
        cov_(cov),
        python_(python) {}

  std::vector<StaticFinding> run() {
    parse();
    if (syntax_errors()) return out_;
    prepare();
    for (const auto& r : pf_->references) {
      if (is_self_field_read(r)) {
        field_read(r);
        continue;
      }
      if (r.kind != RefKind::call || r.line < ne().body_start_line || r.line > ne().end_line) continue;
      if (r.scope != ti_) continue;  // nested functions have scopes of their own
      if (call_expects_error(r)) continue;
      auto dot = r.chain.find('.');
      if (dot == std::string::npos) {
        if (!bound_.count(r.chain)) standalone_call(r);
      } else {
        self_call(r, r.chain.substr(0, dot), r.chain.substr(dot + 1));
      }
    }
    typed_receiver_calls();
    return out_;
  }

 private:
  const Entity& ne() const { return pf_->entities[static_cast<size_t>(ti_)]; }

  // The candidate text parsed (the last parse is kept per thread: the false-alarm sweep checks every
  // function of a file against one text), and the target as it reads there: same qualname, the
  // definition starting at the same line.
  void parse() {
    const auto& fr = e_.view().files()[te_.file];
    thread_local SourceParser parser;
    thread_local std::string last_text;
    thread_local ParsedFile pf;
    if (text_.size() != last_text.size() || text_ != last_text || pf.path != fr.path) {
      pf = parser.parse(fr.path, fr.module, text_, Language::python);
      last_text = text_;
    }
    pf_ = &pf;
    for (size_t i = 0; i < pf.entities.size(); ++i)
      if (pf.entities[i].qualname == te_.qualname && pf.entities[i].start_line == te_.start_line)
        ti_ = static_cast<int>(i);
  }

  // Syntax by Python's compile() of the candidate file: an error inside the function, or anywhere after
  // its first line when the indexed file compiles (an unclosed bracket is reported further down). Python
  // names one error: its message, line and column. Null when Python cannot judge (no interpreter, or the
  // indexed file does not compile either: then tree-sitter judges).
  std::optional<bool> python_syntax_errors() {
    if (!python_) return std::nullopt;
    if (python_->check(e_.view().content(te_.file))) return std::nullopt;  // the original is refused too
    auto err = python_->check(text_);
    if (!err) return false;
    if (err->line > 0 && err->line < te_.start_line) return std::nullopt;  // before the function: not its doing
    int line = err->line > 0 ? err->line : te_.start_line;
    std::string where =
        err->column > 0 ? fmt::format("line {}, column {}", line, err->column) : fmt::format("line {}", line);
    std::string shown = trim(err->text).empty() ? "" : fmt::format(" (`{}`)", trim(err->text));
    out_.push_back({"syntax", line, fmt::format("syntax error at {}: {}{}", where, err->message, shown)});
    return true;
  }

  // Syntax: Python's verdict when it can give one; else an error region of tree-sitter's overlapping the
  // function. When the indexed file parses cleanly, an error after the function's first line is the
  // candidate's too: an unclosed bracket makes tree-sitter's recovery end the function early and report
  // the error further down. True when the other checks must not run.
  bool syntax_errors() {
    if (auto py = python_syntax_errors()) {
      if (*py) return true;
      // Python accepts it: tree-sitter's own error regions (its grammar's gaps) are not findings, but
      // names in a tree with errors are not worth checking either.
      if (ti_ < 0)
        out_.push_back(
            {"syntax", te_.start_line,
             "the function `" + te_.qualname + "` is no longer defined at line " + std::to_string(te_.start_line)});
      return ti_ < 0 || !pf_->errors.empty();
    }
    const auto& fr = e_.view().files()[te_.file];
    for (const auto& er : pf_->errors) {
      int lo = ti_ >= 0 ? ne().start_line : te_.start_line, hi = ti_ >= 0 ? ne().end_line : te_.end_line;
      bool overlaps = er.start_line <= hi && er.end_line >= lo;
      bool after = fr.n_errors == 0 && er.end_line >= te_.start_line;
      if (!overlaps && !after) continue;
      int line = std::max(er.start_line, te_.start_line);
      out_.push_back({"syntax", line, fmt::format("syntax error at line {}: the code does not parse", line)});
      break;
    }
    if (ti_ < 0 && out_.empty())
      out_.push_back(
          {"syntax", te_.start_line,
           "the function `" + te_.qualname + "` is no longer defined at line " + std::to_string(te_.start_line)});
    return ti_ < 0 || !out_.empty();  // names of code that does not parse are not worth checking
  }

  void prepare() {
    cls_ = te_.kind == EntityKind::method && te_.parent_index >= 0 && is_type(ents_[te_.parent_index].kind)
               ? te_.parent_index
               : -1;
    // Names bound in the function or around it that the reference list may still show as free: imports
    // inside the function, and parameters of the target and of enclosing functions.
    for (const auto& im : pf_->imports)
      if (im.scope >= 0 && (im.scope == ti_ || (pf_->entities[im.scope].start_line >= ne().start_line &&
                                                pf_->entities[im.scope].end_line <= ne().end_line)))
        bound_.insert(im.bound_name());
    for (int p = ti_; p >= 0; p = pf_->entities[p].parent)
      for (const auto& prm : pf_->entities[p].params) bound_.insert(prm.name);
    auto starts = line_starts(text_);
    int body_first = ne().body_start_line > 0 ? ne().body_start_line : ne().start_line;
    // Calls expected to fail: tests marked xfail/skip, lines inside raises(...) blocks; a body that catches
    // TypeError (or everything) may call with wrong arguments on purpose, one that catches NameError may
    // call undefined names (try: get_ipython() except NameError).
    for (const auto& d : te_.decorators)
      if (d.find("XFAIL") != std::string::npos || d.find("xfail") != std::string::npos ||
          d.find("skip") != std::string::npos)
        whole_body_expects_errors_ = true;
    expecting_ = lines_expecting_errors(text_, starts, body_first, ne().end_line);
    type_error_caught_ = lines_in_try_catching(text_, starts, body_first, ne().end_line, "TypeError");
    name_error_caught_ = lines_in_try_catching(text_, starts, body_first, ne().end_line, "NameError");
    for (const auto& im : e_.view().imports(te_.file))
      if (im.name == "*") file_has_star_ = true;
    // Names the candidate text itself assigns as attributes anywhere (self.x = ... in the new body, in
    // other methods, tuple targets): a read of such a field is never reported.
    for (const auto& r : pf_->references)
      if (r.is_store) {
        auto d = r.chain.rfind('.');
        if (d != std::string::npos) stored_fields_.insert(r.chain.substr(d + 1));
      }
  }

  static bool at(const std::vector<bool>& lines, const Reference& r) {
    return r.line >= 0 && static_cast<size_t>(r.line) < lines.size() && lines[static_cast<size_t>(r.line)];
  }
  bool call_expects_error(const Reference& r) const { return whole_body_expects_errors_ || at(expecting_, r); }

  // self may be an instance of any subclass: mixins and abstract bases call members only their subclasses
  // define. Not reported on self: a name some class of the repository defines, a name of a well-known
  // library base (a base-less class calling self.assertEqual is a unittest mixin), anything on a class a
  // repository subclass mixes with bases from outside (hypothesis' HypothesisTestCase + Django's
  // TestCase), anything on a class named like a mixin, and on a class named like a base (Base, Abstract) a
  // name the repository spells outside this function.
  bool completed_by_subclasses(int c, const std::string& name) const {
    if (defined_by_some_class(e_, name) || known_base_name(name) || has_open_subclass(e_, c)) return true;
    const std::string& cn = ents_[c].name;
    if (cn.find("Mixin") != std::string::npos) return true;  // completed by the class it is mixed with
    // An abstract base's hook for its users' subclasses is spelled in their documentation or examples.
    return (cn.find("Base") != std::string::npos || cn.find("Abstract") != std::string::npos) &&
           spelled_elsewhere(e_, target_, name);
  }

  bool is_self_field_read(const Reference& r) const {
    return r.kind == RefKind::attribute && !r.is_store && cls_ >= 0 && r.scope == ti_ && !call_expects_error(r) &&
           r.line >= ne().body_start_line && r.line <= ne().end_line && r.chain.rfind("self.", 0) == 0 &&
           !te_.params.empty() && te_.params[0].name == "self";
  }

  // (2) a field read on self: it must be defined in the class hierarchy (member, property, or an attribute
  // some method of the hierarchy assigns).
  void field_read(const Reference& r) {
    std::string rest = r.chain.substr(5);
    std::string field = rest.substr(0, rest.find('.'));
    if (field.empty() || (field.size() > 4 && field.rfind("__", 0) == 0) || reported_fields_.count(field) ||
        stored_fields_.count(field) || g_.class_member(cls_, field))
      return;
    // `_x` behind a member `x`: a descriptor or property stores it (astropy's Parameter, MetaData).
    size_t u = field.find_first_not_of('_');
    if (u != 0 && u != std::string::npos && g_.class_member(cls_, field.substr(u))) return;
    if (completed_by_subclasses(cls_, field) || !attribute_certainly_missing(e_, cls_, field, target_, text_)) return;
    reported_fields_.insert(field);
    out_.push_back({"field_access", r.line,
                    fmt::format("`self.{}`: class `{}` and its bases define no attribute `{}` "
                                "(no member, and no method assigns it)",
                                field, ents_[cls_].qualname, field)});
  }

  // Is the name bound nowhere the resolver looks, yet legitimately (an import of a dynamic module, a
  // definition or star import the candidate text adds, a name a module creates from a string)?
  bool bound_otherwise(const std::string& name) const {
    for (const auto& im : e_.view().imports(te_.file))
      if (im.bound_name() == name) return true;
    for (const auto& pe : pf_->entities)
      if (pe.parent < 0 && pe.name == name) return true;
    for (const auto& im : pf_->imports)
      if (im.scope < 0 && (im.star || im.bound_name() == name)) return true;
    // ssl's `_IntFlag._convert_('Options', ...)`, turtle's exec of generated functions named in lists.
    return text_.find("'" + name + "'") != std::string::npos || text_.find("\"" + name + "\"") != std::string::npos;
  }

  // (4) a standalone function call. The parser already dropped names local to this function or to an
  // enclosing one (closures), so what is left must be a module-level, imported or builtin name.
  void standalone_call(const Reference& r) {
    auto res = g_.resolve(te_.file, te_.parent_index >= 0 && cls_ < 0 ? te_.parent_index : -1, r.chain);
    if (res.kind == Resolution::Kind::none) {
      if (SymbolGraph::is_builtin(r.chain) || file_has_star_ || at(name_error_caught_, r) ||
          g_.top_level(te_.file, r.chain) >= 0 || bound_otherwise(r.chain))
        return;
      out_.push_back({"function_call", r.line,
                      fmt::format("`{}` is not defined: no function, class or import of that name "
                                  "is visible from `{}`",
                                  r.chain, te_.qualname)});
      return;
    }
    if (res.kind != Resolution::Kind::entity || at(type_error_caught_, r)) return;
    const auto& f = ents_[res.entity];
    if (!is_callable(f.kind) || f.kind == EntityKind::method) return;
    // A name defined more than once in its module (conditional definitions, redefinitions) has no single
    // signature.
    if (e_.view().find_entities(f.file, f.qualname).size() > 1) return;
    bool skip = false;
    if (!signature_is_plain(f, &skip, false)) return;
    ++cov_.argument_counts;
    auto why = arity_problem(f.params, false, r);
    if (!why.empty())
      out_.push_back(
          {"function_call", r.line, fmt::format("`{}()` {} (signature: `{}`)", r.chain, why, params_text(f))});
  }

  // self may be a subclass whose override takes other arguments (multiprocessing's BaseProcess._Popen(self)
  // is a staticmethod _Popen(process_obj) in every subclass): the call must suit every override.
  bool overridden_differently(int member, const std::string& name) const {
    const auto& f = ents_[member];
    for (int x : e_.view().entities_named(name)) {
      int p = ents_[x].parent_index;
      if (x == member || p < 0 || !is_type(ents_[p].kind) || ents_[x].signature == f.signature) continue;
      auto sub_mro = g_.mro(p);
      if (std::find(sub_mro.begin(), sub_mro.end(), cls_) != sub_mro.end()) return true;
    }
    return false;
  }

  // (1) self.m(...) / cls.m(...) on the enclosing class.
  void self_call(const Reference& r, const std::string& recv, const std::string& name) {
    if (cls_ < 0 || (recv != "self" && recv != "cls") || name.find('.') != std::string::npos) return;
    if (name.size() > 4 && name.substr(0, 2) == "__" && name.substr(name.size() - 2) == "__") return;  // object's
    if (te_.params.empty() || te_.params[0].name != recv) return;  // self/cls must be the receiver parameter
    auto m = g_.class_member(cls_, name);
    if (!m) {
      if (completed_by_subclasses(cls_, name) || !attribute_certainly_missing(e_, cls_, name, target_, text_)) return;
      out_.push_back({"method_call", r.line,
                      fmt::format("`{}.{}()`: class `{}` and its bases define no attribute `{}`", recv, name,
                                  ents_[cls_].qualname, name)});
      return;
    }
    const auto& f = ents_[*m];
    if (!is_callable(f.kind) || at(type_error_caught_, r)) return;
    bool skip_first = true;
    if (!signature_is_plain(f, &skip_first, true)) return;
    if (instance_attribute(e_, cls_, name) != InstanceAttribute::none) return;  // may shadow the method
    if (overridden_differently(*m, name)) return;
    ++cov_.argument_counts;
    auto why = arity_problem(f.params, skip_first, r);
    if (!why.empty())
      out_.push_back({"method_call", r.line, fmt::format("`{}()` {} (signature: `{}`)", r.chain, why, params_text(f))});
  }

  // Locals whose every binding is `x = C(...)` with C a repository class of closed hierarchy and no
  // __new__ (which could return another type): local -> (class entity, first binding line).
  std::map<std::string, std::pair<int, int>> typed_locals() const {
    std::map<std::string, std::pair<int, int>> types;
    const ScopeInfo* scope = nullptr;
    for (const auto& si : pf_->scopes)
      if (si.entity == ti_) scope = &si;
    if (!scope) return types;
    for (const auto& tl : scope->typed_locals) {
      if (bound_.count(tl.name)) continue;  // also a parameter or bound by an import: its type is not one
      auto res = g_.resolve(te_.file, te_.parent_index >= 0 && cls_ < 0 ? te_.parent_index : -1, tl.constructor);
      if (res.kind != Resolution::Kind::entity || !is_type(ents_[res.entity].kind)) continue;
      int c = res.entity;
      // The resolver answers with the last entity along a chain it could follow part of
      // (`C.__dict__.copy` -> C): the callee must be the class itself.
      if (tl.constructor.substr(tl.constructor.rfind('.') + 1) != ents_[c].name) continue;
      if (e_.view().find_entities(ents_[c].file, ents_[c].qualname).size() > 1) continue;  // conditional defs
      if (g_.class_member(c, "__new__") || !hierarchy_is_closed(e_, c)) continue;
      types[tl.name] = {c, tl.line};
    }
    return types;
  }

  // (3) variable-method calls: `x = C(...)` (every binding of x in the function) then `x.m(...)`: x is a C,
  // and m must be one of its attributes, called with a valid argument count.
  void typed_receiver_calls() {
    auto types = typed_locals();
    if (types.empty()) return;
    std::set<std::string> reported;
    for (const auto& r : pf_->local_references) {
      if (r.kind != RefKind::call || r.scope != ti_ || r.line < ne().body_start_line || r.line > ne().end_line)
        continue;
      auto dot = r.chain.find('.');
      if (dot == std::string::npos || r.chain.find('.', dot + 1) != std::string::npos) continue;
      auto t = types.find(r.chain.substr(0, dot));
      if (t == types.end() || r.line <= t->second.second || call_expects_error(r)) continue;
      int c = t->second.first;
      ++cov_.typed_receiver_calls;
      std::string name = r.chain.substr(dot + 1);
      if (name.size() > 4 && name.rfind("__", 0) == 0) continue;
      auto m = g_.class_member(c, name);
      if (!m) {
        if (reported.count(r.chain) || !attribute_certainly_missing(e_, c, name, target_, text_)) continue;
        reported.insert(r.chain);
        out_.push_back(
            {"variable_method", r.line,
             fmt::format("`{}()`: `{}` is a `{}` (assigned `{} = {}(...)`), and class `{}` "
                         "and its bases define no attribute `{}`",
                         r.chain, t->first, ents_[c].qualname, t->first, ents_[c].name, ents_[c].qualname, name)});
        continue;
      }
      const auto& f = ents_[*m];
      if (!is_callable(f.kind) || at(type_error_caught_, r)) continue;
      bool skip_first = true;
      if (!signature_is_plain(f, &skip_first, true)) continue;
      if (instance_attribute(e_, c, name) != InstanceAttribute::none) continue;
      ++cov_.argument_counts;
      auto why = arity_problem(f.params, skip_first, r);
      if (!why.empty())
        out_.push_back({"variable_method", r.line,
                        fmt::format("`{}()` {} (`{}` is a `{}`; signature: `{}`)", r.chain, why, t->first,
                                    ents_[c].qualname, params_text(f))});
    }
  }

  const Engine& e_;
  const SymbolGraph& g_;
  const std::vector<EntityRec>& ents_;
  int target_;
  const EntityRec& te_;
  const std::string& text_;
  CheckCoverage& cov_;
  PythonCompiler* python_;  // null: tree-sitter judges syntax
  const ParsedFile* pf_ = nullptr;
  int ti_ = -1;   // the target in the parsed candidate
  int cls_ = -1;  // its class, for methods
  std::set<std::string> bound_, stored_fields_, reported_fields_;
  bool whole_body_expects_errors_ = false, file_has_star_ = false;
  std::vector<bool> expecting_, type_error_caught_, name_error_caught_;
  std::vector<StaticFinding> out_;
};

}  // namespace

std::vector<StaticFinding> check_function(const Engine& e, int target, const std::string& file_text,
                                          CheckCoverage* coverage, const CheckOptions& options) {
  CheckCoverage ignored;
  PythonCompiler* python = options.python == "none" ? nullptr : python_compiler(options.python);
  return FunctionCheck(e, target, file_text, coverage ? *coverage : ignored, python).run();
}

FalseAlarmReport check_all_real_bodies(const Engine& e, int max_functions, const CheckOptions& options) {
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
      for (auto& f : check_function(e, i, e.view().content(static_cast<int>(fi)), &rep.coverage, options))
        rep.findings.emplace_back(fr.path + "::" + ents[i].qualname, std::move(f));
    }
    if (any) ++rep.files;
  }
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return rep;
}

DetectionReport injected_error_detection(const Engine& e, int stride, const CheckOptions& options) {
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
        auto fs = check_function(e, i, with(line), nullptr, options);
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
