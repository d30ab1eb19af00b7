// Python extraction over tree-sitter-python: definitions (with ast-identical line ranges), imports,
// and the references of every body, filtered by Python's scoping rules.
//
// The parts: python/grammar (node kinds), python/text (literal values, headers), python/scopes (binding
// and the local-name rule), python/references (expressions, iterative). This file walks statements and
// definitions; blocks nest at most kMaxBlockNesting levels (CPython allows 100 levels of indentation).
#include <tree_sitter/api.h>

#include <algorithm>
#include <string>
#include <vector>

#include "repo/parser.h"
#include "repo/python/grammar.h"
#include "repo/python/references.h"
#include "repo/python/scopes.h"
#include "repo/python/text.h"
#include "repo/ts_util.h"
#include "util/text.h"

namespace repoctx {
namespace {

using namespace py;

class PythonExtractor {
 public:
  PythonExtractor(std::string_view src, ParsedFile& out)
      : cx_(src, out), g_(cx_.g), refs_(cx_, [this](TSNode def, Scope& sc) { visit_statement(def, sc, false); }) {}

  void run(TSNode root) {
    visit_block(root, cx_.scopes.module(), false);
    cx_.scopes.finish(cx_.out);
  }

 private:
  Context cx_;
  const Grammar& g_;
  ReferenceScanner refs_;
  int block_depth_ = 0;

  int kind(TSNode n) const { return cx_.kind(n); }
  std::string_view text(TSNode n) const { return cx_.text(n); }
  TSNode field(TSNode n, TSFieldId f) const { return cx_.field(n, f); }
  void scan(TSNode n, Scope& sc) { refs_.scan(n, sc); }

