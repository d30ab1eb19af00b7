// Go extraction over tree-sitter-go: the package clause, imports, functions, methods (named by their
// receiver's type, "T.M"), types (struct -> class, interface -> interface, any other defined type or alias ->
// class), struct fields and interface methods as members of their type, embedded types as bases, and
// package-level constants and variables; inside bodies, calls, selector chains, composite literals, type
// names and package-level names (locals excluded).
//
// Lines follow go/ast (the oracle tests/oracle/go_entities.go checks them): a declaration starts at its
// `func`/`type`/`const`/`var` keyword when it declares one thing, at its spec inside a parenthesised group.
#include <tree_sitter/api.h>

#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "repo/parser.h"
#include "repo/reference_walk.h"
#include "repo/ts_util.h"
#include "util/text.h"

extern "C" const TSLanguage* tree_sitter_go(void);

namespace repoctx {
namespace {

enum GoKind : int {
  g_package_clause,
  g_package_identifier,
  g_import_declaration,
  g_import_spec,
  g_import_spec_list,
  g_function_declaration,
  g_method_declaration,
  g_type_declaration,
  g_type_spec,
  g_type_alias,
  g_struct_type,
  g_interface_type,
  g_field_declaration_list,
  g_field_declaration,
  g_method_elem,
  g_type_elem,
  g_const_declaration,
  g_var_declaration,
  g_const_spec,
  g_var_spec,
  g_var_spec_list,
  g_identifier,
  g_field_identifier,
  g_type_identifier,
  g_qualified_type,
  g_pointer_type,
  g_generic_type,
  g_parameter_list,
  g_parameter_declaration,
  g_variadic_parameter_declaration,
  g_call_expression,
  g_selector_expression,
  g_composite_literal,
  g_comment,
  g_block,
  g_statement_list,
  g_short_var_declaration,
  g_range_clause,
  g_expression_list,
  g_func_literal,
  g_interpreted_string_literal,
  g_raw_string_literal,
  g_blank_identifier,
  g_dot,
  g_variadic_argument,
  g_argument_list,
  g_keyed_element,
  g_literal_value,
  g_labeled_statement,
  g_label_name,
  g_type_switch_statement,
  g_receive_statement,
  g_ERROR,
};
const std::vector<const char*> kGoKinds = {
    "package_clause",
    "package_identifier",
    "import_declaration",
    "import_spec",
    "import_spec_list",
    "function_declaration",
    "method_declaration",
    "type_declaration",
    "type_spec",
    "type_alias",
    "struct_type",
    "interface_type",
    "field_declaration_list",
    "field_declaration",
    "method_elem",
    "type_elem",
    "const_declaration",
    "var_declaration",
    "const_spec",
    "var_spec",
    "var_spec_list",
    "identifier",
    "field_identifier",
    "type_identifier",
    "qualified_type",
    "pointer_type",
    "generic_type",
    "parameter_list",
    "parameter_declaration",
    "variadic_parameter_declaration",
    "call_expression",
    "selector_expression",
    "composite_literal",
    "comment",
    "block",
    "statement_list",
    "short_var_declaration",
    "range_clause",
    "expression_list",
    "func_literal",
    "interpreted_string_literal",
    "raw_string_literal",
    "blank_identifier",
    "dot",
    "variadic_argument",
    "argument_list",
    "keyed_element",
    "literal_value",
    "labeled_statement",
    "label_name",
    "type_switch_statement",
    "receive_statement",
    "ERROR",
};

struct GoGrammar {
  const TSLanguage* lang = tree_sitter_go();
  ts::KindTable kinds{lang, kGoKinds};
  TSFieldId f(const char* n) const {
    return ts_language_field_id_for_name(lang, n, static_cast<uint32_t>(std::strlen(n)));
  }
  TSFieldId f_name = f("name"), f_body = f("body"), f_type = f("type"), f_parameters = f("parameters"),
            f_receiver = f("receiver"), f_result = f("result"), f_path = f("path"), f_function = f("function"),
            f_arguments = f("arguments"), f_operand = f("operand"), f_field = f("field"), f_package = f("package"),
            f_left = f("left"), f_right = f("right"), f_value = f("value"), f_alias = f("alias"), f_label = f("label");
};
const GoGrammar& go_grammar() {
  static const GoGrammar g;
  return g;
}

// Go's predeclared identifiers: references to them name nothing in a repository (unless it redeclares one,
// which the resolver would still find through the package's own definitions).
bool is_predeclared(std::string_view n) {
  static const std::unordered_set<std::string_view> names = {
      "any",    "bool",   "byte",   "comparable", "complex64", "complex128", "error",  "float32", "float64",
      "int",    "int8",   "int16",  "int32",      "int64",     "rune",       "string", "uint",    "uint8",
      "uint16", "uint32", "uint64", "uintptr",    "true",      "false",      "iota",   "nil",     "append",
      "cap",    "clear",  "close",  "complex",    "copy",      "delete",     "imag",   "len",     "make",
      "max",    "min",    "new",    "panic",      "print",     "println",    "real",   "recover", "_"};
  return names.count(n) > 0;
}

// The type a receiver or embedded field names, without pointer, package or type arguments: `*Set[T]` -> "Set".
std::string base_type_name(std::string_view t) {
  size_t i = 0;
  while (i < t.size() && (t[i] == '*' || t[i] == '(' || std::isspace(static_cast<unsigned char>(t[i])))) ++i;
  size_t j = i;
  while (j < t.size() && (std::isalnum(static_cast<unsigned char>(t[j])) || t[j] == '_' || t[j] == '.' ||
                          static_cast<unsigned char>(t[j]) >= 0x80))
    ++j;
  return std::string(t.substr(i, j - i));
}

class GoExtractor : ReferenceWalk {
 public:
  GoExtractor(std::string_view src, ParsedFile& out) : ReferenceWalk(out), src_(src), out_(out), g_(go_grammar()) {}

