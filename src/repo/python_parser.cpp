// Python extraction over tree-sitter-python: definitions (with ast-identical line ranges), imports,
// and the references of every body, filtered by Python's scoping rules.
#include <tree_sitter/api.h>

#include <algorithm>
#include <cstring>
#include <deque>
#include <string>
#include <unordered_set>

#include "repo/parser.h"
#include "repo/ts_util.h"
#include "util/text.h"

extern "C" const TSLanguage* tree_sitter_python(void);

namespace repoctx {
namespace {

// Node kinds this extractor distinguishes; everything else is walked generically.
enum K : int {
  k_module,
  k_function_definition,
  k_class_definition,
  k_decorated_definition,
  k_decorator,
  k_block,
  k_expression_statement,
  k_assignment,
  k_augmented_assignment,
  k_identifier,
  k_pattern_list,
  k_tuple_pattern,
  k_list_pattern,
  k_list_splat_pattern,
  k_attribute,
  k_call,
  k_argument_list,
  k_keyword_argument,
  k_list_splat,
  k_dictionary_splat,
  k_if_statement,
  k_elif_clause,
  k_else_clause,
  k_for_statement,
  k_while_statement,
  k_try_statement,
  k_except_clause,
  k_except_group_clause,
  k_finally_clause,
  k_with_statement,
  k_match_statement,
  k_case_clause,
  k_import_statement,
  k_import_from_statement,
  k_future_import_statement,
  k_aliased_import,
  k_dotted_name,
  k_relative_import,
  k_import_prefix,
  k_wildcard_import,
  k_string,
  k_concatenated_string,
  k_comment,
  k_parameters,
  k_typed_parameter,
  k_default_parameter,
  k_typed_default_parameter,
  k_dictionary_splat_pattern,
  k_keyword_separator,
  k_positional_separator,
  k_lambda,
  k_lambda_parameters,
  k_global_statement,
  k_nonlocal_statement,
  k_named_expression,
  k_for_in_clause,
  k_with_item,
  k_as_pattern,
  k_as_pattern_target,
  k_parenthesized_expression,
  k_ERROR,
  k_string_start,
  k_string_content,
  k_escape_sequence,
  k_case_pattern,
  k_tuple,
  k_list,
  k_with_clause,
  k_delete_statement,
  k_type_alias_statement,
  k_interpolation,
  k_subscript,
  k_generator_expression,
  k_block_end_marker,
  k_colon,
  k_async,
  k_type_parameter,
  k_line_continuation,
  k_count
};
const std::vector<const char*> kKindNames = {
    "module",
    "function_definition",
    "class_definition",
    "decorated_definition",
    "decorator",
    "block",
    "expression_statement",
    "assignment",
    "augmented_assignment",
    "identifier",
    "pattern_list",
    "tuple_pattern",
    "list_pattern",
    "list_splat_pattern",
    "attribute",
    "call",
    "argument_list",
    "keyword_argument",
    "list_splat",
    "dictionary_splat",
    "if_statement",
    "elif_clause",
    "else_clause",
    "for_statement",
    "while_statement",
    "try_statement",
    "except_clause",
    "except_group_clause",
    "finally_clause",
    "with_statement",
    "match_statement",
    "case_clause",
    "import_statement",
    "import_from_statement",
    "future_import_statement",
    "aliased_import",
    "dotted_name",
    "relative_import",
    "import_prefix",
    "wildcard_import",
    "string",
    "concatenated_string",
    "comment",
    "parameters",
    "typed_parameter",
    "default_parameter",
    "typed_default_parameter",
    "dictionary_splat_pattern",
    "keyword_separator",
    "positional_separator",
    "lambda",
    "lambda_parameters",
    "global_statement",
    "nonlocal_statement",
    "named_expression",
    "for_in_clause",
    "with_item",
    "as_pattern",
    "as_pattern_target",
    "parenthesized_expression",
    "ERROR",
    "string_start",
    "string_content",
    "escape_sequence",
    "case_pattern",
    "tuple",
    "list",
    "with_clause",
    "delete_statement",
    "type_alias_statement",
    "interpolation",
    "subscript",
    "generator_expression",
    "_block_end_marker_unused",
    ":",
    "async",
    "type_parameter",
    "line_continuation",
};

struct Grammar {
  const TSLanguage* lang = tree_sitter_python();
  ts::KindTable kinds{lang, kKindNames};
  TSFieldId f_name = field("name"), f_body = field("body"), f_left = field("left"), f_right = field("right"),
            f_type = field("type"), f_function = field("function"), f_arguments = field("arguments"),
            f_object = field("object"), f_attribute = field("attribute"), f_superclasses = field("superclasses"),
            f_parameters = field("parameters"), f_return_type = field("return_type"),
            f_module_name = field("module_name"), f_value = field("value"), f_alias = field("alias"),
            f_consequence = field("consequence"), f_alternative = field("alternative"),
            f_definition = field("definition"), f_condition = field("condition"),
            f_type_parameters = field("type_parameters");
  TSFieldId field(const char* n) const {
    return ts_language_field_id_for_name(lang, n, static_cast<uint32_t>(std::strlen(n)));
  }
};
const Grammar& grammar() {
  static const Grammar g;
  return g;
}

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
  const Scope* parent = nullptr;
  bool conditional = false;  // inside try/if at module level
};

class Extractor {
 public:
  Extractor(std::string_view src, ParsedFile& out) : src_(src), out_(out), g_(grammar()) {}

