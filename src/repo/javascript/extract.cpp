// JavaScript and TypeScript extraction over tree-sitter-javascript, tree-sitter-typescript and its tsx
// dialect (one walk: the three grammars share the node kinds read here, each through its own kind table).
//
// Definitions (the contract tests/oracle/ts_entities.js checks against the TypeScript compiler's parse):
// top-level functions (declarations, overload signatures, and `const f = () => ...` / `= function ...`),
// classes with their methods, constructors and fields, interfaces with their method and property
// signatures, type aliases and enums (as classes), other top-level variables, and CommonJS-style
// `a.b.c = function ...` assignments (named by their target, "exports.parse"). A definition starts at its
// statement (`export`, `declare`, decorators included) and ends with its declaration. Namespaces are not
// entered.
//
// Imports: ES modules (`import d, {a as b} from "m"`, `import * as ns from "m"`), re-exports (`export
// {a} from "m"`, `export * from "m"`), `import x = require("m")` and top-level `const x = require("m")` /
// `const {a, b} = require("m")`. A default export binds "default" through an import of the file itself,
// so that `import d from "./m"` resolves to what m exports by default.
//
// References inside bodies: calls, `new`, member chains rooted at a name or `this`, TypeScript type names,
// and plain names that are neither local nor JavaScript's globals.
#include <tree_sitter/api.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "repo/javascript/modules.h"
#include "repo/parser.h"
#include "repo/reference_walk.h"
#include "repo/ts_util.h"
#include "util/text.h"

extern "C" const TSLanguage* tree_sitter_javascript(void);
extern "C" const TSLanguage* tree_sitter_typescript(void);
extern "C" const TSLanguage* tree_sitter_tsx(void);

