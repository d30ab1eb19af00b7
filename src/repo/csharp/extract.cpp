// C# extraction over tree-sitter-c-sharp: the file's namespace (its module, like Java's package), using
// directives, types (classes, structs, records, interfaces, enums, delegates; nested), their members (methods,
// constructors, destructors, operators, properties, indexers, events, fields, enum members), local functions,
// and the calls, member accesses and instantiations inside bodies.
#include <tree_sitter/api.h>

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "repo/parser.h"
#include "repo/reference_walk.h"
#include "repo/ts_util.h"
#include "util/text.h"

extern "C" const TSLanguage* tree_sitter_c_sharp(void);

namespace repoctx {
namespace {

enum K : int {
  cs_namespace_declaration,
  cs_file_scoped_namespace_declaration,
  cs_using_directive,
  cs_class_declaration,
  cs_struct_declaration,
  cs_record_declaration,
  cs_interface_declaration,
  cs_enum_declaration,
  cs_delegate_declaration,
  cs_method_declaration,
  cs_constructor_declaration,
  cs_destructor_declaration,
  cs_operator_declaration,
  cs_conversion_operator_declaration,
  cs_property_declaration,
  cs_indexer_declaration,
  cs_event_declaration,
  cs_event_field_declaration,
  cs_field_declaration,
  cs_enum_member_declaration,
  cs_local_function_statement,
  cs_variable_declaration,
  cs_variable_declarator,
  cs_parameter,
  cs_base_list,
  cs_primary_constructor_base_type,
  cs_attribute_list,
  cs_preproc_if,
  cs_preproc_elif,
  cs_preproc_else,
  cs_invocation_expression,
  cs_member_access_expression,
  cs_object_creation_expression,
  cs_identifier,
  cs_generic_name,
  cs_qualified_name,
  cs_alias_qualified_name,
  cs_predefined_type,
  cs_this,
  cs_base,
  cs_comment,
  cs_static,
  cs_global,
  cs_modifier,
  cs_explicit_interface_specifier,
  cs_declaration_list,
  cs_enum_member_declaration_list,
  cs_ERROR,
};
const std::vector<const char*> kNames = {
    "namespace_declaration",
    "file_scoped_namespace_declaration",
    "using_directive",
    "class_declaration",
    "struct_declaration",
    "record_declaration",
    "interface_declaration",
    "enum_declaration",
    "delegate_declaration",
    "method_declaration",
    "constructor_declaration",
    "destructor_declaration",
    "operator_declaration",
    "conversion_operator_declaration",
    "property_declaration",
    "indexer_declaration",
    "event_declaration",
    "event_field_declaration",
    "field_declaration",
    "enum_member_declaration",
    "local_function_statement",
    "variable_declaration",
    "variable_declarator",
    "parameter",
    "base_list",
    "primary_constructor_base_type",
    "attribute_list",
    "preproc_if",
    "preproc_elif",
    "preproc_else",
    "invocation_expression",
    "member_access_expression",
    "object_creation_expression",
    "identifier",
    "generic_name",
    "qualified_name",
    "alias_qualified_name",
    "predefined_type",
    "this",
    "base",
    "comment",
    "static",
    "global",
    "modifier",
    "explicit_interface_specifier",
    "declaration_list",
    "enum_member_declaration_list",
    "ERROR",
};

struct Grammar {
  const TSLanguage* lang = tree_sitter_c_sharp();
  ts::KindTable kinds{lang, kNames};
  TSFieldId f(const char* n) const {
    return ts_language_field_id_for_name(lang, n, static_cast<uint32_t>(std::strlen(n)));
  }
  TSFieldId f_name = f("name"), f_body = f("body"), f_parameters = f("parameters"), f_type = f("type"),
            f_function = f("function"), f_arguments = f("arguments"), f_expression = f("expression"),
            f_accessors = f("accessors"), f_value = f("value"), f_operator = f("operator");
};
const Grammar& csharp_grammar() {
  static const Grammar g;
  return g;
}

class Extractor : ReferenceWalk {
 public:
  Extractor(std::string_view src, ParsedFile& out) : ReferenceWalk(out), src_(src), out_(out), g_(csharp_grammar()) {}