  void run(TSNode root) {
    Scope& module = scopes_.emplace_back();
    module.type = ScopeType::module;
    visit_block(root, module, false);
    finish();
  }

 private:
  std::string_view src_;
  ParsedFile& out_;
  const Grammar& g_;
  // One pass over the tree: references are recorded as they are met and names are bound as they are
  // met; whether a reference's root is a local of its function (Python decides that from the whole
  // function, later assignments included) is settled in finish(), when every scope is complete.
  std::deque<Scope> scopes_;  // stable addresses: references keep a pointer to their scope
  std::vector<const Scope*> ref_scope_;

  int kind(TSNode n) const { return g_.kinds(n); }

  void bind(Scope& sc, std::string_view name) {
    if (sc.type != ScopeType::function) return;
    sc.locals.emplace(name);
    ++sc.bind_events[std::string(name)];
  }

  void finish() {
    size_t keep = 0;
    for (size_t i = 0; i < out_.references.size(); ++i) {
      const Scope& sc = *ref_scope_[i];
      const std::string& chain = out_.references[i].chain;
      std::string root = chain.substr(0, chain.find('.'));
      // Names bound locally (in this function or an enclosing one, Python's closure rule) are not
      // repository symbols, except the method receiver (self/cls), which the resolver maps to the class.
      if (root != "super()" && is_local(sc, root) && !is_receiver(sc, root)) {
        if (sc.type == ScopeType::function && chain.size() > root.size() && typed_local(sc, root))
          out_.local_references.push_back(std::move(out_.references[i]));
        continue;
      }
      if (keep != i) out_.references[keep] = std::move(out_.references[i]);
      ++keep;
    }
    out_.references.resize(keep);
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
      out_.scopes.push_back(std::move(info));
    }
  }
  std::string_view text(TSNode n) const { return ts::text(n, src_); }
  TSNode field(TSNode n, TSFieldId f) const { return ts_node_child_by_field_id(n, f); }

  // ---------------------------------------------------------------- statements
  void visit_block(TSNode block, Scope& sc, bool conditional) {
    ts::for_each_child(block, true, [&](TSNode st) { visit_statement(st, sc, conditional); });
  }