namespace repoctx {
namespace {

enum JsKind : int {
  s_program,
  s_export_statement,
  s_import_statement,
  s_import_clause,
  s_named_imports,
  s_import_specifier,
  s_namespace_import,
  s_import_require_clause,
  s_export_clause,
  s_export_specifier,
  s_namespace_export,
  s_function_declaration,
  s_generator_function_declaration,
  s_function_signature,
  s_class_declaration,
  s_abstract_class_declaration,
  s_class,
  s_class_body,
  s_class_heritage,
  s_extends_clause,
  s_implements_clause,
  s_method_definition,
  s_method_signature,
  s_abstract_method_signature,
  s_public_field_definition,
  s_field_definition,
  s_property_signature,
  s_interface_declaration,
  s_interface_body,
  s_object_type,
  s_extends_type_clause,
  s_type_alias_declaration,
  s_enum_declaration,
  s_lexical_declaration,
  s_variable_declaration,
  s_variable_declarator,
  s_ambient_declaration,
  s_expression_statement,
  s_assignment_expression,
  s_arrow_function,
  s_function_expression,
  s_generator_function,
  s_call_expression,
  s_new_expression,
  s_member_expression,
  s_identifier,
  s_property_identifier,
  s_private_property_identifier,
  s_type_identifier,
  s_nested_type_identifier,
  s_shorthand_property_identifier_pattern,
  s_shorthand_property_identifier,
  s_object_pattern,
  s_array_pattern,
  s_pair_pattern,
  s_rest_pattern,
  s_assignment_pattern,
  s_object_assignment_pattern,
  s_required_parameter,
  s_optional_parameter,
  s_formal_parameters,
  s_catch_clause,
  s_for_in_statement,
  s_this,
  s_super,
  s_comment,
  s_string,
  s_string_fragment,
  s_template_string,
  s_statement_block,
  s_decorator,
  s_pair,
  s_labeled_statement,
  s_statement_identifier,
  s_spread_element,
  s_parenthesized_expression,
  s_arguments,
  s_jsx_attribute,
  s_ERROR,
};
const std::vector<const char*> kJsKinds = {
    "program",
    "export_statement",
    "import_statement",
    "import_clause",
    "named_imports",
    "import_specifier",
    "namespace_import",
    "import_require_clause",
    "export_clause",
    "export_specifier",
    "namespace_export",
    "function_declaration",
    "generator_function_declaration",
    "function_signature",
    "class_declaration",
    "abstract_class_declaration",
    "class",
    "class_body",
    "class_heritage",
    "extends_clause",
    "implements_clause",
    "method_definition",
    "method_signature",
    "abstract_method_signature",
    "public_field_definition",
    "field_definition",
    "property_signature",
    "interface_declaration",
    "interface_body",
    "object_type",
    "extends_type_clause",
    "type_alias_declaration",
    "enum_declaration",
    "lexical_declaration",
    "variable_declaration",
    "variable_declarator",
    "ambient_declaration",
    "expression_statement",
    "assignment_expression",
    "arrow_function",
    "function_expression",
    "generator_function",
    "call_expression",
    "new_expression",
    "member_expression",
    "identifier",
    "property_identifier",
    "private_property_identifier",
    "type_identifier",
    "nested_type_identifier",
    "shorthand_property_identifier_pattern",
    "shorthand_property_identifier",
    "object_pattern",
    "array_pattern",
    "pair_pattern",
    "rest_pattern",
    "assignment_pattern",
    "object_assignment_pattern",
    "required_parameter",
    "optional_parameter",
    "formal_parameters",
    "catch_clause",
    "for_in_statement",
    "this",
    "super",
    "comment",
    "string",
    "string_fragment",
    "template_string",
    "statement_block",
    "decorator",
    "pair",
    "labeled_statement",
    "statement_identifier",
    "spread_element",
    "parenthesized_expression",
    "arguments",
    "jsx_attribute",
    "ERROR",
};

struct JsGrammar {
  explicit JsGrammar(const TSLanguage* l) : lang(l), kinds(l, kJsKinds) {}
  const TSLanguage* lang;
  ts::KindTable kinds;
  TSFieldId f(const char* n) const {
    return ts_language_field_id_for_name(lang, n, static_cast<uint32_t>(std::strlen(n)));
  }
  TSFieldId f_name = f("name"), f_body = f("body"), f_parameters = f("parameters"), f_parameter = f("parameter"),
            f_value = f("value"), f_source = f("source"), f_alias = f("alias"), f_declaration = f("declaration"),
            f_left = f("left"), f_right = f("right"), f_function = f("function"), f_arguments = f("arguments"),
            f_object = f("object"), f_property = f("property"), f_constructor = f("constructor"),
            f_pattern = f("pattern"), f_type = f("type"), f_decorator = f("decorator");
};

const JsGrammar& js_grammar(Language lang, bool tsx) {
  static const JsGrammar javascript(tree_sitter_javascript());
  static const JsGrammar typescript(tree_sitter_typescript());
  static const JsGrammar tsx_grammar(tree_sitter_tsx());
  if (lang == Language::javascript) return javascript;
  return tsx ? tsx_grammar : typescript;
}

// Names every JavaScript program sees (and TypeScript's built-in types): references to them name nothing in
// the repository.
bool is_js_global(std::string_view n) {
  static const std::unordered_set<std::string_view> names = [] {
    static const char* const all =
        "undefined NaN Infinity globalThis window document console Math JSON Object Array String Number "
        "Boolean Symbol BigInt Promise Error TypeError RangeError SyntaxError Map Set WeakMap WeakSet "
        "Date RegExp Reflect Proxy Function arguments require module exports process Buffer setTimeout "
        "clearTimeout setInterval clearInterval setImmediate parseInt parseFloat isNaN isFinite "
        "encodeURIComponent decodeURIComponent __dirname __filename string number boolean any unknown "
        "never void object Record Partial Readonly Pick Omit ReturnType Parameters Exclude Extract "
        "NonNullable Required Iterable AsyncIterable PromiseLike ArrayLike Uint8Array ArrayBuffer "
        "DataView Intl true false null";
    return word_set(all);
  }();
  return names.count(n) > 0;
}

// The module a specifier names, without quotes.
std::string unquote(std::string_view s) {
  if (s.size() >= 2 && (s.front() == '"' || s.front() == '\'' || s.front() == '`'))
    return std::string(s.substr(1, s.size() - 2));
  return std::string(s);
}

class JsExtractor : ReferenceWalk {
 public:
  JsExtractor(std::string_view src, ParsedFile& out, const JsGrammar& g)
      : ReferenceWalk(out), src_(src), out_(out), g_(g) {}

  void run(TSNode root) {
    ts::for_each_child(root, true, [&](TSNode n) { visit_top(n, n); });
  }

 private:
  std::string_view src_;
  ParsedFile& out_;
  const JsGrammar& g_;
  std::unordered_set<std::string> locals_;

  int kind(TSNode n) const { return g_.kinds(n); }
  std::string_view text(TSNode n) const { return ts::text(n, src_); }
  TSNode field(TSNode n, TSFieldId f) const { return ts_node_child_by_field_id(n, f); }
  static std::string collapse(std::string_view s) { return collapse_spaces(s); }
  bool is_function_value(TSNode v) const {
    while (!ts_node_is_null(v) && kind(v) == s_parenthesized_expression) v = ts_node_named_child(v, 0);
    if (ts_node_is_null(v)) return false;
    int k = kind(v);
    return k == s_arrow_function || k == s_function_expression || k == s_generator_function;
  }