  void run(TSNode root) {
    ts::for_each_child(root, true, [&](TSNode n) {
      switch (kind(n)) {
        case g_package_clause:
          ts::for_each_child(n, true, [&](TSNode c) {
            if (kind(c) == g_package_identifier) out_.package.assign(text(c));
          });
          break;
        case g_import_declaration:
          visit_imports(n);
          break;
        case g_function_declaration:
        case g_method_declaration:
          visit_function(n);
          break;
        case g_type_declaration:
          visit_type_declaration(n);
          break;
        case g_const_declaration:
        case g_var_declaration:
          visit_value_declaration(n);
          break;
        default:
          break;
      }
    });
  }

 private:
  std::string_view src_;
  ParsedFile& out_;
  const GoGrammar& g_;
  std::unordered_set<std::string> locals_;  // names bound inside the function being scanned

  int kind(TSNode n) const { return g_.kinds(n); }
  std::string_view text(TSNode n) const { return ts::text(n, src_); }
  TSNode field(TSNode n, TSFieldId f) const { return ts_node_child_by_field_id(n, f); }
  static std::string collapse(std::string_view s) { return collapse_spaces(s); }

  // ---------------------------------------------------------------- imports
  void visit_imports(TSNode decl) {
    ts::for_each_child(decl, true, [&](TSNode c) {
      if (kind(c) == g_import_spec)
        visit_import_spec(c);
      else if (kind(c) == g_import_spec_list)
        ts::for_each_child(c, true, [&](TSNode s) {
          if (kind(s) == g_import_spec) visit_import_spec(s);
        });
    });
  }

  // `import "a/b/c"` binds the package's name, by convention the path's last element ("c"; a major-version
  // suffix "/v2" or ".v3" is skipped); `import x "a/b"` binds x; `import . "a/b"` is a star import;
  // `import _ "a/b"` binds nothing but still loads the package.
  void visit_import_spec(TSNode spec) {
    TSNode path = field(spec, g_.f_path);
    if (ts_node_is_null(path)) return;
    std::string_view p = text(path);
    if (p.size() < 2) return;
    Import im;
    im.line = ts::start_line(spec);
    im.module.assign(p.substr(1, p.size() - 2));
    TSNode name = field(spec, g_.f_name);
    if (!ts_node_is_null(name)) {
      if (kind(name) == g_dot)
        im.star = true;
      else
        im.alias.assign(text(name));
    }
    if (im.alias.empty() && !im.star) im.alias = default_package_name(im.module);
    out_.imports.push_back(std::move(im));
  }