  void run(TSNode root) {
    visit_container(root, -1, "");
    if (!out_.package.empty()) out_.module = out_.package;
  }

 private:
  std::string_view src_;
  ParsedFile& out_;
  const Grammar& g_;
  std::string namespace_;  // the enclosing namespace, dotted
  bool module_set_ = false;

  int kind(TSNode n) const { return g_.kinds(n); }
  std::string_view text(TSNode n) const { return ts::text(n, src_); }
  TSNode field(TSNode n, TSFieldId f) const { return ts_node_child_by_field_id(n, f); }
  static std::string compact(std::string_view s) {
    std::string o;
    for (char c : s)
      if (!std::isspace(static_cast<unsigned char>(c))) o.push_back(c);
    return o;
  }
  // A type as a name lookup sees it: "List" for `List<int>`, "A.B" for `A.B<T>`, "X" for `global::X`.
  static std::string type_name(std::string_view s) {
    std::string o = compact(s);
    if (size_t lt = o.find('<'); lt != std::string::npos) o.resize(lt);
    if (size_t q = o.find("::"); q != std::string::npos) o.erase(0, q + 2);
    while (!o.empty() && (o.back() == '?' || o.back() == ']' || o.back() == '[' || o.back() == '*')) o.pop_back();
    return o;
  }

  // Namespaces, using directives and type declarations of a compilation unit, a namespace body or a
  // preprocessor branch.
  void visit_container(TSNode n, int parent, const std::string& prefix) {
    ts::for_each_child(n, true, [&](TSNode c) {
      switch (kind(c)) {
        case cs_namespace_declaration:
          visit_namespace(c);
          break;
        case cs_file_scoped_namespace_declaration:
          // `namespace A.B;` applies to the rest of the file.
          namespace_ = compact(text(field(c, g_.f_name)));
          visit_container(c, parent, prefix);
          break;
        case cs_using_directive:
          visit_using(c);
          break;
        case cs_preproc_if:
        case cs_preproc_elif:
        case cs_preproc_else:
          visit_container(c, parent, prefix);
          break;
        default:
          visit_member(c, parent, prefix);
      }
    });
  }

  void visit_namespace(TSNode n) {
    std::string saved = namespace_;
    std::string name = compact(text(field(n, g_.f_name)));
    namespace_ = namespace_.empty() ? name : namespace_ + "." + name;
    TSNode body = field(n, g_.f_body);
    if (!ts_node_is_null(body)) nested(n, "namespaces", [&] { visit_container(body, -1, ""); });
    namespace_ = saved;
  }

  // `using A.B;` -> the types of namespace A.B (a star import); `using static A.B.C;` -> the members of type C
  // of A.B (star, named C); `using X = A.B.C;` -> C of A.B bound as X.
  void visit_using(TSNode n) {
    Import im;
    im.line = ts::start_line(n);
    bool is_static = false;
    TSNode alias{}, target{};
    ts::for_each_child_field(n, [&](TSNode c, TSFieldId f) {
      if (f == g_.f_name)
        alias = c;
      else if (kind(c) == cs_static)
        is_static = true;
      else if (ts_node_is_named(c) && kind(c) != cs_global && ts_node_is_null(target))
        target = c;
    });
    if (ts_node_is_null(target)) return;
    std::string path = compact(text(target));
    if (size_t q = path.find("::"); q != std::string::npos) path.erase(0, q + 2);
    size_t dot = path.rfind('.');
    if (!ts_node_is_null(alias)) {
      im.alias.assign(text(alias));
      im.module = dot == std::string::npos ? "" : path.substr(0, dot);
      im.name = dot == std::string::npos ? path : path.substr(dot + 1);
      if (size_t lt = im.name.find('<'); lt != std::string::npos) im.name.resize(lt);
    } else if (is_static) {
      im.star = true;
      im.module = dot == std::string::npos ? "" : path.substr(0, dot);
      im.name = type_name(dot == std::string::npos ? path : path.substr(dot + 1));
    } else {
      im.star = true;
      im.module = path;
    }
    out_.imports.push_back(std::move(im));
  }