  // ---------------------------------------------------------------- top level
  // `stmt` is the statement a definition starts with (an export or ambient wrapper included).
  void visit_top(TSNode n, TSNode stmt) {
    switch (kind(n)) {
      case s_export_statement:
        visit_export(n);
        return;
      case s_ambient_declaration:
        ts::for_each_child(n, true, [&](TSNode c) { visit_top(c, stmt); });
        return;
      case s_import_statement:
        visit_import(n);
        return;
      case s_function_declaration:
      case s_generator_function_declaration:
      case s_function_signature:
        visit_function(n, stmt);
        return;
      case s_class_declaration:
      case s_abstract_class_declaration:
        visit_class(n, stmt);
        return;
      case s_interface_declaration:
        visit_interface(n, stmt);
        return;
      case s_type_alias_declaration:
      case s_enum_declaration: {
        TSNode name = field(n, g_.f_name);
        if (ts_node_is_null(name)) return;
        int idx = add_entity(stmt, n, EntityKind::klass, std::string(text(name)), "", -1);
        out_.entities[idx].signature = collapse(text(n).substr(0, std::min<size_t>(text(n).size(), 200)));
        locals_.clear();
        scan(field(n, g_.f_value), idx);
        return;
      }
      case s_lexical_declaration:
      case s_variable_declaration:
        visit_variables(n, stmt);
        return;
      case s_expression_statement:
        visit_expression_statement(n, stmt);
        return;
      default:
        locals_.clear();
        scan(n, -1);
    }
  }

  void visit_export(TSNode n) {
    TSNode decl = field(n, g_.f_declaration);
    TSNode source = field(n, g_.f_source);
    if (!ts_node_is_null(decl)) {
      visit_top(decl, n);
      if (is_default_export(n)) bind_default(decl);
      return;
    }
    if (!ts_node_is_null(source)) {  // export {a as b} from "m"; export * from "m"; export * as ns from "m"
      std::string module = unquote(text(source));
      bool any = false;
      ts::for_each_child(n, true, [&](TSNode c) {
        if (kind(c) == s_export_clause) {
          any = true;
          ts::for_each_child(c, true, [&](TSNode spec) {
            if (kind(spec) != s_export_specifier) return;
            Import im = make_import(n, module);
            im.name = unquote(text(field(spec, g_.f_name)));
            TSNode alias = field(spec, g_.f_alias);
            im.alias = ts_node_is_null(alias) ? im.name : unquote(text(alias));
            out_.imports.push_back(std::move(im));
          });
        } else if (kind(c) == s_namespace_export) {
          any = true;
          Import im = make_import(n, module);
          ts::for_each_child(c, true, [&](TSNode id) { im.alias = unquote(text(id)); });
          out_.imports.push_back(std::move(im));
        }
      });
      if (!any) {
        Import im = make_import(n, module);
        im.star = true;
        out_.imports.push_back(std::move(im));
      }
      return;
    }
    TSNode value = field(n, g_.f_value);  // export default <expression>
    if (!ts_node_is_null(value)) {
      if (kind(value) == s_identifier) self_binding(n, std::string(text(value)), "default");
      locals_.clear();
      scan(value, -1);
    }
    // `export {a, b as c}`: local names exported under other names.
    ts::for_each_child(n, true, [&](TSNode c) {
      if (kind(c) != s_export_clause) return;
      ts::for_each_child(c, true, [&](TSNode spec) {
        if (kind(spec) != s_export_specifier) return;
        TSNode alias = field(spec, g_.f_alias);
        if (ts_node_is_null(alias)) return;
        self_binding(n, unquote(text(field(spec, g_.f_name))), unquote(text(alias)));
      });
    });
  }

  bool is_default_export(TSNode n) const {
    bool found = false;
    ts::for_each_child(n, false, [&](TSNode c) {
      if (!ts_node_is_named(c) && text(c) == "default") found = true;
    });
    return found;
  }

  void bind_default(TSNode decl) {
    TSNode name = field(decl, g_.f_name);
    if (!ts_node_is_null(name)) self_binding(decl, std::string(text(name)), "default");
  }

  // `alias` bound to this file's own top-level `name` (a default export, `export {a as b}`): an import of
  // the file itself, which the resolver follows like any re-export.
  void self_binding(TSNode at, const std::string& name, const std::string& alias) {
    if (name == alias) return;
    std::string self = strip_javascript_extension(out_.path);  // exactly this file: "./a.cjs" is not a.js
    Import im = make_import(at, "./" + self.substr(self.rfind('/') + 1));
    im.name = name;
    im.alias = alias;
    out_.imports.push_back(std::move(im));
  }

  // `module.exports = x`: what `require` of this file returns ("module.exports", the binding a require
  // resolves first) and what a default import of it gets.
  void bind_module_exports(TSNode at, const std::string& name) {
    self_binding(at, name, "module.exports");
    self_binding(at, name, "default");
  }

  Import make_import(TSNode at, const std::string& module) const {
    Import im;
    im.line = ts::start_line(at);
    im.module = module;
    return im;
  }