  void visit_statement(TSNode st, Scope& sc, bool conditional) {
    switch (kind(st)) {
      case k_function_definition:
      case k_class_definition:
        visit_definition(st, TSNode{}, sc);
        return;
      case k_decorated_definition: {
        TSNode def = field(st, g_.f_definition);
        if (!ts_node_is_null(def)) visit_definition(def, st, sc);
        return;
      }
      case k_expression_statement:
        ts::for_each_child(st, true, [&](TSNode ch) {
          int k = kind(ch);
          if (k == k_assignment) {
            visit_assignment(ch, st, sc);
          } else if (k == k_augmented_assignment) {
            bind_target(field(ch, g_.f_left), sc);
            scan_store_target(field(ch, g_.f_left), sc);
            scan(field(ch, g_.f_right), sc);
          } else {
            scan(ch, sc);
          }
        });
        return;
      case k_if_statement:
        scan(field(st, g_.f_condition), sc);
        visit_block(field(st, g_.f_consequence), sc, true);
        ts::for_each_child_field(st, [&](TSNode ch, TSFieldId f) {
          if (f != g_.f_alternative) return;
          if (kind(ch) == k_elif_clause) {
            scan(field(ch, g_.f_condition), sc);
            visit_block(field(ch, g_.f_consequence), sc, true);
          } else {
            visit_block(field(ch, g_.f_body), sc, true);
          }
        });
        return;
      case k_for_statement:
        bind_target(field(st, g_.f_left), sc);
        scan_store_target(field(st, g_.f_left), sc);
        scan(field(st, g_.f_right), sc);
        visit_block(field(st, g_.f_body), sc, true);
        if (auto alt = field(st, g_.f_alternative); !ts_node_is_null(alt)) visit_block(field(alt, g_.f_body), sc, true);
        return;
      case k_while_statement:
        scan(field(st, g_.f_condition), sc);
        visit_block(field(st, g_.f_body), sc, true);
        if (auto alt = field(st, g_.f_alternative); !ts_node_is_null(alt)) visit_block(field(alt, g_.f_body), sc, true);
        return;
      case k_try_statement:
        ts::for_each_child(st, true, [&](TSNode ch) {
          switch (kind(ch)) {
            case k_block:
              visit_block(ch, sc, true);
              break;
            case k_except_clause:
            case k_except_group_clause:
              ts::for_each_child_field(ch, [&](TSNode part, TSFieldId f) {
                if (!ts_node_is_named(part)) return;
                if (kind(part) == k_block)
                  visit_block(part, sc, true);
                else if (f == g_.f_alias)
                  bind_target(part, sc);  // `except E as e`
                else
                  scan(part, sc);
              });
              break;
            case k_else_clause:
            case k_finally_clause:
              ts::for_each_child(ch, true, [&](TSNode part) {
                if (kind(part) == k_block) visit_block(part, sc, true);
              });
              break;
            default:
              scan(ch, sc);
          }
        });
        return;
      case k_with_statement:
        ts::for_each_child(st, true, [&](TSNode ch) {
          if (kind(ch) == k_block)
            visit_block(ch, sc, true);
          else
            scan(ch, sc);
        });
        return;
      case k_match_statement:
        ts::for_each_child_field(st, [&](TSNode ch, TSFieldId f) {
          if (f == g_.f_body) {
            ts::for_each_child(ch, true, [&](TSNode cc) {
              if (kind(cc) != k_case_clause) return;
              ts::for_each_child(cc, true, [&](TSNode part) {
                int k = kind(part);
                if (k == k_block)
                  visit_block(part, sc, true);
                else if (k == k_case_pattern)
                  bind_pattern_captures(part, sc);
                else
                  scan(part, sc);  // guards
              });
            });
          } else if (ts_node_is_named(ch)) {
            scan(ch, sc);
          }
        });
        return;
      case k_import_statement:
      case k_import_from_statement:
        visit_import(st, sc, conditional);
        return;
      case k_future_import_statement:
      case k_comment:
        return;
      case k_global_statement:
        ts::for_each_child(st, true, [&](TSNode ch) {
          if (kind(ch) == k_identifier) sc.globals.emplace(text(ch));
        });
        return;
      case k_nonlocal_statement:
        // The enclosing function's binding may be replaced from here: its type is unknown.
        ts::for_each_child(st, true, [&](TSNode ch) {
          if (kind(ch) != k_identifier) return;
          for (Scope* s = const_cast<Scope*>(sc.parent); s; s = const_cast<Scope*>(s->parent))
            s->rebound_elsewhere.emplace(text(ch));
        });
        return;
      case k_ERROR:
        // tree-sitter's recovery: definitions may still sit inside an ERROR node; keep what parses.
        ts::for_each_child(st, true, [&](TSNode ch) {
          int k = kind(ch);
          if (k == k_function_definition || k == k_class_definition || k == k_decorated_definition ||
              k == k_expression_statement || k == k_import_statement || k == k_import_from_statement)
            visit_statement(ch, sc, conditional);
          else
            scan(ch, sc);
        });
        return;
      default:
        scan(st, sc);
    }
  }

  // Last line of a node ignoring trailing comments and whitespace tokens (ast's end_lineno).
  int last_code_line(TSNode n) const {
    for (;;) {
      uint32_t cnt = ts_node_child_count(n);
      if (cnt == 0) return ts::end_line(n);
      TSNode pick{};
      bool found = false;
      // Scan children from the end for the last one that carries code.
      for (int64_t i = static_cast<int64_t>(cnt) - 1; i >= 0; --i) {
        TSNode ch = ts_node_child(n, static_cast<uint32_t>(i));
        if (kind(ch) == k_comment) continue;
        if (ts_node_end_byte(ch) == ts_node_start_byte(ch)) continue;
        if (trim(text(ch)).empty()) continue;
        pick = ch;
        found = true;
        break;
      }
      if (!found) return ts::end_line(n);
      n = pick;
    }
  }