  static std::string default_package_name(const std::string& path) {
    auto last_element = [](std::string_view s) { return s.substr(s.rfind('/') + 1); };
    std::string_view p = path;
    std::string_view last = last_element(p);
    auto is_major = [](std::string_view s) {
      if (s.size() < 2 || s[0] != 'v') return false;
      for (size_t i = 1; i < s.size(); ++i)
        if (!std::isdigit(static_cast<unsigned char>(s[i]))) return false;
      return true;
    };
    if (is_major(last) && p.size() > last.size()) last = last_element(p.substr(0, p.size() - last.size() - 1));
    if (size_t dot = last.rfind(".v"); dot != std::string_view::npos && is_major(last.substr(dot + 1)))
      last = last.substr(0, dot);  // gopkg.in/yaml.v3
    std::string out(last);
    for (auto& c : out)
      if (c == '-' || c == '.') c = '_';
    return out;
  }

  // ---------------------------------------------------------------- definitions
  // Consecutive `//` or `/* */` comments ending on the line before `n` (go/ast's Doc).
  std::string doc_before(TSNode n) const {
    std::vector<std::string_view> lines;
    int expect = ts::start_line(n) - 1;
    for (TSNode p = ts_node_prev_sibling(n); !ts_node_is_null(p) && kind(p) == g_comment; p = ts_node_prev_sibling(p)) {
      if (ts::end_line(p) != expect) break;
      lines.push_back(text(p));
      expect = ts::start_line(p) - 1;
    }
    std::string out;
    for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
      std::string_view t = *it;
      if (starts_with(t, "//"))
        t = t.substr(2);
      else if (starts_with(t, "/*") && t.size() >= 4)
        t = t.substr(2, t.size() - 4);
      for (auto line : split_lines(t)) {
        if (!out.empty()) out.push_back('\n');
        out.append(trim(line));
      }
    }
    return std::string(trim(out));
  }

  // `start` is the node whose first line the entity starts on (the declaration keyword, or the spec in a
  // group); `n` the node that ends it.
  int add_entity(TSNode start, TSNode n, EntityKind k, std::string name, std::string qualname, int parent) {
    Entity e;
    e.name = std::move(name);
    e.qualname = std::move(qualname);
    e.kind = k;
    e.parent = parent;
    e.start_line = ts::start_line(start);
    e.end_line = ts::end_line(n);
    e.decorated_start_line = e.start_line;
    e.start_byte = ts_node_start_byte(start);
    e.end_byte = ts_node_end_byte(n);
    e.docstring = doc_before(start);
    e.header_end_line = e.end_line;
    out_.entities.push_back(std::move(e));
    return static_cast<int>(out_.entities.size()) - 1;
  }

  // Header, signature and body lines of a function-like entity from its body block.
  void set_body(int idx, TSNode body) {
    Entity& e = out_.entities[idx];
    uint32_t hdr_end = ts_node_is_null(body) ? e.end_byte : ts_node_start_byte(body);
    e.signature = collapse(src_.substr(e.start_byte, hdr_end - e.start_byte));
    if (ts_node_is_null(body)) return;
    e.header_end_line = ts::start_line(body);
    TSNode first{};
    ts::for_each_child(body, true, [&](TSNode c) {
      if (!ts_node_is_null(first)) return;
      if (kind(c) == g_statement_list && ts_node_named_child_count(c) > 0) {
        ts::for_each_child(c, true, [&](TSNode s) {
          if (ts_node_is_null(first) && kind(s) != g_comment) first = s;
        });
      }
    });
    if (ts_node_is_null(first)) return;
    e.body_start_line = ts::start_line(first);
    e.body_end_line = e.end_line;
    e.body_start_byte = ts_node_start_byte(first);
  }

  void add_params(int idx, TSNode list, bool receiver) {
    if (ts_node_is_null(list)) return;
    ts::for_each_child(list, true, [&](TSNode p) {
      int pk = kind(p);
      if (pk != g_parameter_declaration && pk != g_variadic_parameter_declaration) return;
      std::string type = collapse(text(field(p, g_.f_type)));
      bool named = false;
      ts::for_each_child_field(p, [&](TSNode c, TSFieldId f) {
        if (f != g_.f_name) return;
        named = true;
        Parameter prm;
        prm.name.assign(text(c));
        prm.annotation = type;
        if (pk == g_variadic_parameter_declaration) prm.kind = Parameter::var_positional;
        out_.entities[idx].params.push_back(std::move(prm));
      });
      if (!named && !receiver) {  // `func(int, string)`: unnamed parameters keep their types
        Parameter prm;
        prm.annotation = type;
        if (pk == g_variadic_parameter_declaration) prm.kind = Parameter::var_positional;
        out_.entities[idx].params.push_back(std::move(prm));
      }
      if (!named && receiver) {  // `func (T) M()`: a receiver without a name
        Parameter prm;
        prm.annotation = type;
        out_.entities[idx].params.push_back(std::move(prm));
      }
    });
  }