  void visit_import(TSNode n) {
    TSNode source = field(n, g_.f_source);
    std::string module = ts_node_is_null(source) ? std::string() : unquote(text(source));
    bool bound = false;
    ts::for_each_child(n, true, [&](TSNode c) {
      int k = kind(c);
      if (k == s_import_require_clause) {  // import x = require("m")
        TSNode src = field(c, g_.f_source);
        Import im = make_import(n, ts_node_is_null(src) ? module : unquote(text(src)));
        im.name = "module.exports";
        ts::for_each_child(c, true, [&](TSNode id) {
          if (kind(id) == s_identifier) im.alias = std::string(text(id));
        });
        out_.imports.push_back(std::move(im));
        bound = true;
        return;
      }
      if (k != s_import_clause) return;
      ts::for_each_child(c, true, [&](TSNode part) {
        int pk = kind(part);
        if (pk == s_identifier) {  // the default import
          Import im = make_import(n, module);
          im.name = "default";
          im.alias = std::string(text(part));
          out_.imports.push_back(std::move(im));
          bound = true;
        } else if (pk == s_namespace_import) {
          Import im = make_import(n, module);
          ts::for_each_child(part, true, [&](TSNode id) { im.alias = std::string(text(id)); });
          out_.imports.push_back(std::move(im));
          bound = true;
        } else if (pk == s_named_imports) {
          ts::for_each_child(part, true, [&](TSNode spec) {
            if (kind(spec) != s_import_specifier) return;
            Import im = make_import(n, module);
            im.name = unquote(text(field(spec, g_.f_name)));
            TSNode alias = field(spec, g_.f_alias);
            im.alias = ts_node_is_null(alias) ? im.name : std::string(text(alias));
            out_.imports.push_back(std::move(im));
            bound = true;
          });
        }
      });
    });
    if (!bound && !module.empty()) out_.imports.push_back(make_import(n, module));  // import "m": loads it
  }

  // `require("m")` as a declarator's value: the module it loads, or "".
  std::string required_module(TSNode value) const {
    if (ts_node_is_null(value) || kind(value) != s_call_expression) return {};
    TSNode fn = field(value, g_.f_function);
    if (ts_node_is_null(fn) || text(fn) != "require") return {};
    TSNode args = field(value, g_.f_arguments);
    if (ts_node_is_null(args) || ts_node_named_child_count(args) != 1) return {};
    TSNode arg = ts_node_named_child(args, 0);
    if (kind(arg) != s_string) return {};
    return unquote(text(arg));
  }

  // ---------------------------------------------------------------- definitions
  int add_entity(TSNode start, TSNode n, EntityKind k, std::string name, const std::string& prefix, int parent) {
    Entity e;
    e.qualname = prefix + name;
    e.name = std::move(name);
    e.kind = k;
    e.parent = parent;
    e.start_line = ts::start_line(start);
    e.end_line = ts::end_line(n);
    e.decorated_start_line = e.start_line;
    e.start_byte = ts_node_start_byte(start);
    e.end_byte = ts_node_end_byte(n);
    e.docstring = jsdoc_before(start);
    e.header_end_line = e.end_line;
    out_.entities.push_back(std::move(e));
    return static_cast<int>(out_.entities.size()) - 1;
  }

  // The /** ... */ comment right before a definition.
  std::string jsdoc_before(TSNode n) const {
    TSNode prev = ts_node_prev_sibling(n);
    if (ts_node_is_null(prev) || kind(prev) != s_comment) return {};
    std::string_view t = text(prev);
    if (!starts_with(t, "/**") || t.size() < 5) return {};
    std::string out;
    for (auto line : split_lines(t.substr(3, t.size() - 5))) {
      auto l = trim(line);
      if (!l.empty() && l[0] == '*') l = trim(l.substr(1));
      if (!out.empty()) out.push_back('\n');
      out.append(l);
    }
    return std::string(trim(out));
  }

  void set_function_parts(int idx, TSNode fn) {
    Entity& e = out_.entities[idx];
    TSNode body = field(fn, g_.f_body);
    uint32_t hdr_end = ts_node_is_null(body) || kind(body) != s_statement_block ? e.end_byte : ts_node_start_byte(body);
    e.signature = collapse(src_.substr(e.start_byte, hdr_end - e.start_byte));
    if (!e.signature.empty() && e.signature.back() == ';') e.signature.pop_back();
    TSNode params = field(fn, g_.f_parameters);
    if (ts_node_is_null(params)) params = field(fn, g_.f_parameter);
    if (!ts_node_is_null(params)) add_params(idx, params);
    if (ts_node_is_null(body)) return;
    if (kind(body) == s_statement_block) {
      e.header_end_line = ts::start_line(body);
      TSNode first{};
      ts::for_each_child(body, true, [&](TSNode c) {
        if (ts_node_is_null(first) && kind(c) != s_comment) first = c;
      });
      if (!ts_node_is_null(first)) {
        e.body_start_line = ts::start_line(first);
        e.body_end_line = e.end_line;
        e.body_start_byte = ts_node_start_byte(first);
      }
    } else {  // an arrow function's expression body
      e.body_start_line = ts::start_line(body);
      e.body_end_line = e.end_line;
      e.body_start_byte = ts_node_start_byte(body);
    }
    locals_.clear();
    collect_locals(fn);
    scan(params, idx);
    scan(body, idx);
    scan(field(fn, g_.f_type), idx);
  }