  // ---------------------------------------------------------------- statements
  void visit_block(TSNode block, Scope& sc, bool conditional) {
    if (block_depth_ >= kMaxBlockNesting) {
      cx_.too_deep(block, "blocks", kMaxBlockNesting);
      return;
    }
    ++block_depth_;
    ts::for_each_child(block, true, [&](TSNode st) { visit_statement(st, sc, conditional); });
    --block_depth_;
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
        visit_expression_statement(st, sc);
        return;
      case k_if_statement:
        visit_if(st, sc);
        return;
      case k_for_statement:
      case k_while_statement:
        visit_loop(st, sc);
        return;
      case k_try_statement:
        visit_try(st, sc);
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
        visit_match(st, sc);
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
          for (Scope* s = sc.parent; s; s = s->parent) s->rebound_elsewhere.emplace(text(ch));
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

  void visit_expression_statement(TSNode st, Scope& sc) {
    ts::for_each_child(st, true, [&](TSNode ch) {
      int k = kind(ch);
      if (k == k_assignment) {
        visit_assignment(ch, st, sc);
      } else if (k == k_augmented_assignment) {
        refs_.bind_target(field(ch, g_.f_left), sc);
        refs_.scan_store_target(field(ch, g_.f_left), sc);
        scan(field(ch, g_.f_right), sc);
      } else {
        scan(ch, sc);
      }
    });
  }

  void visit_if(TSNode st, Scope& sc) {
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
  }

  void visit_loop(TSNode st, Scope& sc) {
    if (kind(st) == k_for_statement) {
      refs_.bind_target(field(st, g_.f_left), sc);
      refs_.scan_store_target(field(st, g_.f_left), sc);
      scan(field(st, g_.f_right), sc);
    } else {
      scan(field(st, g_.f_condition), sc);
    }
    visit_block(field(st, g_.f_body), sc, true);
    if (auto alt = field(st, g_.f_alternative); !ts_node_is_null(alt)) visit_block(field(alt, g_.f_body), sc, true);
  }

  void visit_try(TSNode st, Scope& sc) {
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
              refs_.bind_target(part, sc);  // `except E as e`
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
  }

  void visit_match(TSNode st, Scope& sc) {
    ts::for_each_child_field(st, [&](TSNode ch, TSFieldId f) {
      if (f == g_.f_body) {
        ts::for_each_child(ch, true, [&](TSNode cc) {
          if (kind(cc) != k_case_clause) return;
          ts::for_each_child(cc, true, [&](TSNode part) {
            int k = kind(part);
            if (k == k_block)
              visit_block(part, sc, true);
            else if (k == k_case_pattern)
              refs_.bind_pattern_captures(part, sc);
            else
              scan(part, sc);  // guards
          });
        });
      } else if (ts_node_is_named(ch)) {
        scan(ch, sc);
      }
    });
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

  // ---------------------------------------------------------------- definitions
  void visit_definition(TSNode def, TSNode decorated, Scope& sc) {
    TSNode name_node = field(def, g_.f_name);
    if (ts_node_is_null(name_node)) return;
    TSNode body = field(def, g_.f_body);
    Entity e = definition_header(def, decorated, name_node, body, sc);
    if (!ts_node_is_null(decorated)) {
      ts::for_each_child(decorated, true, [&](TSNode ch) {
        if (kind(ch) != k_decorator) return;
        std::string_view d = trim(text(ch));
        if (!d.empty() && d[0] == '@') d = trim(d.substr(1));
        e.decorators.push_back(collapse_ws(d));
        scan(ch, sc);  // decorators are evaluated in the enclosing scope
      });
    }
    if (e.kind == EntityKind::klass) {
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
    if (!ts_node_is_null(body)) read_docstring_and_body(body, e);

    int index = static_cast<int>(cx_.out.entities.size());
    ScopeTable::bind(sc, e.name);  // a def or class inside a function binds a local name
    cx_.out.entities.push_back(std::move(e));
    if (ts_node_is_null(body)) return;
    visit_block(body, open_body_scope(index, sc), false);
  }

  // The entity of a def or class: names, kind, lines, bytes and the header text (to the ':' before the body).
  Entity definition_header(TSNode def, TSNode decorated, TSNode name_node, TSNode body, const Scope& sc) const {
    bool is_class = kind(def) == k_class_definition;
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
    std::string_view header = cx_.src.substr(ts_node_start_byte(def), header_end - ts_node_start_byte(def));
    e.signature = collapse_ws(header);
    return e;
  }

  // The docstring (ast's rules) and where the statements after it start.
  void read_docstring_and_body(TSNode body, Entity& e) const {
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
    for (TSNode s : parts)
      if (!append_string_value(text(s), doc)) return false;
    return true;
  }

  // The scope of a def's or class's body, with its parameters (functions) bound.
  Scope& open_body_scope(int index, Scope& sc) {
    const Entity& me = cx_.out.entities[index];
    if (me.kind == EntityKind::klass) return cx_.scopes.open(ScopeType::klass, index, &sc, me.qualname + ".");
    Scope& inner = cx_.scopes.open(ScopeType::function, index, &sc, me.qualname + ".<locals>.");
    for (const auto& p : me.params) {
      inner.locals.insert(p.name);
      ++inner.bind_events[p.name];  // a parameter is a binding of unknown type
    }
    bool is_static = std::find(me.decorators.begin(), me.decorators.end(), "staticmethod") != me.decorators.end();
    if (sc.type == ScopeType::klass && !is_static && !me.params.empty() && me.params[0].kind <= Parameter::positional)
      inner.receiver = me.params[0].name;
    return inner;
  }

  void extract_params(TSNode params, Entity& e, Scope& sc) {
    if (ts_node_is_null(params)) return;
    bool kw_only = false;
    std::vector<size_t> before_slash;
    ts::for_each_child(params, true, [&](TSNode p) {
      Parameter prm;
      TSNode name_node{};
      switch (kind(p)) {
        case k_identifier:
          name_node = p;
          break;
        case k_typed_parameter:
          name_node = typed_parameter(p, prm, sc);
          break;
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

  // `x: T`, `*args: T`, `**kw: T`: the kind and annotation into `prm`; returns the name node.
  TSNode typed_parameter(TSNode p, Parameter& prm, Scope& sc) {
    TSNode inner = ts_node_named_child(p, 0);
    TSNode name_node = inner;
    int ik = kind(inner);
    if (ik == k_list_splat_pattern) {
      prm.kind = Parameter::var_positional;
      name_node = ts_node_named_child(inner, 0);
    } else if (ik == k_dictionary_splat_pattern) {
      prm.kind = Parameter::var_keyword;
      name_node = ts_node_named_child(inner, 0);
    }
    if (auto t = field(p, g_.f_type); !ts_node_is_null(t)) {
      prm.annotation = collapse_ws(text(t));
      scan(t, sc);
    }
    return name_node;
  }

  // ---------------------------------------------------------------- module/class-level assignments
  // `a = b = value` is a chain of assignments in the tree: walked as a loop, whatever its length.
  void visit_assignment(TSNode asg, TSNode stmt, Scope& sc) {
    int end_line = -1;  // the statement's, computed once: walking to it is linear in the chain's length
    for (;;) {
      TSNode left = field(asg, g_.f_left);
      TSNode right = field(asg, g_.f_right);
      TSNode type = field(asg, g_.f_type);
      if (sc.type != ScopeType::function && !ts_node_is_null(left)) {
        if (end_line < 0) end_line = last_code_line(stmt);
        add_variables(left, type, stmt, end_line, sc);
      }
      refs_.bind_target(left, sc);
      refs_.note_constructor_binding(asg, sc);
      refs_.scan_store_target(left, sc);
      if (!ts_node_is_null(type)) scan(type, sc);
      if (ts_node_is_null(right)) return;
      if (kind(right) != k_assignment) {
        scan(right, sc);
        return;
      }
      asg = right;
    }
  }

  // The variables (module level) or attributes (class level) an assignment defines.
  void add_variables(TSNode left, TSNode type, TSNode stmt, int end_line, const Scope& sc) {
    std::vector<TSNode> names;
    // ast: an annotated assignment defines only a plain-name target; a plain one every name in
    // (nested) tuple/list targets, starred included.
    if (!ts_node_is_null(type)) {
      TSNode t = left;
      // "(x): int = 1" is a plain name target for ast; tree-sitter reads it as a one-element tuple
      // pattern (a real one-element tuple cannot be annotated, so this is never ambiguous).
      while ((kind(t) == k_parenthesized_expression || kind(t) == k_tuple_pattern) && ts_node_named_child_count(t) == 1)
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
      v.end_line = end_line;
      v.decorated_start_line = v.start_line;
      v.header_end_line = v.start_line;
      v.start_byte = ts_node_start_byte(stmt);
      v.end_byte = ts_node_end_byte(stmt);
      if (!ts_node_is_null(type)) v.signature = collapse_ws(text(type));
      cx_.out.entities.push_back(std::move(v));
    }
  }

  // Every name of a (nested) target, in source order; iterative (targets can nest arbitrarily deep).
  void collect_target_names(TSNode root, std::vector<TSNode>& names) const {
    std::vector<TSNode> todo{root};
    while (!todo.empty()) {
      TSNode t = todo.back();
      todo.pop_back();
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
        case k_list: {
          size_t mark = todo.size();
          ts::for_each_child(t, true, [&](TSNode c) { todo.push_back(c); });
          std::reverse(todo.begin() + static_cast<long>(mark), todo.end());
          break;
        }
        default:
          break;
      }
    }
  }

  // ---------------------------------------------------------------- imports
  void visit_import(TSNode st, Scope& sc, bool conditional) {
    int line = ts::start_line(st);
    auto add = [&](Import im) {
      im.line = line;
      im.scope = sc.entity;
      im.conditional = conditional;
      cx_.out.imports.push_back(std::move(im));
    };
    if (kind(st) == k_import_statement) {
      ts::for_each_child_field(st, [&](TSNode ch, TSFieldId f) {
        if (f != g_.f_name) return;
        Import im;
        if (kind(ch) == k_aliased_import) {
          im.module = dotted_name(text(field(ch, g_.f_name)));
          im.alias = std::string(text(field(ch, g_.f_alias)));
        } else {
          im.module = dotted_name(text(ch));
        }
        add(std::move(im));
      });
      return;
    }
    Import base = import_base(field(st, g_.f_module_name));
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
        im.name = dotted_name(text(field(ch, g_.f_name)));
        im.alias = std::string(text(field(ch, g_.f_alias)));
      } else {
        im.name = dotted_name(text(ch));
      }
      add(std::move(im));
    });
  }

  // The module and relative level of `from MODULE import ...`.
  Import import_base(TSNode mod) const {
    Import base;
    if (ts_node_is_null(mod)) return base;
    if (kind(mod) != k_relative_import) {
      base.module = dotted_name(text(mod));
      return base;
    }
    ts::for_each_child(mod, true, [&](TSNode ch) {
      if (kind(ch) == k_import_prefix)
        base.level = static_cast<int>(std::count(text(ch).begin(), text(ch).end(), '.'));
      else if (kind(ch) == k_dotted_name)
        base.module = dotted_name(text(ch));
    });
    return base;
  }
};

}  // namespace

void extract_python(TSParser* parser, std::string_view source, ParsedFile& out, const std::atomic<bool>* stop) {
  ParseControl ctl;
  ctl.stop = stop;
  ctl.memory_limit = tree_memory_limit(source.size());
  TSTree* tree = parse_tree(parser, grammar().lang, source, &ctl);
  if (!tree) {
    if (ctl.over_limit)
      out.errors.push_back(tree_too_large(out, ctl, source.size()));
    else
      out.errors.push_back({1, 1, "tree-sitter returned no tree (parse cancelled or timed out)"});
    return;
  }
  TSNode root = ts_tree_root_node(tree);
  record_syntax_errors(root, out);
  PythonExtractor ex(source, out);
  ex.run(root);
  ts_tree_delete(tree);
}

}  // namespace repoctx