  // The comment block directly above a declaration (consecutive comments, each ending on the line before the
  // next: `///` XML documentation or plain `//` and `/* */` comments), without its markers.
  std::string doc_before(TSNode n) const {
    std::vector<std::string_view> parts;
    int expect = ts::start_line(n) - 1;
    for (TSNode prev = ts_node_prev_sibling(n); !ts_node_is_null(prev) && kind(prev) == cs_comment;
         prev = ts_node_prev_sibling(prev)) {
      if (ts::end_line(prev) != expect) break;
      parts.push_back(text(prev));
      expect = ts::start_line(prev) - 1;
    }
    std::reverse(parts.begin(), parts.end());
    return comment_block_text(parts);
  }

  // The first child that is not an attribute list: where the declaration itself starts.
  TSNode after_attributes(TSNode n) const {
    TSNode first{};
    ts::for_each_child(n, false, [&](TSNode c) {
      if (!ts_node_is_null(first) || kind(c) == cs_attribute_list || kind(c) == cs_comment) return;
      first = c;
    });
    return ts_node_is_null(first) ? n : first;
  }

  std::string qualified_prefix(const std::string& prefix) {
    if (!prefix.empty()) return prefix;
    // The first top-level type names the file's module; a type of another namespace in the same file keeps
    // its namespace in its qualified name (a lookup of the module's types does not find it).
    if (!module_set_) {
      module_set_ = true;
      out_.package = namespace_;
    }
    return namespace_ == out_.package || namespace_.empty() ? "" : namespace_ + ".";
  }

  int add_entity(TSNode n, EntityKind k, const std::string& name, int parent, const std::string& prefix, TSNode body) {
    Entity e;
    e.name = name;
    e.qualname = qualified_prefix(prefix) + name;
    e.kind = k;
    e.parent = parent;
    TSNode head = after_attributes(n);
    e.decorated_start_line = ts::start_line(n);
    e.start_line = ts::start_line(head);
    e.end_line = ts::end_line(n);
    e.start_byte = ts_node_start_byte(n);
    e.end_byte = ts_node_end_byte(n);
    e.docstring = doc_before(n);
    ts::for_each_child(n, true, [&](TSNode c) {
      if (kind(c) == cs_attribute_list) e.decorators.push_back(compact(text(c)));
    });
    uint32_t head_start = ts_node_start_byte(head);
    uint32_t hdr_end = ts_node_is_null(body) ? ts_node_end_byte(n) : ts_node_start_byte(body);
    if (hdr_end < head_start) hdr_end = head_start;
    e.signature = collapse_spaces(src_.substr(head_start, hdr_end - head_start));
    while (!e.signature.empty() && (e.signature.back() == ';' || e.signature.back() == ' ')) e.signature.pop_back();
    set_body_lines(e, body);
    out_.entities.push_back(std::move(e));
    return static_cast<int>(out_.entities.size()) - 1;
  }

  // Types nest: at most kMaxBlockNesting levels are walked.
  void visit_member(TSNode n, int parent, const std::string& prefix) {
    nested(n, "type declarations", [&] { visit_member_at_depth(n, parent, prefix); });
  }