  void add_params(int idx, TSNode params) {
    if (kind(params) == s_identifier) {  // `x => ...`
      Parameter p;
      p.name.assign(text(params));
      out_.entities[idx].params.push_back(std::move(p));
      return;
    }
    ts::for_each_child(params, true, [&](TSNode p) {
      Parameter prm;
      TSNode pat = kind(p) == s_required_parameter || kind(p) == s_optional_parameter ? field(p, g_.f_pattern) : p;
      if (ts_node_is_null(pat)) return;
      int pk = kind(pat);
      if (pk == s_rest_pattern) {
        prm.kind = Parameter::var_positional;
        if (ts_node_named_child_count(pat) > 0) prm.name.assign(text(ts_node_named_child(pat, 0)));
      } else if (pk == s_assignment_pattern) {
        prm.has_default = true;
        TSNode left = field(pat, g_.f_left);
        prm.name.assign(ts_node_is_null(left) ? text(pat) : text(left));
      } else if (pk == s_identifier || pk == s_this) {
        prm.name.assign(text(pat));
      } else if (pk == s_comment || pk == s_decorator) {
        return;
      } else {
        prm.name = collapse(text(pat));
      }
      if (!ts_node_is_null(field(p, g_.f_value))) prm.has_default = true;
      TSNode type = kind(p) == s_required_parameter || kind(p) == s_optional_parameter ? field(p, g_.f_type) : TSNode{};
      if (!ts_node_is_null(type)) {
        std::string t = collapse(text(type));
        prm.annotation = starts_with(t, ":") ? std::string(trim(std::string_view(t).substr(1))) : t;
      }
      out_.entities[idx].params.push_back(std::move(prm));
    });
  }

  void visit_function(TSNode n, TSNode stmt) {
    TSNode name = field(n, g_.f_name);
    if (ts_node_is_null(name)) return;
    int idx = add_entity(stmt, n, EntityKind::function, std::string(text(name)), "", -1);
    set_function_parts(idx, n);
  }

  void visit_variables(TSNode n, TSNode stmt) {
    ts::for_each_child(n, true, [&](TSNode d) {
      if (kind(d) != s_variable_declarator) return;
      TSNode name = field(d, g_.f_name);
      TSNode value = field(d, g_.f_value);
      if (ts_node_is_null(name)) return;
      std::string module = required_module(value);
      if (!module.empty()) {  // const x = require("m"); const {a, b: c} = require("m")
        visit_require(n, name, module);
        return;
      }
      if (kind(name) != s_identifier) {
        locals_.clear();
        scan(value, -1);
        return;
      }
      bool fn = is_function_value(value);
      int idx = add_entity(stmt, d, fn ? EntityKind::function : EntityKind::variable, std::string(text(name)), "", -1);
      if (fn) {
        TSNode f = value;
        while (kind(f) == s_parenthesized_expression) f = ts_node_named_child(f, 0);
        set_function_parts(idx, f);
        out_.entities[idx].signature = function_value_signature(stmt, f);
      } else {
        out_.entities[idx].signature = collapse(text(d).substr(0, std::min<size_t>(text(d).size(), 200)));
        locals_.clear();
        scan(value, -1);
        scan(field(d, g_.f_type), -1);
      }
    });
  }

  // "const f = (a, b) =>" / "exports.parse = function (s)": the text up to the body.
  std::string function_value_signature(TSNode stmt, TSNode fn) const {
    TSNode body = field(fn, g_.f_body);
    uint32_t end = ts_node_is_null(body) ? ts_node_end_byte(fn) : ts_node_start_byte(body);
    uint32_t start = ts_node_start_byte(stmt);
    return collapse(src_.substr(start, end - start));
  }

