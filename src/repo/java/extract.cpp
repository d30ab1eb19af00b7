// Java extraction over tree-sitter-java: package, imports, types (nested), methods, constructors, fields,
// and method calls / field accesses / instantiations inside bodies (AlignCoder's Java track).
#include <tree_sitter/api.h>

#include <cstring>
#include <string>
#include <vector>

#include "repo/parser.h"
#include "repo/reference_walk.h"
#include "repo/ts_util.h"
#include "util/text.h"

extern "C" const TSLanguage* tree_sitter_java(void);

namespace repoctx {
namespace {

enum K : int {
  j_program,
  j_package_declaration,
  j_import_declaration,
  j_class_declaration,
  j_interface_declaration,
  j_enum_declaration,
  j_record_declaration,
  j_annotation_type_declaration,
  j_method_declaration,
  j_constructor_declaration,
  j_compact_constructor_declaration,
  j_field_declaration,
  j_constant_declaration,
  j_variable_declarator,
  j_formal_parameters,
  j_formal_parameter,
  j_spread_parameter,
  j_method_invocation,
  j_field_access,
  j_object_creation_expression,
  j_class_body,
  j_interface_body,
  j_enum_body,
  j_enum_body_declarations,
  j_annotation_type_body,
  j_superclass,
  j_super_interfaces,
  j_extends_interfaces,
  j_scoped_identifier,
  j_identifier,
  j_asterisk,
  j_modifiers,
  j_line_comment,
  j_block_comment,
  j_block,
  j_constructor_body,
  j_this,
  j_super,
  j_type_list,
  j_argument_list,
  j_enum_constant,
  j_static,
  j_ERROR,
};
const std::vector<const char*> kNames = {
    "program",
    "package_declaration",
    "import_declaration",
    "class_declaration",
    "interface_declaration",
    "enum_declaration",
    "record_declaration",
    "annotation_type_declaration",
    "method_declaration",
    "constructor_declaration",
    "compact_constructor_declaration",
    "field_declaration",
    "constant_declaration",
    "variable_declarator",
    "formal_parameters",
    "formal_parameter",
    "spread_parameter",
    "method_invocation",
    "field_access",
    "object_creation_expression",
    "class_body",
    "interface_body",
    "enum_body",
    "enum_body_declarations",
    "annotation_type_body",
    "superclass",
    "super_interfaces",
    "extends_interfaces",
    "scoped_identifier",
    "identifier",
    "asterisk",
    "modifiers",
    "line_comment",
    "block_comment",
    "block",
    "constructor_body",
    "this",
    "super",
    "type_list",
    "argument_list",
    "enum_constant",
    "static",
    "ERROR",
};

struct Grammar {
  const TSLanguage* lang = tree_sitter_java();
  ts::KindTable kinds{lang, kNames};
  TSFieldId f(const char* n) const {
    return ts_language_field_id_for_name(lang, n, static_cast<uint32_t>(std::strlen(n)));
  }
  TSFieldId f_name = f("name"), f_body = f("body"), f_superclass = f("superclass"), f_interfaces = f("interfaces"),
            f_parameters = f("parameters"), f_declarator = f("declarator"), f_type = f("type"), f_object = f("object"),
            f_arguments = f("arguments"), f_field = f("field");
};
const Grammar& java_grammar() {
  static const Grammar g;
  return g;
}

class Extractor : ReferenceWalk {
 public:
  Extractor(std::string_view src, ParsedFile& out) : ReferenceWalk(out), src_(src), out_(out), g_(java_grammar()) {}

  void run(TSNode root) {
    ts::for_each_child(root, true, [&](TSNode n) {
      switch (kind(n)) {
        case j_package_declaration:
          ts::for_each_child(n, true, [&](TSNode c) {
            if (kind(c) == j_scoped_identifier || kind(c) == j_identifier) out_.package = compact(text(c));
          });
          break;
        case j_import_declaration:
          visit_import(n);
          break;
        default:
          visit_member(n, -1, "");
      }
    });
    if (!out_.package.empty()) out_.module = out_.package;
  }

 private:
  std::string_view src_;
  ParsedFile& out_;
  const Grammar& g_;
  int kind(TSNode n) const { return g_.kinds(n); }
  std::string_view text(TSNode n) const { return ts::text(n, src_); }
  TSNode field(TSNode n, TSFieldId f) const { return ts_node_child_by_field_id(n, f); }
  static std::string compact(std::string_view s) {
    std::string o;
    for (char c : s)
      if (!std::isspace(static_cast<unsigned char>(c))) o.push_back(c);
    return o;
  }
  static std::string collapse(std::string_view s) { return collapse_spaces(s); }