  void visit_member_at_depth(TSNode n, int parent, const std::string& prefix) {
    int k = kind(n);
    switch (k) {
      case cs_class_declaration:
      case cs_struct_declaration:
      case cs_record_declaration:
      case cs_interface_declaration:
      case cs_enum_declaration:
      case cs_delegate_declaration:
        visit_type_declaration(n, k, parent, prefix);
        return;
      case cs_method_declaration:
      case cs_constructor_declaration:
      case cs_destructor_declaration:
      case cs_operator_declaration:
      case cs_conversion_operator_declaration:
        visit_callable(n, k, parent, prefix);
        return;
      case cs_property_declaration:
      case cs_indexer_declaration:
      case cs_event_declaration:
        visit_property(n, k, parent, prefix);
        return;
      case cs_field_declaration:
      case cs_event_field_declaration:
        visit_fields(n, parent, prefix);
        return;
      case cs_preproc_if:
      case cs_preproc_elif:
      case cs_preproc_else:
        ts::for_each_child(n, true, [&](TSNode c) { visit_member(c, parent, prefix); });
        return;
      default:
        return;
    }
  }

  // A class, struct, record, interface, enum or delegate (node kind `k`): its bases, then its members.
  void visit_type_declaration(TSNode n, int k, int parent, const std::string& prefix) {
    TSNode name = field(n, g_.f_name);
    if (ts_node_is_null(name)) return;
    EntityKind ek = k == cs_interface_declaration ? EntityKind::interface : EntityKind::klass;
    TSNode body = field(n, g_.f_body);
    int idx = add_entity(n, ek, std::string(text(name)), parent, prefix, body);
    ts::for_each_child(n, true, [&](TSNode c) {
      if (kind(c) != cs_base_list) return;
      ts::for_each_child(c, true, [&](TSNode t) {
        if (kind(t) == cs_primary_constructor_base_type) {
          TSNode ty = field(t, g_.f_type);
          if (!ts_node_is_null(ty)) out_.entities[idx].bases.push_back(type_name(text(ty)));
          scan(t, idx);  // `record B(int x) : A(x)`: the base constructor's arguments
        } else if (ts_node_is_named(t) && kind(t) != cs_comment) {
          out_.entities[idx].bases.push_back(type_name(text(t)));
        }
      });
    });
    if (k == cs_delegate_declaration) {
      add_parameters(field(n, g_.f_parameters), idx);
      return;
    }
    std::string inner = out_.entities[idx].qualname + ".";
    if (ts_node_is_null(body)) return;
    if (k == cs_enum_declaration) {
      visit_enum_members(body, idx, inner);
      return;
    }
    ts::for_each_child(body, true, [&](TSNode m) { visit_member(m, idx, inner); });
  }

  void visit_enum_members(TSNode list, int parent, const std::string& prefix) {
    ts::for_each_child(list, true, [&](TSNode m) {
      int k = kind(m);
      if (k == cs_preproc_if || k == cs_preproc_elif || k == cs_preproc_else) {
        visit_enum_members(m, parent, prefix);
      } else if (k == cs_enum_member_declaration) {
        TSNode nm = field(m, g_.f_name);
        if (!ts_node_is_null(nm)) add_entity(m, EntityKind::field, std::string(text(nm)), parent, prefix, TSNode{});
      }
    });
  }

  void add_parameters(TSNode params, int idx) {
    if (ts_node_is_null(params)) return;
    // `params int[] xs` is no `parameter` node: its type and name are the list's own fields.
    TSNode rest = field(params, g_.f_name);
    ts::for_each_child(params, true, [&](TSNode p) {
      if (kind(p) != cs_parameter) return;
      Parameter prm;
      TSNode nm = field(p, g_.f_name);
      if (ts_node_is_null(nm)) return;
      prm.name.assign(text(nm));
      TSNode ty = field(p, g_.f_type);
      if (!ts_node_is_null(ty)) prm.annotation = compact(text(ty));
      ts::for_each_child(p, false, [&](TSNode c) {
        if (kind(c) == cs_modifier && text(c) == "params") prm.kind = Parameter::var_positional;
        if (ts_node_is_named(c) && !ts_node_eq(c, nm) && !ts_node_eq(c, ty) && kind(c) != cs_modifier &&
            kind(c) != cs_attribute_list)
          prm.has_default = true;
      });
      out_.entities[idx].params.push_back(std::move(prm));
    });
    if (!ts_node_is_null(rest)) {
      Parameter prm;
      prm.name.assign(text(rest));
      prm.kind = Parameter::var_positional;
      TSNode ty = field(params, g_.f_type);
      if (!ts_node_is_null(ty)) prm.annotation = compact(text(ty));
      out_.entities[idx].params.push_back(std::move(prm));
    }
  }