  void visit_require(TSNode at, TSNode name, const std::string& module) {
    if (kind(name) == s_identifier) {  // what the module assigned to module.exports, else the module
      Import im = make_import(at, module);
      im.name = "module.exports";
      im.alias = std::string(text(name));
      out_.imports.push_back(std::move(im));
      return;
    }
    if (kind(name) != s_object_pattern) return;
    ts::for_each_child(name, true, [&](TSNode p) {
      Import im = make_import(at, module);
      if (kind(p) == s_shorthand_property_identifier_pattern) {
        im.name = im.alias = std::string(text(p));
      } else if (kind(p) == s_pair_pattern) {
        TSNode key = ts_node_child_by_field_name(p, "key", 3);
        TSNode value = ts_node_child_by_field_name(p, "value", 5);
        if (ts_node_is_null(key) || ts_node_is_null(value) || kind(value) != s_identifier) return;
        im.name = unquote(text(key));
        im.alias = std::string(text(value));
      } else {
        return;
      }
      out_.imports.push_back(std::move(im));
    });
  }

  // `a.b.c = function ...` (CommonJS exports, prototype methods): a function named by its target.
  void visit_expression_statement(TSNode n, TSNode stmt) {
    TSNode e = ts_node_named_child_count(n) > 0 ? ts_node_named_child(n, 0) : TSNode{};
    if (!ts_node_is_null(e) && kind(e) == s_assignment_expression) {
      TSNode left = field(e, g_.f_left), right = field(e, g_.f_right);
      std::string chain;
      if (!ts_node_is_null(left) && kind(left) == s_member_expression && plain_chain(left, chain) &&
          is_function_value(right)) {
        TSNode f = right;
        while (kind(f) == s_parenthesized_expression) f = ts_node_named_child(f, 0);
        std::string name = chain.substr(chain.rfind('.') + 1);
        int idx = add_entity(stmt, n, EntityKind::function, name, chain.substr(0, chain.size() - name.size()), -1);
        set_function_parts(idx, f);
        out_.entities[idx].signature = function_value_signature(stmt, f);
        if (chain == "module.exports") bind_module_exports(n, name);
        return;
      }
      if (!ts_node_is_null(left) && text(left) == "module.exports" && !ts_node_is_null(right) &&
          kind(right) == s_identifier)
        bind_module_exports(n, std::string(text(right)));
    }
    locals_.clear();
    scan(n, -1);
  }

  // "a.b.c" for a member chain of plain names (no calls, no computed members).
  bool plain_chain(TSNode n, std::string& out) const {
    std::vector<TSNode> props;
    TSNode cur = n;
    while (kind(cur) == s_member_expression) {
      TSNode prop = field(cur, g_.f_property);
      if (ts_node_is_null(prop) || kind(prop) != s_property_identifier) return false;
      props.push_back(prop);
      cur = field(cur, g_.f_object);
      if (ts_node_is_null(cur)) return false;
    }
    if (kind(cur) != s_identifier) return false;
    out.assign(text(cur));
    for (auto it = props.rbegin(); it != props.rend(); ++it) {
      out.push_back('.');
      out.append(text(*it));
    }
    return true;
  }

  void visit_class(TSNode n, TSNode stmt) {
    TSNode name = field(n, g_.f_name);
    if (ts_node_is_null(name)) return;
    std::string nm(text(name));
    int idx = add_entity(stmt, n, EntityKind::klass, nm, "", -1);
    TSNode body = field(n, g_.f_body);
    uint32_t hdr_end = ts_node_is_null(body) ? ts_node_end_byte(n) : ts_node_start_byte(body);
    out_.entities[idx].signature = collapse(src_.substr(ts_node_start_byte(stmt), hdr_end - ts_node_start_byte(stmt)));
    if (!ts_node_is_null(body)) out_.entities[idx].header_end_line = ts::start_line(body);
    ts::for_each_child(n, true, [&](TSNode c) {
      if (kind(c) != s_class_heritage) return;
      ts::for_each_child(c, true, [&](TSNode h) {
        if (kind(h) == s_extends_clause || kind(h) == s_implements_clause) {
          ts::for_each_child_field(h, [&](TSNode t, TSFieldId f) {
            if (ts_node_is_named(t) && (f == g_.f_value || kind(h) == s_implements_clause) && kind(t) != s_comment)
              out_.entities[idx].bases.push_back(collapse(text(t)));
          });
        } else if (ts_node_is_named(h) && kind(h) != s_comment) {  // JavaScript: class A extends <expression>
          out_.entities[idx].bases.push_back(collapse(text(h)));
        }
      });
      locals_.clear();
      scan(c, idx);
    });
    if (ts_node_is_null(body)) return;
    TSNode first_decorator{};
    ts::for_each_child(body, true, [&](TSNode m) {
      int k = kind(m);
      if (k == s_decorator) {
        if (ts_node_is_null(first_decorator)) first_decorator = m;
        return;
      }
      TSNode start = ts_node_is_null(first_decorator) ? m : first_decorator;
      first_decorator = TSNode{};
      visit_member(m, start, idx, nm + ".");
    });
  }