  void visit_function(TSNode n) {
    TSNode name = field(n, g_.f_name);
    if (ts_node_is_null(name)) return;
    std::string nm(text(name));
    bool is_method = kind(n) == g_method_declaration;
    std::string qual = nm;
    TSNode recv = is_method ? field(n, g_.f_receiver) : TSNode{};
    if (is_method) {
      std::string type;
      if (!ts_node_is_null(recv))
        ts::for_each_child(recv, true, [&](TSNode p) {
          if (type.empty() && kind(p) == g_parameter_declaration) type = base_type_name(text(field(p, g_.f_type)));
        });
      if (!type.empty()) qual = type + "." + nm;
    }
    int idx = add_entity(n, n, is_method ? EntityKind::method : EntityKind::function, nm, qual, -1);
    if (is_method) add_params(idx, recv, true);
    add_params(idx, field(n, g_.f_parameters), false);
    set_body(idx, field(n, g_.f_body));
    locals_.clear();
    for (const auto& p : out_.entities[idx].params)
      if (!p.name.empty()) locals_.insert(p.name);
    collect_result_names(field(n, g_.f_result));
    TSNode body = field(n, g_.f_body);
    if (!ts_node_is_null(body)) collect_locals(body);
    // The receiver is resolved by the method's first parameter (its type), not skipped as a local.
    if (is_method && !out_.entities[idx].params.empty()) locals_.erase(out_.entities[idx].params[0].name);
    scan_types(field(n, g_.f_parameters), idx);
    scan_types(field(n, g_.f_result), idx);
    if (!ts_node_is_null(body)) scan(body, idx);
    locals_.clear();
  }

  void collect_result_names(TSNode result) {
    if (ts_node_is_null(result) || kind(result) != g_parameter_list) return;
    ts::for_each_child(result, true, [&](TSNode p) {
      ts::for_each_child_field(p, [&](TSNode c, TSFieldId f) {
        if (f == g_.f_name) locals_.emplace(text(c));
      });
    });
  }

  void visit_type_declaration(TSNode decl) {
    int specs = 0;
    ts::for_each_child(decl, true, [&](TSNode c) { specs += kind(c) == g_type_spec || kind(c) == g_type_alias; });
    ts::for_each_child(decl, true, [&](TSNode spec) {
      if (kind(spec) != g_type_spec && kind(spec) != g_type_alias) return;
      TSNode name = field(spec, g_.f_name);
      if (ts_node_is_null(name)) return;
      TSNode type = field(spec, g_.f_type);
      bool grouped = specs > 1 || has_paren(decl);
      int tk = ts_node_is_null(type) ? -1 : kind(type);
      EntityKind ek = tk == g_interface_type ? EntityKind::interface : EntityKind::klass;
      std::string nm(text(name));
      int idx = add_entity(grouped ? spec : decl, spec, ek, nm, nm, -1);
      if (grouped && out_.entities[idx].docstring.empty()) out_.entities[idx].docstring = doc_before(decl);
      out_.entities[idx].signature = type_signature(spec, type, tk);
      if (tk == g_struct_type)
        visit_struct(type, idx, nm);
      else if (tk == g_interface_type)
        visit_interface(type, idx, nm);
      else
        scan_types(type, idx);
    });
  }

  // "type T[P any] struct", "type I interface", "type ID int": the header of a type, without its members.
  std::string type_signature(TSNode spec, TSNode type, int tk) const {
    std::string_view whole = text(spec);
    if (tk == g_struct_type || tk == g_interface_type) {
      size_t head = ts_node_start_byte(type) - ts_node_start_byte(spec);
      return "type " + collapse(whole.substr(0, head)) + (tk == g_struct_type ? " struct" : " interface");
    }
    return "type " + collapse(whole.substr(0, std::min<size_t>(whole.size(), 200)));
  }

  // A parenthesised group, `var ( ... )` (whose specs tree-sitter may hold in a var_spec_list).
  bool has_paren(TSNode decl) const {
    bool found = false;
    ts::for_each_child(decl, false, [&](TSNode c) {
      if ((!ts_node_is_named(c) && text(c) == "(") || kind(c) == g_var_spec_list) found = true;
    });
    return found;
  }