  void visit_definition(TSNode def, TSNode decorated, Scope& sc) {
    bool is_class = kind(def) == k_class_definition;
    TSNode name_node = field(def, g_.f_name);
    TSNode body = field(def, g_.f_body);
    if (ts_node_is_null(name_node)) return;

    Entity e;
    e.name = std::string(text(name_node));
    e.qualname = sc.prefix + e.name;
    e.kind = is_class ? EntityKind::klass : (sc.type == ScopeType::klass ? EntityKind::method : EntityKind::function);
    e.parent = sc.entity;
    e.start_line = ts::start_line(def);
    e.end_line = last_code_line(def);
    TSNode outer = ts_node_is_null(decorated) ? def : decorated;
    e.decorated_start_line = ts::start_line(outer);
    e.start_byte = ts_node_start_byte(outer);
    e.end_byte = ts_node_end_byte(def);
    e.is_async = !is_class && text(def).substr(0, 5) == "async";

    // Header: from the def/class keyword to the ':' before the body.
    uint32_t header_end = ts_node_is_null(body) ? ts_node_end_byte(def) : ts_node_start_byte(body);
    TSNode colon{};
    ts::for_each_child(def, false, [&](TSNode ch) {
      if (kind(ch) == k_colon && ts_node_start_byte(ch) < header_end) colon = ch;
    });
    if (!ts_node_is_null(colon)) {
      header_end = ts_node_end_byte(colon);
      e.header_end_line = ts::start_line(colon);
    } else {
      e.header_end_line = e.start_line;
    }
    std::string_view header = src_.substr(ts_node_start_byte(def), header_end - ts_node_start_byte(def));
    e.signature = collapse_ws(header);

    if (!ts_node_is_null(decorated)) {
      ts::for_each_child(decorated, true, [&](TSNode ch) {
        if (kind(ch) != k_decorator) return;
        std::string_view d = trim(text(ch));
        if (!d.empty() && d[0] == '@') d = trim(d.substr(1));
        e.decorators.push_back(collapse_ws(d));
        scan(ch, sc);  // decorators are evaluated in the enclosing scope
      });
    }
    if (is_class) {
      TSNode sup = field(def, g_.f_superclasses);
      if (!ts_node_is_null(sup)) {
        ts::for_each_child(sup, true, [&](TSNode a) {
          int k = kind(a);
          if (k != k_keyword_argument && k != k_comment && k != k_list_splat && k != k_dictionary_splat)
            e.bases.push_back(collapse_ws(text(a)));
        });
        scan(sup, sc);
      }
    } else {
      extract_params(field(def, g_.f_parameters), e, sc);
      if (auto rt = field(def, g_.f_return_type); !ts_node_is_null(rt)) scan(rt, sc);
    }

    // Docstring and body statements.
    if (!ts_node_is_null(body)) {
      TSNode first{}, after_doc{};
      bool have_first = false;
      int idx = 0;
      ts::for_each_child(body, true, [&](TSNode st) {
        if (kind(st) == k_comment) return;
        if (idx == 0) {
          first = st;
          have_first = true;
        } else if (idx == 1) {
          after_doc = st;
        }
        ++idx;
      });
      bool has_doc = false;
      if (have_first && kind(first) == k_expression_statement) {
        std::string doc;
        if (docstring_of(first, doc)) {
          has_doc = true;
          e.docstring = clean_docstring(doc);
          e.doc_start_line = ts::start_line(first);
          e.doc_end_line = last_code_line(first);
        }
      }
      TSNode body_first = has_doc ? after_doc : first;
      if (!ts_node_is_null(body_first) && (has_doc ? idx > 1 : idx > 0)) {
        e.body_start_line = ts::start_line(body_first);
        e.body_end_line = e.end_line;
        e.body_start_byte = ts_node_start_byte(body_first);
      }
    }

    int index = static_cast<int>(out_.entities.size());
    bind(sc, e.name);  // a def or class inside a function binds a local name
    out_.entities.push_back(std::move(e));
    if (ts_node_is_null(body)) return;

    Scope& inner = scopes_.emplace_back();
    inner.entity = index;
    inner.parent = &sc;
    const Entity& me = out_.entities[index];
    if (is_class) {
      inner.type = ScopeType::klass;
      inner.prefix = me.qualname + ".";
    } else {
      inner.type = ScopeType::function;
      inner.prefix = me.qualname + ".<locals>.";
      for (const auto& p : me.params) {
        inner.locals.insert(p.name);
        ++inner.bind_events[p.name];  // a parameter is a binding of unknown type
      }
      bool is_static = std::find(me.decorators.begin(), me.decorators.end(), "staticmethod") != me.decorators.end();
      if (sc.type == ScopeType::klass && !is_static && !me.params.empty() && me.params[0].kind <= Parameter::positional)
        inner.receiver = me.params[0].name;
    }
    visit_block(body, inner, false);
  }