  void visit_import(TSNode n) {
    Import im;
    im.line = ts::start_line(n);
    std::string path;
    bool star = false, is_static = false;
    ts::for_each_child(n, false, [&](TSNode c) {
      int k = kind(c);
      if (k == j_scoped_identifier || k == j_identifier)
        path = compact(text(c));
      else if (k == j_asterisk)
        star = true;
      else if (k == j_static)
        is_static = true;
    });
    (void)is_static;
    if (star) {
      im.module = path;
      im.star = true;
    } else {
      size_t dot = path.rfind('.');
      im.module = dot == std::string::npos ? "" : path.substr(0, dot);
      im.name = dot == std::string::npos ? path : path.substr(dot + 1);
    }
    out_.imports.push_back(std::move(im));
  }

  std::string javadoc_before(TSNode n) const {
    TSNode prev = ts_node_prev_sibling(n);
    if (ts_node_is_null(prev) || kind(prev) != j_block_comment) return {};
    std::string_view t = text(prev);
    if (!starts_with(t, "/**")) return {};
    std::string out;
    for (auto line : split_lines(t.substr(3, t.size() >= 5 ? t.size() - 5 : 0))) {
      auto l = trim(line);
      if (!l.empty() && l[0] == '*') l = trim(l.substr(1));
      if (!out.empty()) out.push_back('\n');
      out.append(l);
    }
    return std::string(trim(out));
  }

  int add_entity(TSNode n, EntityKind k, const std::string& name, int parent, const std::string& prefix) {
    Entity e;
    e.name = name;
    e.qualname = prefix + name;
    e.kind = k;
    e.parent = parent;
    e.start_line = ts::start_line(n);
    e.end_line = ts::end_line(n);
    e.decorated_start_line = e.start_line;
    e.start_byte = ts_node_start_byte(n);
    e.end_byte = ts_node_end_byte(n);
    e.docstring = javadoc_before(n);
    TSNode body = field(n, g_.f_body);
    uint32_t hdr_end = ts_node_is_null(body) ? ts_node_end_byte(n) : ts_node_start_byte(body);
    e.signature = collapse(src_.substr(e.start_byte, hdr_end - e.start_byte));
    if (!e.signature.empty() && e.signature.back() == ';') e.signature.pop_back();
    set_body_lines(e, body);
    out_.entities.push_back(std::move(e));
    return static_cast<int>(out_.entities.size()) - 1;
  }

  // Types nest (inner classes, anonymous bodies): at most kMaxBlockNesting levels are walked.
  void visit_member(TSNode n, int parent, const std::string& prefix) {
    nested(n, "type declarations", [&] { visit_member_at_depth(n, parent, prefix); });
  }

  void visit_member_at_depth(TSNode n, int parent, const std::string& prefix) {
    int k = kind(n);
    switch (k) {
      case j_class_declaration:
      case j_interface_declaration:
      case j_enum_declaration:
      case j_record_declaration:
      case j_annotation_type_declaration:
        visit_type_declaration(n, k, parent, prefix);
        return;
      case j_method_declaration:
      case j_constructor_declaration:
      case j_compact_constructor_declaration:
        visit_callable(n, k, parent, prefix);
        return;
      case j_field_declaration:
      case j_constant_declaration:
        ts::for_each_child_field(n, [&](TSNode c, TSFieldId f) {
          if (f != g_.f_declarator) return;
          TSNode nm = field(c, g_.f_name);
          if (ts_node_is_null(nm)) return;
          int idx = add_entity(n, EntityKind::field, std::string(text(nm)), parent, prefix);
          out_.entities[idx].signature = collapse(text(n));
        });
        return;
      default:
        return;
    }
  }

  // A class, interface, enum, record or annotation type (node kind `k`): its bases, then its members.
  void visit_type_declaration(TSNode n, int k, int parent, const std::string& prefix) {
    TSNode name = field(n, g_.f_name);
    if (ts_node_is_null(name)) return;
    bool is_interface = k == j_interface_declaration || k == j_annotation_type_declaration;
    EntityKind ek = is_interface ? EntityKind::interface : EntityKind::klass;
    int idx = add_entity(n, ek, std::string(text(name)), parent, prefix);
    auto add_types = [&](TSNode holder) {
      if (ts_node_is_null(holder)) return;
      ts::for_each_child(holder, true, [&](TSNode c) {
        if (kind(c) == j_type_list)
          ts::for_each_child(c, true, [&](TSNode t) { out_.entities[idx].bases.push_back(compact(text(t))); });
        else
          out_.entities[idx].bases.push_back(compact(text(c)));
      });
    };
    add_types(field(n, g_.f_superclass));
    add_types(field(n, g_.f_interfaces));
    ts::for_each_child(n, true, [&](TSNode c) {
      if (kind(c) == j_extends_interfaces) add_types(c);
    });
    std::string inner = out_.entities[idx].qualname + ".";
    TSNode body = field(n, g_.f_body);
    if (ts_node_is_null(body)) return;
    ts::for_each_child(body, true, [&](TSNode m) {
      if (kind(m) == j_enum_body_declarations)
        ts::for_each_child(m, true, [&](TSNode mm) { visit_member(mm, idx, inner); });
      else if (kind(m) == j_enum_constant) {
        TSNode nm = field(m, g_.f_name);
        if (!ts_node_is_null(nm)) add_entity(m, EntityKind::field, std::string(text(nm)), idx, inner);
      } else
        visit_member(m, idx, inner);
    });
  }