  void visit_struct(TSNode st, int owner, const std::string& prefix) {
    ts::for_each_child(st, true, [&](TSNode list) {
      if (kind(list) != g_field_declaration_list) return;
      ts::for_each_child(list, true, [&](TSNode fd) {
        if (kind(fd) != g_field_declaration) return;
        TSNode type = field(fd, g_.f_type);
        bool named = false;
        ts::for_each_child_field(fd, [&](TSNode c, TSFieldId f) {
          if (f != g_.f_name) return;
          named = true;
          std::string nm(text(c));
          int idx = add_entity(fd, fd, EntityKind::field, nm, prefix + "." + nm, owner);
          out_.entities[idx].signature = collapse(text(fd));
        });
        if (!named && !ts_node_is_null(type)) out_.entities[owner].bases.push_back(base_type_name(text(type)));
        scan_types(type, owner);
      });
    });
  }

  void visit_interface(TSNode it, int owner, const std::string& prefix) {
    ts::for_each_child(it, true, [&](TSNode m) {
      if (kind(m) == g_method_elem) {
        TSNode name = field(m, g_.f_name);
        if (ts_node_is_null(name)) return;
        std::string nm(text(name));
        int idx = add_entity(m, m, EntityKind::method, nm, prefix + "." + nm, owner);
        add_params(idx, field(m, g_.f_parameters), false);
        out_.entities[idx].signature = collapse(text(m));
        scan_types(field(m, g_.f_parameters), owner);
        scan_types(field(m, g_.f_result), owner);
      } else if (kind(m) == g_type_elem) {
        std::string base = base_type_name(text(m));
        if (!base.empty() && base.size() == collapse(text(m)).size()) out_.entities[owner].bases.push_back(base);
        scan_types(m, owner);
      }
    });
  }

  void visit_value_declaration(TSNode decl) {
    std::vector<TSNode> specs;
    ts::for_each_child(decl, true, [&](TSNode c) {
      if (kind(c) == g_const_spec || kind(c) == g_var_spec)
        specs.push_back(c);
      else if (kind(c) == g_var_spec_list)
        ts::for_each_child(c, true, [&](TSNode s) {
          if (kind(s) == g_var_spec) specs.push_back(s);
        });
    });
    bool grouped = specs.size() > 1 || has_paren(decl);
    for (TSNode spec : specs) {
      ts::for_each_child_field(spec, [&](TSNode c, TSFieldId f) {
        if (f != g_.f_name || kind(c) != g_identifier) return;
        std::string nm(text(c));
        if (nm == "_") return;
        int idx = add_entity(grouped ? spec : decl, spec, EntityKind::variable, nm, nm, -1);
        if (grouped && out_.entities[idx].docstring.empty()) out_.entities[idx].docstring = doc_before(decl);
        out_.entities[idx].signature = collapse(text(spec).substr(0, std::min<size_t>(text(spec).size(), 200)));
      });
      locals_.clear();
      scan_types(field(spec, g_.f_type), -1);
      TSNode value = field(spec, g_.f_value);
      if (!ts_node_is_null(value)) scan(value, -1);
    }
  }

  // ---------------------------------------------------------------- locals
  // Every name a function binds (parameters are added by the caller): := and var targets, range
  // variables, labels, the parameters of function literals. One set per top-level function: a name
  // bound anywhere in it is treated as local everywhere in it (conservative for resolution).
  void collect_locals(TSNode root) {
    std::vector<TSNode> stack{root};
    while (!stack.empty()) {
      TSNode n = stack.back();
      stack.pop_back();
      int k = kind(n);
      if (k == g_short_var_declaration || k == g_range_clause || k == g_receive_statement) {
        TSNode left = field(n, g_.f_left);
        if (!ts_node_is_null(left))
          ts::for_each_child(left, true, [&](TSNode c) {
            if (kind(c) == g_identifier) locals_.emplace(text(c));
          });
      } else if (k == g_var_spec || k == g_const_spec || k == g_parameter_declaration ||
                 k == g_variadic_parameter_declaration || k == g_type_spec || k == g_type_alias) {
        ts::for_each_child_field(n, [&](TSNode c, TSFieldId f) {
          if (f == g_.f_name) locals_.emplace(text(c));
        });
      } else if (k == g_type_switch_statement) {
        ts::for_each_child_field(n, [&](TSNode c, TSFieldId f) {
          if (f == g_.f_alias) ts::for_each_child(c, true, [&](TSNode a) { locals_.emplace(text(a)); });
        });
      }
      ts::for_each_child(n, true, [&](TSNode c) { stack.push_back(c); });
    }
  }