  // The name of a callable (node kind `k`): operators as `operator +` / `operator int`, destructors as `~C`.
  std::string callable_name(TSNode n, int k) const {
    if (k == cs_operator_declaration) {
      TSNode op = field(n, g_.f_operator);
      return ts_node_is_null(op) ? "operator" : "operator " + std::string(text(op));
    }
    if (k == cs_conversion_operator_declaration) {
      TSNode ty = field(n, g_.f_type);
      return ts_node_is_null(ty) ? "operator" : "operator " + compact(text(ty));
    }
    TSNode name = field(n, g_.f_name);
    if (ts_node_is_null(name)) return {};
    return k == cs_destructor_declaration ? "~" + std::string(text(name)) : std::string(text(name));
  }

  // A method, constructor, destructor or operator (node kind `k`): its parameters, then its body.
  void visit_callable(TSNode n, int k, int parent, const std::string& prefix) {
    std::string name = callable_name(n, k);
    if (name.empty()) return;
    EntityKind ek = k == cs_constructor_declaration ? EntityKind::constructor : EntityKind::method;
    TSNode body = field(n, g_.f_body);
    int idx = add_entity(n, ek, name, parent, prefix, body);
    add_parameters(field(n, g_.f_parameters), idx);
    // `: base(x)` / `: this(x)` and the body.
    ts::for_each_child(n, true, [&](TSNode c) {
      if (std::strcmp(ts_node_type(c), "constructor_initializer") == 0) scan(c, idx);
    });
    if (!ts_node_is_null(body)) scan(body, idx);
  }

  // A property, indexer (named `this`) or event with accessors: one field whose accessor bodies and
  // initialiser are its references.
  void visit_property(TSNode n, int k, int parent, const std::string& prefix) {
    std::string name;
    if (k == cs_indexer_declaration) {
      name = "this";
    } else {
      TSNode nm = field(n, g_.f_name);
      if (ts_node_is_null(nm)) return;
      name.assign(text(nm));
    }
    TSNode accessors = field(n, g_.f_accessors);
    TSNode value = field(n, g_.f_value);
    int idx = add_entity(n, EntityKind::field, name, parent, prefix, accessors);
    if (k == cs_indexer_declaration) add_parameters(field(n, g_.f_parameters), idx);
    if (!ts_node_is_null(accessors)) scan(accessors, idx);
    if (!ts_node_is_null(value)) scan(value, idx);
  }

  // `int a = 1, b;` / `event EventHandler E;`: one field per declarator, each with its initialiser.
  void visit_fields(TSNode n, int parent, const std::string& prefix) {
    ts::for_each_child(n, true, [&](TSNode decl) {
      if (kind(decl) != cs_variable_declaration) return;
      ts::for_each_child(decl, true, [&](TSNode v) {
        if (kind(v) != cs_variable_declarator) return;
        TSNode nm = field(v, g_.f_name);
        if (ts_node_is_null(nm)) return;
        int idx = add_entity(n, EntityKind::field, std::string(text(nm)), parent, prefix, TSNode{});
        uint32_t head = ts_node_start_byte(after_attributes(n));
        out_.entities[idx].signature = collapse_spaces(src_.substr(head, ts_node_end_byte(n) - head));
        scan(v, idx);
      });
    });
  }

  // What a member access reads from: its `expression`, or the `this` / `base` keyword the grammar leaves
  // unnamed and outside that field.
  TSNode receiver(TSNode access) const {
    TSNode e = field(access, g_.f_expression);
    if (!ts_node_is_null(e)) return e;
    TSNode first = ts_node_child(access, 0);
    return !ts_node_is_null(first) && (kind(first) == cs_this || kind(first) == cs_base) ? first : TSNode{};
  }