  static std::string collapse_ws(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    bool space = false;
    for (char c : s) {
      if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\\') {
        space = !out.empty();
        continue;
      }
      if (space) {
        // No space after an opening or before a closing bracket: "f( a )" -> "f(a)".
        char prev = out.back();
        if (prev != '(' && prev != '[' && c != ')' && c != ']' && c != ',' && c != ':') out.push_back(' ');
      }
      space = false;
      out.push_back(c);
    }
    return out;
  }

  // The value of a docstring statement (a plain or implicitly concatenated str literal; not f/b strings).
  bool docstring_of(TSNode stmt, std::string& doc) const {
    if (ts_node_named_child_count(stmt) != 1) return false;
    TSNode expr = ts_node_named_child(stmt, 0);
    int k = kind(expr);
    std::vector<TSNode> parts;
    if (k == k_string)
      parts.push_back(expr);
    else if (k == k_concatenated_string)
      ts::for_each_child(expr, true, [&](TSNode p) {
        if (kind(p) == k_string) parts.push_back(p);
      });
    else
      return false;
    for (TSNode s : parts) {
      std::string_view t = text(s);
      size_t q = t.find_first_of("'\"");
      if (q == std::string_view::npos) return false;
      std::string_view prefix = t.substr(0, q);
      bool raw = false;
      for (char c : prefix) {
        if (c == 'f' || c == 'F' || c == 'b' || c == 'B') return false;
        if (c == 'r' || c == 'R') raw = true;
      }
      std::string_view body = t.substr(q);
      size_t ql = (body.size() >= 6 && (body.substr(0, 3) == "\"\"\"" || body.substr(0, 3) == "'''")) ? 3 : 1;
      if (body.size() < 2 * ql) return false;
      body = body.substr(ql, body.size() - 2 * ql);
      doc += raw ? std::string(body) : unescape(body);
    }
    return true;
  }

  static std::string unescape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (size_t i = 0; i < s.size(); ++i) {
      char c = s[i];
      if (c != '\\' || i + 1 >= s.size()) {
        out.push_back(c);
        continue;
      }
      char n = s[++i];
      switch (n) {
        case 'n':
          out.push_back('\n');
          break;
        case 't':
          out.push_back('\t');
          break;
        case 'r':
          out.push_back('\r');
          break;
        case '\\':
          out.push_back('\\');
          break;
        case '\'':
          out.push_back('\'');
          break;
        case '"':
          out.push_back('"');
          break;
        case '\n':
          break;  // line continuation
        default:
          out.push_back('\\');
          out.push_back(n);
      }
    }
    return out;
  }

  void extract_params(TSNode params, Entity& e, Scope& sc) {
    if (ts_node_is_null(params)) return;
    bool kw_only = false;
    std::vector<size_t> before_slash;
    ts::for_each_child(params, true, [&](TSNode p) {
      Parameter prm;
      int k = kind(p);
      TSNode name_node{};
      switch (k) {
        case k_identifier:
          name_node = p;
          break;
        case k_typed_parameter: {
          TSNode inner = ts_node_named_child(p, 0);
          int ik = kind(inner);
          if (ik == k_list_splat_pattern) {
            prm.kind = Parameter::var_positional;
            name_node = ts_node_named_child(inner, 0);
          } else if (ik == k_dictionary_splat_pattern) {
            prm.kind = Parameter::var_keyword;
            name_node = ts_node_named_child(inner, 0);
          } else
            name_node = inner;
          if (auto t = field(p, g_.f_type); !ts_node_is_null(t)) {
            prm.annotation = collapse_ws(text(t));
            scan(t, sc);
          }
          break;
        }
        case k_default_parameter:
        case k_typed_default_parameter:
          name_node = field(p, g_.f_name);
          prm.has_default = true;
          if (auto t = field(p, g_.f_type); !ts_node_is_null(t)) {
            prm.annotation = collapse_ws(text(t));
            scan(t, sc);
          }
          scan(field(p, g_.f_value), sc);  // defaults are evaluated in the enclosing scope
          break;
        case k_list_splat_pattern:
          prm.kind = Parameter::var_positional;
          name_node = ts_node_named_child(p, 0);
          break;
        case k_dictionary_splat_pattern:
          prm.kind = Parameter::var_keyword;
          name_node = ts_node_named_child(p, 0);
          break;
        case k_keyword_separator:
          kw_only = true;
          return;
        case k_positional_separator:
          for (size_t i : before_slash) e.params[i].kind = Parameter::positional_only;
          return;
        default:
          return;
      }
      if (prm.kind == Parameter::positional && kw_only) prm.kind = Parameter::keyword_only;
      if (prm.kind == Parameter::var_positional) kw_only = true;
      if (!ts_node_is_null(name_node)) prm.name = std::string(text(name_node));
      if (prm.kind == Parameter::positional) before_slash.push_back(e.params.size());
      e.params.push_back(std::move(prm));
    });
  }

  // ---------------------------------------------------------------- module/class-level assignments
  void visit_assignment(TSNode asg, TSNode stmt, Scope& sc) {
    TSNode left = field(asg, g_.f_left);
    TSNode right = field(asg, g_.f_right);
    TSNode type = field(asg, g_.f_type);
    if (sc.type != ScopeType::function && !ts_node_is_null(left)) {
      std::vector<TSNode> names;
      // ast: an annotated assignment defines only a plain-name target; a plain one every name in
      // (nested) tuple/list targets, starred included.
      if (!ts_node_is_null(type)) {
        TSNode t = left;
        // "(x): int = 1" is a plain name target for ast; tree-sitter reads it as a one-element tuple
        // pattern (a real one-element tuple cannot be annotated, so this is never ambiguous).
        while ((kind(t) == k_parenthesized_expression || kind(t) == k_tuple_pattern) &&
               ts_node_named_child_count(t) == 1)
          t = ts_node_named_child(t, 0);
        if (kind(t) == k_identifier) names.push_back(t);
      } else {
        collect_target_names(left, names);
      }
      for (TSNode n : names) {
        Entity v;
        v.name = std::string(text(n));
        v.qualname = sc.prefix + v.name;
        v.kind = sc.type == ScopeType::klass ? EntityKind::attribute : EntityKind::variable;
        v.parent = sc.entity;
        v.start_line = ts::start_line(stmt);
        v.end_line = last_code_line(stmt);
        v.decorated_start_line = v.start_line;
        v.header_end_line = v.start_line;
        v.start_byte = ts_node_start_byte(stmt);
        v.end_byte = ts_node_end_byte(stmt);
        if (!ts_node_is_null(type)) v.signature = collapse_ws(text(type));
        out_.entities.push_back(std::move(v));
      }
    }
    bind_target(left, sc);
    note_constructor_binding(asg, sc);
    scan_store_target(left, sc);
    if (!ts_node_is_null(type)) scan(type, sc);
    if (!ts_node_is_null(right)) {
      if (kind(right) == k_assignment)
        visit_assignment(right, stmt, sc);  // a = b = value
      else
        scan(right, sc);
    }
  }

  void collect_target_names(TSNode t, std::vector<TSNode>& names) const {
    switch (kind(t)) {
      case k_identifier:
        names.push_back(t);
        break;
      case k_pattern_list:
      case k_tuple_pattern:
      case k_list_pattern:
      case k_list_splat_pattern:
      case k_parenthesized_expression:
      case k_tuple:
      case k_list:
        ts::for_each_child(t, true, [&](TSNode c) { collect_target_names(c, names); });
        break;
      default:
        break;
    }
  }

  // ---------------------------------------------------------------- imports
  void visit_import(TSNode st, Scope& sc, bool conditional) {
    int line = ts::start_line(st);
    auto add = [&](Import im) {
      im.line = line;
      im.scope = sc.entity;
      im.conditional = conditional;
      out_.imports.push_back(std::move(im));
    };
    if (kind(st) == k_import_statement) {
      ts::for_each_child_field(st, [&](TSNode ch, TSFieldId f) {
        if (f != g_.f_name) return;
        Import im;
        if (kind(ch) == k_aliased_import) {
          im.module = dotted(field(ch, g_.f_name));
          im.alias = std::string(text(field(ch, g_.f_alias)));
        } else {
          im.module = dotted(ch);
        }
        add(std::move(im));
      });
      return;
    }
    Import base;
    TSNode mod = field(st, g_.f_module_name);
    if (!ts_node_is_null(mod)) {
      if (kind(mod) == k_relative_import) {
        ts::for_each_child(mod, true, [&](TSNode ch) {
          if (kind(ch) == k_import_prefix)
            base.level = static_cast<int>(std::count(text(ch).begin(), text(ch).end(), '.'));
          else if (kind(ch) == k_dotted_name)
            base.module = dotted(ch);
        });
      } else {
        base.module = dotted(mod);
      }
    }
    ts::for_each_child_field(st, [&](TSNode ch, TSFieldId f) {
      if (kind(ch) == k_wildcard_import) {
        Import im = base;
        im.star = true;
        add(std::move(im));
        return;
      }
      if (f != g_.f_name) return;
      Import im = base;
      if (kind(ch) == k_aliased_import) {
        im.name = dotted(field(ch, g_.f_name));
        im.alias = std::string(text(field(ch, g_.f_alias)));
      } else {
        im.name = dotted(ch);
      }
      add(std::move(im));
    });
  }

  std::string dotted(TSNode n) const {
    std::string out;
    for (char c : text(n))
      if (!std::isspace(static_cast<unsigned char>(c)) && c != '\\') out.push_back(c);
    return out;
  }

  // ---------------------------------------------------------------- local bindings (function scopes)
  void bind_lambda_params(TSNode params, Scope& sc) {
    // Lambda parameters: conservatively treated as locals of the enclosing function.
    if (ts_node_is_null(params)) return;
    ts::for_each_child(params, true, [&](TSNode p) {
      TSNode nm = kind(p) == k_identifier ? p : field(p, g_.f_name);
      if (ts_node_is_null(nm) && ts_node_named_child_count(p) > 0) nm = ts_node_named_child(p, 0);
      if (!ts_node_is_null(nm) && kind(nm) == k_identifier) bind(sc, text(nm));
    });
  }

  void bind_target(TSNode t, Scope& sc) {
    if (ts_node_is_null(t) || sc.type != ScopeType::function) return;
    switch (kind(t)) {
      case k_identifier:
        bind(sc, text(t));
        break;
      case k_pattern_list:
      case k_tuple_pattern:
      case k_list_pattern:
      case k_list_splat_pattern:
      case k_parenthesized_expression:
      case k_tuple:
      case k_list:
      case k_as_pattern_target:
        ts::for_each_child(t, true, [&](TSNode c) { bind_target(c, sc); });
        break;
      default:
        break;  // attributes and subscripts bind nothing
    }
  }

  void bind_pattern_captures(TSNode n, Scope& sc) {
    if (sc.type != ScopeType::function) return;
    if (kind(n) == k_identifier) {
      bind(sc, text(n));
      return;
    }
    if (kind(n) == k_dotted_name) {
      // A lone name in a case pattern is a capture; dotted names are value patterns.
      if (ts_node_named_child_count(n) == 1) bind(sc, text(n));
      return;
    }
    if (kind(n) == k_keyword_argument) {
      if (auto v = field(n, g_.f_value); !ts_node_is_null(v)) bind_pattern_captures(v, sc);
      return;
    }
    ts::for_each_child(n, true, [&](TSNode c) { bind_pattern_captures(c, sc); });
  }

  // ---------------------------------------------------------------- references
  // Is `name` bound locally in this function or an enclosing function (closure)?
  static bool is_local(const Scope& sc, const std::string& name) {
    for (const Scope* s = &sc; s; s = s->parent) {
      if (s->type != ScopeType::function) continue;
      if (s->globals.count(name)) return false;
      if (s->locals.count(name)) return true;
    }
    return false;
  }
  // Every binding of `name` in this function is `name = C(...)` with one and the same C.
  static bool typed_local(const Scope& sc, const std::string& name) {
    auto it = sc.ctor_binds.find(name);
    if (it == sc.ctor_binds.end() || sc.globals.count(name) || sc.rebound_elsewhere.count(name)) return false;
    auto ev = sc.bind_events.find(name);
    if (ev == sc.bind_events.end() || ev->second != static_cast<int>(it->second.size())) return false;
    for (const auto& b : it->second)
      if (b.first != it->second.front().first) return false;
    return true;
  }
  static bool is_receiver(const Scope& sc, const std::string& name) {
    for (const Scope* s = &sc; s; s = s->parent) {
      if (s->type != ScopeType::function) continue;
      if (!s->receiver.empty() && s->receiver == name) return true;
      if (s->locals.count(name)) return false;  // rebound by an inner function
    }
    return false;
  }

  // "a.b.c" for attribute chains rooted at a name; "super().x" for super calls; empty otherwise.
  bool chain_of(TSNode n, std::string& out) const {
    int k = kind(n);
    if (k == k_identifier) {
      out.assign(text(n));
      return true;
    }
    if (k == k_attribute) {
      TSNode obj = field(n, g_.f_object);
      TSNode attr = field(n, g_.f_attribute);
      if (ts_node_is_null(obj) || ts_node_is_null(attr)) return false;
      if (!chain_of(obj, out)) return false;
      out.push_back('.');
      out.append(text(attr));
      return true;
    }
    if (k == k_call) {
      TSNode fn = field(n, g_.f_function);
      TSNode args = field(n, g_.f_arguments);
      if (!ts_node_is_null(fn) && kind(fn) == k_identifier && text(fn) == "super" && !ts_node_is_null(args) &&
          ts_node_named_child_count(args) == 0) {
        out = "super()";
        return true;
      }
    }
    return false;
  }

  void record(Scope& sc, std::string chain, RefKind rk, TSNode at, bool store = false, int nargs = -1,
              std::vector<std::string> kwargs = {}) {
    Reference r;
    r.scope = sc.entity;
    r.chain = std::move(chain);
    r.kind = rk;
    r.line = ts::start_line(at);
    r.is_store = store;
    r.nargs = nargs;
    r.kwargs = std::move(kwargs);
    out_.references.push_back(std::move(r));
    ref_scope_.push_back(&sc);
  }

  // `x = Chain(...)` in a function: a candidate for receiver-type inference.
  void note_constructor_binding(TSNode asg, Scope& sc) {
    if (sc.type != ScopeType::function) return;
    TSNode left = field(asg, g_.f_left), right = field(asg, g_.f_right);
    if (ts_node_is_null(left) || ts_node_is_null(right) || kind(left) != k_identifier || kind(right) != k_call) return;
    std::string chain;
    if (!chain_of(field(right, g_.f_function), chain) || chain == "super()") return;
    sc.ctor_binds[std::string(text(left))].emplace_back(std::move(chain), ts::start_line(asg));
  }

  // Assignment targets: plain names only bind; attribute targets (self.x = ...) are recorded as stores.
  void scan_store_target(TSNode t, Scope& sc) {
    if (ts_node_is_null(t)) return;
    switch (kind(t)) {
      case k_identifier:
        return;
      case k_attribute: {
        std::string chain;
        if (chain_of(t, chain))
          record(sc, std::move(chain), RefKind::attribute, t, true);
        else
          scan(field(t, g_.f_object), sc);
        return;
      }
      case k_pattern_list:
      case k_tuple_pattern:
      case k_list_pattern:
      case k_list_splat_pattern:
      case k_parenthesized_expression:
      case k_tuple:
      case k_list:
        ts::for_each_child(t, true, [&](TSNode c) { scan_store_target(c, sc); });
        return;
      default:
        scan(t, sc);
    }
  }

  void scan(TSNode n, Scope& sc) {
    if (ts_node_is_null(n)) return;
    switch (kind(n)) {
      case k_identifier: {
        std::string name(text(n));
        record(sc, std::move(name), RefKind::name, n);
        return;
      }
      case k_attribute: {
        std::string chain;
        if (chain_of(n, chain))
          record(sc, std::move(chain), RefKind::attribute, n);
        else
          scan(field(n, g_.f_object), sc);
        return;
      }
      case k_call: {
        TSNode fn = field(n, g_.f_function);
        TSNode args = field(n, g_.f_arguments);
        std::string chain;
        int nargs = 0;
        std::vector<std::string> kwargs;
        if (!ts_node_is_null(args) && kind(args) == k_argument_list) {
          ts::for_each_child(args, true, [&](TSNode a) {
            int ak = kind(a);
            if (ak == k_keyword_argument)
              kwargs.emplace_back(text(field(a, g_.f_name)));
            else if (ak == k_list_splat || ak == k_dictionary_splat)
              nargs = -1000000;
            else if (ak != k_comment && ak != k_line_continuation)
              ++nargs;  // `\` continuations are nodes too
          });
        } else if (!ts_node_is_null(args)) {
          nargs = 1;  // f(x for x in y)
        }
        if (nargs < 0) nargs = -1;
        if (chain_of(fn, chain) && chain != "super()")
          record(sc, std::move(chain), RefKind::call, n, false, nargs, std::move(kwargs));
        else
          scan_callee(fn, sc);
        if (!ts_node_is_null(args)) scan(args, sc);
        return;
      }
      case k_keyword_argument:
        scan(field(n, g_.f_value), sc);
        return;
      case k_lambda:
        bind_lambda_params(field(n, g_.f_parameters), sc);
        ts::for_each_child_field(n, [&](TSNode c, TSFieldId f) {
          if (f == g_.f_parameters) {
            ts::for_each_child(c, true, [&](TSNode p) {
              if (auto v = field(p, g_.f_value); !ts_node_is_null(v)) scan(v, sc);
            });
          } else if (ts_node_is_named(c)) {
            scan(c, sc);
          }
        });
        return;
      case k_assignment:
        bind_target(field(n, g_.f_left), sc);
        note_constructor_binding(n, sc);
        scan_store_target(field(n, g_.f_left), sc);
        scan(field(n, g_.f_type), sc);
        scan(field(n, g_.f_right), sc);
        return;
      case k_augmented_assignment:
        bind_target(field(n, g_.f_left), sc);
        scan_store_target(field(n, g_.f_left), sc);
        scan(field(n, g_.f_right), sc);
        return;
      case k_named_expression:
        if (auto nm = field(n, g_.f_name); !ts_node_is_null(nm)) bind(sc, text(nm));
        scan(field(n, g_.f_value), sc);
        return;
      case k_for_in_clause:
        bind_target(field(n, g_.f_left), sc);
        scan_store_target(field(n, g_.f_left), sc);
        ts::for_each_child_field(n, [&](TSNode c, TSFieldId f) {
          if (f == g_.f_right && ts_node_is_named(c)) scan(c, sc);
        });
        return;
      case k_as_pattern:
        // `with x as y`: only the value is a reference; the alias binds.
        ts::for_each_child_field(n, [&](TSNode c, TSFieldId f) {
          if (!ts_node_is_named(c)) return;
          if (f == g_.f_alias)
            bind_target(c, sc);
          else
            scan(c, sc);
        });
        return;
      case k_case_pattern:
      case k_comment:
      case k_string_content:
      case k_escape_sequence:
      case k_import_statement:
      case k_import_from_statement:
      case k_future_import_statement:
      case k_global_statement:
      case k_nonlocal_statement:
        return;
      case k_function_definition:
      case k_class_definition:
      case k_decorated_definition:
        visit_statement(n, sc, false);
        return;
      case k_string: {
        // Only f-strings hold expressions; plain literals (docstrings, data) are skipped whole.
        std::string_view t = text(n);
        size_t q = t.find_first_of("'\"");
        if (q == std::string_view::npos || t.substr(0, q).find_first_of("fF") == std::string_view::npos) return;
        ts::for_each_child(n, true, [&](TSNode c) { scan(c, sc); });
        return;
      }
      default:
        if (ts_node_child_count(n) == 0) return;  // literals and other leaves
        ts::for_each_child(n, true, [&](TSNode c) { scan(c, sc); });
    }
  }

  void scan_callee(TSNode fn, Scope& sc) {
    if (ts_node_is_null(fn)) return;
    if (kind(fn) == k_attribute) {
      std::string chain;
      if (!chain_of(fn, chain)) scan(field(fn, g_.f_object), sc);
      return;
    }
    scan(fn, sc);
  }
};

}  // namespace