  // The name of a class or interface member, or "" for a computed or literal one.
  std::string member_name(TSNode m, TSFieldId f) const {
    TSNode name = field(m, f);
    if (ts_node_is_null(name)) return {};
    int k = kind(name);
    if (k == s_property_identifier || k == s_private_property_identifier || k == s_identifier)
      return std::string(text(name));
    return {};
  }

  void visit_member(TSNode m, TSNode start, int owner, const std::string& prefix) {
    int k = kind(m);
    if (k == s_method_definition || k == s_method_signature || k == s_abstract_method_signature) {
      std::string nm = member_name(m, g_.f_name);
      if (nm.empty()) return;
      EntityKind ek =
          nm == "constructor" && k != s_abstract_method_signature ? EntityKind::constructor : EntityKind::method;
      int idx = add_entity(start, m, ek, nm, prefix, owner);
      set_function_parts(idx, m);
      return;
    }
    if (k == s_public_field_definition || k == s_field_definition) {
      std::string nm = member_name(m, k == s_field_definition ? g_.f_property : g_.f_name);
      if (nm.empty()) return;
      int idx = add_entity(start, m, EntityKind::field, nm, prefix, owner);
      out_.entities[idx].signature = collapse(text(m).substr(0, std::min<size_t>(text(m).size(), 200)));
      TSNode value = field(m, g_.f_value);
      if (is_function_value(value)) {
        TSNode f = value;
        while (kind(f) == s_parenthesized_expression) f = ts_node_named_child(f, 0);
        set_function_parts(idx, f);
        out_.entities[idx].signature = collapse(text(m).substr(0, std::min<size_t>(text(m).size(), 200)));
      } else {
        locals_.clear();
        scan(value, owner);
        scan(field(m, g_.f_type), owner);
      }
    }
  }

  void visit_interface(TSNode n, TSNode stmt) {
    TSNode name = field(n, g_.f_name);
    if (ts_node_is_null(name)) return;
    std::string nm(text(name));
    int idx = add_entity(stmt, n, EntityKind::interface, nm, "", -1);
    TSNode body = field(n, g_.f_body);
    uint32_t hdr_end = ts_node_is_null(body) ? ts_node_end_byte(n) : ts_node_start_byte(body);
    out_.entities[idx].signature = collapse(src_.substr(ts_node_start_byte(stmt), hdr_end - ts_node_start_byte(stmt)));
    ts::for_each_child(n, true, [&](TSNode c) {
      if (kind(c) != s_extends_type_clause) return;
      ts::for_each_child(c, true, [&](TSNode t) {
        if (kind(t) != s_comment) out_.entities[idx].bases.push_back(collapse(text(t)));
      });
    });
    if (ts_node_is_null(body)) return;
    ts::for_each_child(body, true, [&](TSNode m) {
      int k = kind(m);
      std::string mn = member_name(m, g_.f_name);
      if (mn.empty()) return;
      if (k == s_method_signature) {
        int mi = add_entity(m, m, EntityKind::method, mn, nm + ".", idx);
        set_function_parts(mi, m);
      } else if (k == s_property_signature) {
        int fi = add_entity(m, m, EntityKind::field, mn, nm + ".", idx);
        out_.entities[fi].signature = collapse(text(m));
        locals_.clear();
        scan(field(m, g_.f_type), idx);
      }
    });
  }

  // ---------------------------------------------------------------- locals
  // Every name a function binds: parameters (patterns included), declarations, catch and for-in
  // variables, nested functions and classes. One set per definition, as in the Go extractor.
  void collect_locals(TSNode root) {
    std::vector<TSNode> stack{root};
    auto bind_pattern = [&](TSNode p) {
      std::vector<TSNode> ps{p};
      while (!ps.empty()) {
        TSNode q = ps.back();
        ps.pop_back();
        if (ts_node_is_null(q)) continue;
        int k = kind(q);
        if (k == s_identifier || k == s_shorthand_property_identifier_pattern) {
          locals_.emplace(text(q));
        } else if (k == s_pair_pattern) {
          ps.push_back(ts_node_child_by_field_name(q, "value", 5));
        } else if (k == s_assignment_pattern || k == s_object_assignment_pattern) {
          ps.push_back(field(q, g_.f_left));
        } else if (k == s_object_pattern || k == s_array_pattern || k == s_rest_pattern || k == s_required_parameter ||
                   k == s_optional_parameter || k == s_formal_parameters) {
          ts::for_each_child(q, true, [&](TSNode c) {
            if (kind(c) == s_required_parameter || kind(c) == s_optional_parameter)
              ps.push_back(field(c, g_.f_pattern));
            else if (kind(c) != s_comment && kind(c) != s_decorator)
              ps.push_back(c);
          });
        }
      }
    };
    while (!stack.empty()) {
      TSNode n = stack.back();
      stack.pop_back();
      int k = kind(n);
      if (k == s_formal_parameters) bind_pattern(n);
      if (k == s_arrow_function) {
        TSNode p = field(n, g_.f_parameter);
        if (!ts_node_is_null(p)) bind_pattern(p);
      }
      if (k == s_variable_declarator) bind_pattern(field(n, g_.f_name));
      if (k == s_catch_clause) bind_pattern(ts_node_child_by_field_name(n, "parameter", 9));
      if (k == s_for_in_statement) bind_pattern(field(n, g_.f_left));
      if ((k == s_function_declaration || k == s_generator_function_declaration || k == s_class_declaration ||
           k == s_class || k == s_function_expression) &&
          ts_node_start_byte(n) != ts_node_start_byte(root)) {
        TSNode name = field(n, g_.f_name);
        if (!ts_node_is_null(name)) locals_.emplace(text(name));
      }
      ts::for_each_child(n, true, [&](TSNode c) { stack.push_back(c); });
    }
  }