  // ---------------------------------------------------------------- references
  // "a.b.c" for a selector chain rooted at an identifier (the root neither local nor predeclared), or
  // a package-qualified type; false otherwise.
  bool chain_of(TSNode n, std::string& out) const {
    std::vector<TSNode> fields;
    TSNode cur = n;
    for (;;) {
      int k = kind(cur);
      if (k == g_selector_expression) {
        fields.push_back(field(cur, g_.f_field));
        cur = field(cur, g_.f_operand);
        if (ts_node_is_null(cur)) return false;
        continue;
      }
      if (k == g_identifier || k == g_type_identifier || k == g_package_identifier) {
        std::string_view root = text(cur);
        if (locals_.count(std::string(root)) || is_predeclared(root)) return false;
        out.assign(root);
        break;
      }
      if (k == g_qualified_type) {
        out = collapse(text(cur));
        break;
      }
      return false;
    }
    for (auto it = fields.rbegin(); it != fields.rend(); ++it) {
      out.push_back('.');
      out.append(text(*it));
    }
    return true;
  }

  void scan_types(TSNode n, int scope) {
    if (!ts_node_is_null(n)) scan(n, scope);
  }

  // Calls, selector chains, composite literals, type names and package-level names in source order.
  // Iterative (an explicit stack): expressions nest one tree level per operator.
  void scan(TSNode root, int scope) {
    walk(root, [&](TSNode n, auto&& later) { scan_node(n, scope, later); });
  }

  template <class Later>
  void scan_node(TSNode n, int scope, Later&& later) {
    int k = kind(n);
    std::string chain;
    switch (k) {
      case g_call_expression: {
        TSNode fn = field(n, g_.f_function);
        TSNode args = field(n, g_.f_arguments);
        int nargs = 0;
        if (!ts_node_is_null(args))
          ts::for_each_child(args, true, [&](TSNode a) {
            if (kind(a) == g_variadic_argument) nargs = -1;
            if (nargs >= 0 && kind(a) != g_comment) ++nargs;
          });
        if (!ts_node_is_null(fn) && chain_of(fn, chain))
          record(scope, chain, RefKind::call, n, nargs);
        else
          later(fn);
        later(args);
        return;
      }
      case g_composite_literal: {
        TSNode type = field(n, g_.f_type);
        if (!ts_node_is_null(type) && chain_of(type, chain))
          record(scope, chain, RefKind::call, n);
        else
          later(type);
        later(field(n, g_.f_body));
        return;
      }
      case g_selector_expression:
      case g_qualified_type:
        if (chain_of(n, chain))
          record(scope, chain, RefKind::attribute, n);
        else if (k == g_selector_expression)
          later(field(n, g_.f_operand));
        return;
      case g_identifier:
      case g_type_identifier:
        if (chain_of(n, chain)) record(scope, chain, RefKind::name, n);
        return;
      case g_keyed_element: {
        // `T{Field: v}`: the key names a field of the literal's type, not a package-level name.
        uint32_t count = ts_node_named_child_count(n);
        for (uint32_t i = 0; i < count; ++i) {
          TSNode c = ts_node_named_child(n, i);
          if (i == 0 && count > 1 && ts_node_named_child_count(c) == 1 &&
              kind(ts_node_named_child(c, 0)) == g_identifier)
            continue;
          later(c);
        }
        return;
      }
      case g_func_literal:
        later(field(n, g_.f_parameters));
        later(field(n, g_.f_result));
        later(field(n, g_.f_body));
        return;
      case g_short_var_declaration:
      case g_range_clause:
        later(field(n, g_.f_right));
        return;
      case g_labeled_statement:
      case g_comment:
      case g_interpreted_string_literal:
      case g_raw_string_literal:
      case g_field_identifier:
      case g_label_name:
        if (k == g_labeled_statement)
          ts::for_each_child(n, true, [&](TSNode c) {
            if (kind(c) != g_label_name) later(c);
          });
        return;
      default:
        ts::for_each_child(n, true, [&](TSNode c) { later(c); });
    }
  }
};

}  // namespace

void extract_go(TSParser* parser, std::string_view source, ParsedFile& out, const std::atomic<bool>* stop) {
  TSTree* tree = parse_for_extraction(parser, go_grammar().lang, source, out, stop);
  if (!tree) return;
  GoExtractor(source, out).run(ts_tree_root_node(tree));
  ts_tree_delete(tree);
}

}  // namespace repoctx