void extract_python(TSParser* parser, std::string_view source, ParsedFile& out) {
  ts_parser_set_language(parser, grammar().lang);
  TSTree* tree = ts_parser_parse_string(parser, nullptr, source.data(), static_cast<uint32_t>(source.size()));
  if (!tree) {
    out.errors.push_back({1, 1, "tree-sitter returned no tree (parse cancelled or timed out)"});
    return;
  }
  TSNode root = ts_tree_root_node(tree);
  if (ts_node_has_error(root)) {
    // Report the error regions; the extractor keeps every definition tree-sitter recovered.
    std::vector<TSNode> stack{root};
    while (!stack.empty() && out.errors.size() < 50) {
      TSNode n = stack.back();
      stack.pop_back();
      if (ts_node_is_error(n) || ts_node_is_missing(n)) {
        out.errors.push_back({ts::start_line(n), ts::end_line(n),
                              ts_node_is_missing(n) ? std::string("missing ") + ts_node_type(n) : "syntax error"});
        continue;
      }
      if (!ts_node_has_error(n)) continue;
      uint32_t c = ts_node_child_count(n);
      for (uint32_t i = c; i-- > 0;) stack.push_back(ts_node_child(n, i));
    }
  }
  Extractor ex(source, out);
  ex.run(root);
  ts_tree_delete(tree);
}

}  // namespace repoctx