  // ---------------------------------------------------------------- references
  bool chain_of(TSNode n, std::string& out) const {
    std::vector<TSNode> props;
    TSNode cur = n;
    for (;;) {
      int k = kind(cur);
      if (k == s_member_expression) {
        TSNode prop = field(cur, g_.f_property);
        if (ts_node_is_null(prop) ||
            (kind(prop) != s_property_identifier && kind(prop) != s_private_property_identifier))
          return false;
        props.push_back(prop);
        cur = field(cur, g_.f_object);
        if (ts_node_is_null(cur)) return false;
        continue;
      }
      if (k == s_identifier || k == s_type_identifier) {
        std::string_view root = text(cur);
        if (locals_.count(std::string(root)) || is_js_global(root)) return false;
        out.assign(root);
        break;
      }
      if (k == s_this) {
        out = "this";
        break;
      }
      if (k == s_nested_type_identifier) {
        out = collapse(text(cur));
        break;
      }
      return false;
    }
    for (auto it = props.rbegin(); it != props.rend(); ++it) {
      out.push_back('.');
      out.append(text(*it));
    }
    return out != "this";
  }

  void scan(TSNode root, int scope) {
    walk(root, [&](TSNode n, auto&& later) { scan_node(n, scope, later); });
  }

  template <class Later>
  void scan_node(TSNode n, int scope, Later&& later) {
    int k = kind(n);
    std::string chain;
    switch (k) {
      case s_call_expression:
      case s_new_expression: {
        TSNode fn = field(n, k == s_call_expression ? g_.f_function : g_.f_constructor);
        TSNode args = field(n, g_.f_arguments);
        int nargs = 0;
        if (!ts_node_is_null(args))
          ts::for_each_child(args, true, [&](TSNode a) {
            if (kind(a) == s_spread_element) nargs = -1;
            if (nargs >= 0 && kind(a) != s_comment) ++nargs;
          });
        if (!ts_node_is_null(fn) && chain_of(fn, chain))
          record(scope, chain, RefKind::call, n, nargs);
        else
          later(fn);
        later(args);
        return;
      }
      case s_member_expression:
      case s_nested_type_identifier:
        if (chain_of(n, chain))
          record(scope, chain, RefKind::attribute, n);
        else if (k == s_member_expression)
          ts::for_each_child_field(n, [&](TSNode c, TSFieldId f) {
            if (f != g_.f_property && ts_node_is_named(c)) later(c);
          });
        return;
      case s_identifier:
      case s_type_identifier:
        if (chain_of(n, chain)) record(scope, chain, RefKind::name, n);
        return;
      case s_pair:  // { key: value }: the key names no definition
        later(ts_node_child_by_field_name(n, "value", 5));
        return;
      case s_comment:
      case s_string:
      case s_template_string:
      case s_property_identifier:
      case s_shorthand_property_identifier:
      case s_statement_identifier:
        if (k == s_template_string)
          ts::for_each_child(n, true, [&](TSNode c) {
            if (kind(c) != s_string_fragment) later(c);
          });
        return;
      case s_labeled_statement:
        ts::for_each_child(n, true, [&](TSNode c) {
          if (kind(c) != s_statement_identifier) later(c);
        });
        return;
      default:
        ts::for_each_child(n, true, [&](TSNode c) { later(c); });
    }
  }
};

}  // namespace

const TSLanguage* javascript_grammar(Language lang, const std::string& path) {
  return js_grammar(lang, ends_with(path, ".tsx")).lang;
}

void extract_javascript(TSParser* parser, std::string_view source, ParsedFile& out, const std::atomic<bool>* stop) {
  const JsGrammar& g = js_grammar(out.language, ends_with(out.path, ".tsx"));
  TSTree* tree = parse_for_extraction(parser, g.lang, source, out, stop);
  if (!tree) return;
  JsExtractor(source, out, g).run(ts_tree_root_node(tree));
  ts_tree_delete(tree);
}

}  // namespace repoctx