  // "a.b.c" for member-access chains rooted at a name, `this`, `base` or a predefined type (`string.Join`);
  // generic arguments dropped (`List<int>.Empty` -> "List.Empty"). Iterative: chains can be arbitrarily long.
  bool chain_of(TSNode n, std::string& out) const {
    std::vector<TSNode> names;
    TSNode cur = n;
    for (;;) {
      int k = kind(cur);
      if (k == cs_member_access_expression) {
        names.push_back(field(cur, g_.f_name));
        cur = receiver(cur);
        if (ts_node_is_null(cur)) return false;
        continue;
      }
      if (k == cs_identifier || k == cs_this || k == cs_base || k == cs_predefined_type) {
        out.assign(text(cur));
        break;
      }
      if (k == cs_generic_name || k == cs_qualified_name || k == cs_alias_qualified_name) {
        out = type_name(text(cur));
        break;
      }
      return false;
    }
    for (auto it = names.rbegin(); it != names.rend(); ++it) {
      out.push_back('.');
      out.append(type_name(text(*it)));
    }
    return true;
  }

  void scan(TSNode root, int scope) {
    walk(root, [&](TSNode n, auto&& later) { scan_node(n, scope, later); });
  }

  static int arg_count(TSNode args) {
    return ts_node_is_null(args) ? 0 : static_cast<int>(ts_node_named_child_count(args));
  }

  // One node of scan(): its own record, and its children to scan next (in order) through `later`.
  template <class Later>
  void scan_node(TSNode n, int scope, Later&& later) {
    int k = kind(n);
    if (k == cs_invocation_expression) {
      TSNode fn = field(n, g_.f_function);
      TSNode args = field(n, g_.f_arguments);
      std::string chain;
      if (!ts_node_is_null(fn) && chain_of(fn, chain))
        record(scope, chain, RefKind::call, n, arg_count(args));
      else if (!ts_node_is_null(fn) && kind(fn) == cs_member_access_expression)
        later(receiver(fn));
      else
        later(fn);
      later(args);
      return;
    }
    if (k == cs_object_creation_expression) {
      TSNode type = field(n, g_.f_type);
      TSNode args = field(n, g_.f_arguments);
      if (!ts_node_is_null(type)) record(scope, type_name(text(type)), RefKind::call, n, arg_count(args));
      later(args);
      ts::for_each_child(n, true, [&](TSNode c) {
        if (!ts_node_eq(c, type) && !ts_node_eq(c, args)) later(c);  // the initializer
      });
      return;
    }
    if (k == cs_member_access_expression) {
      std::string chain;
      if (chain_of(n, chain))
        record(scope, chain, RefKind::attribute, n);
      else
        later(receiver(n));
      return;
    }
    if (k == cs_local_function_statement) {
      visit_local_function(n, scope);
      return;
    }
    if (k == cs_comment) return;
    ts::for_each_child(n, true, [&](TSNode c) { later(c); });
  }

  // A function declared inside a body: an entity nested in the member that declares it.
  void visit_local_function(TSNode n, int scope) {
    TSNode name = field(n, g_.f_name);
    if (ts_node_is_null(name) || scope < 0) return;
    nested(n, "local functions", [&] {
      TSNode body = field(n, g_.f_body);
      std::string prefix = out_.entities[scope].qualname + ".";
      int idx = add_entity(n, EntityKind::function, std::string(text(name)), scope, prefix, body);
      add_parameters(field(n, g_.f_parameters), idx);
      if (!ts_node_is_null(body)) scan(body, idx);
    });
  }
};

}  // namespace

void extract_csharp(TSParser* parser, std::string_view source, ParsedFile& out, const std::atomic<bool>* stop) {
  TSTree* tree = parse_for_extraction(parser, csharp_grammar().lang, source, out, stop);
  if (!tree) return;
  Extractor(source, out).run(ts_tree_root_node(tree));
  ts_tree_delete(tree);
}

}  // namespace repoctx