  // A method or constructor (node kind `k`): its parameters, then the references in its body.
  void visit_callable(TSNode n, int k, int parent, const std::string& prefix) {
    TSNode name = field(n, g_.f_name);
    if (ts_node_is_null(name)) return;
    EntityKind ek = k == j_method_declaration ? EntityKind::method : EntityKind::constructor;
    int idx = add_entity(n, ek, std::string(text(name)), parent, prefix);
    TSNode params = field(n, g_.f_parameters);
    if (!ts_node_is_null(params)) {
      ts::for_each_child(params, true, [&](TSNode p) {
        Parameter prm;
        if (kind(p) == j_spread_parameter) {
          prm.kind = Parameter::var_positional;
          ts::for_each_child(p, true, [&](TSNode c) {
            if (kind(c) == j_variable_declarator) prm.name = std::string(text(field(c, g_.f_name)));
          });
        } else if (kind(p) == j_formal_parameter) {
          prm.name = std::string(text(field(p, g_.f_name)));
          prm.annotation = compact(text(field(p, g_.f_type)));
        } else {
          return;
        }
        out_.entities[idx].params.push_back(std::move(prm));
      });
    }
    TSNode body = field(n, g_.f_body);
    if (!ts_node_is_null(body)) scan(body, idx);
  }

  // "a.b.c" for field-access chains rooted at a name, this or super; a scoped identifier as written.
  // Iterative: chains can be arbitrarily long.
  bool chain_of(TSNode n, std::string& out) const {
    std::vector<TSNode> fields;
    TSNode cur = n;
    for (;;) {
      int k = kind(cur);
      if (k == j_field_access) {
        fields.push_back(field(cur, g_.f_field));
        cur = field(cur, g_.f_object);
        continue;
      }
      if (k == j_identifier || k == j_this || k == j_super) {
        out.assign(text(cur));
        break;
      }
      if (k == j_scoped_identifier) {
        out = compact(text(cur));
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

  // Method calls, instantiations and field accesses in a body, in source order. Iterative (an explicit
  // stack, depth first): `a.b().b()...` and `1+1+...` nest one tree level per term.
  void scan(TSNode root, int scope) {
    walk(root, [&](TSNode n, auto&& later) { scan_node(n, scope, later); });
  }

  // One node of scan(): its own record, and its children to scan next (in order) through `later`.
  template <class Later>
  void scan_node(TSNode n, int scope, Later&& later) {
    int k = kind(n);
    if (k == j_method_invocation) {
      TSNode obj = field(n, g_.f_object);
      TSNode name = field(n, g_.f_name);
      TSNode args = field(n, g_.f_arguments);
      int nargs = ts_node_is_null(args) ? 0 : static_cast<int>(ts_node_named_child_count(args));
      std::string chain;
      if (ts_node_is_null(obj))
        chain.assign(text(name));
      else if (chain_of(obj, chain))
        chain += "." + std::string(text(name));
      else {
        later(obj);
        chain.clear();
      }
      if (!chain.empty()) record(scope, chain, RefKind::call, n, nargs);
      later(args);
      return;
    }
    if (k == j_object_creation_expression) {
      TSNode type = field(n, g_.f_type);
      TSNode args = field(n, g_.f_arguments);
      if (!ts_node_is_null(type))
        record(scope, compact(text(type)), RefKind::call, n,
               ts_node_is_null(args) ? 0 : static_cast<int>(ts_node_named_child_count(args)));
      later(args);
      return;
    }
    if (k == j_field_access) {
      std::string chain;
      if (chain_of(n, chain))
        record(scope, chain, RefKind::attribute, n);
      else
        later(field(n, g_.f_object));
      return;
    }
    if (k == j_line_comment || k == j_block_comment) return;
    ts::for_each_child(n, true, [&](TSNode c) { later(c); });
  }
};

}  // namespace

void extract_java(TSParser* parser, std::string_view source, ParsedFile& out, const std::atomic<bool>* stop) {
  TSTree* tree = parse_for_extraction(parser, java_grammar().lang, source, out, stop);
  if (!tree) return;
  Extractor(source, out).run(ts_tree_root_node(tree));
  ts_tree_delete(tree);
}

}  // namespace repoctx
