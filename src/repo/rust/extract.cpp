// Rust extraction over tree-sitter-rust: functions, methods of `impl` blocks (named by the implementing type,
// "T.m", like Go's receivers), structs, enums and unions (class) with their fields and variants, traits
// (interface) with their methods, type aliases, constants and statics, `macro_rules!` macros (function), and
// the items of inline `mod m { ... }` blocks qualified by the module ("m.f"); `use` trees flattened into one
// import per bound name, with `crate::`, `self::` and `super::` made absolute from the file's module; inside
// bodies, calls, paths (`a::b::c` as the chain "a.b.c"), field accesses, struct literals, macro calls and type
// names (locals excluded, `Self` replaced by the implementing type).
//
// Lines follow syn's spans without attributes (the oracle tests/oracle/rust_entities checks them): an item
// starts at its visibility or keyword; outer attributes and doc comments above it are its decorations.
#include <tree_sitter/api.h>

#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "repo/parser.h"
#include "repo/reference_walk.h"
#include "repo/ts_util.h"
#include "util/text.h"

extern "C" const TSLanguage* tree_sitter_rust(void);

namespace repoctx {
namespace {

enum RustKind : int {
  r_function_item,
  r_function_signature_item,
  r_impl_item,
  r_trait_item,
  r_struct_item,
  r_enum_item,
  r_union_item,
  r_type_item,
  r_const_item,
  r_static_item,
  r_mod_item,
  r_macro_definition,
  r_use_declaration,
  r_extern_crate_declaration,
  r_declaration_list,
  r_field_declaration_list,
  r_field_declaration,
  r_enum_variant_list,
  r_enum_variant,
  r_attribute_item,
  r_line_comment,
  r_block_comment,
  r_doc_comment,
  r_outer_doc_comment_marker,
  r_scoped_use_list,
  r_use_list,
  r_use_as_clause,
  r_use_wildcard,
  r_scoped_identifier,
  r_scoped_type_identifier,
  r_identifier,
  r_type_identifier,
  r_field_identifier,
  r_crate,
  r_self,
  r_super,
  r_parameters,
  r_parameter,
  r_self_parameter,
  r_variadic_parameter,
  r_call_expression,
  r_field_expression,
  r_macro_invocation,
  r_struct_expression,
  r_generic_function,
  r_generic_type,
  r_generic_type_with_turbofish,
  r_let_declaration,
  r_let_condition,
  r_for_expression,
  r_closure_expression,
  r_closure_parameters,
  r_match_arm,
  r_match_pattern,
  r_tuple_struct_pattern,
  r_struct_pattern,
  r_field_pattern,
  r_token_tree,
  r_string_literal,
  r_raw_string_literal,
  r_char_literal,
  r_field_initializer,
  r_shorthand_field_initializer,
  r_label,
  r_lifetime,
  r_trait_bounds,
  r_block,
  r_metavariable,
  r_primitive_type,
  r_shorthand_field_identifier,
  r_ERROR,
};
const std::vector<const char*> kRustKinds = {
    "function_item",
    "function_signature_item",
    "impl_item",
    "trait_item",
    "struct_item",
    "enum_item",
    "union_item",
    "type_item",
    "const_item",
    "static_item",
    "mod_item",
    "macro_definition",
    "use_declaration",
    "extern_crate_declaration",
    "declaration_list",
    "field_declaration_list",
    "field_declaration",
    "enum_variant_list",
    "enum_variant",
    "attribute_item",
    "line_comment",
    "block_comment",
    "doc_comment",
    "outer_doc_comment_marker",
    "scoped_use_list",
    "use_list",
    "use_as_clause",
    "use_wildcard",
    "scoped_identifier",
    "scoped_type_identifier",
    "identifier",
    "type_identifier",
    "field_identifier",
    "crate",
    "self",
    "super",
    "parameters",
    "parameter",
    "self_parameter",
    "variadic_parameter",
    "call_expression",
    "field_expression",
    "macro_invocation",
    "struct_expression",
    "generic_function",
    "generic_type",
    "generic_type_with_turbofish",
    "let_declaration",
    "let_condition",
    "for_expression",
    "closure_expression",
    "closure_parameters",
    "match_arm",
    "match_pattern",
    "tuple_struct_pattern",
    "struct_pattern",
    "field_pattern",
    "token_tree",
    "string_literal",
    "raw_string_literal",
    "char_literal",
    "field_initializer",
    "shorthand_field_initializer",
    "label",
    "lifetime",
    "trait_bounds",
    "block",
    "metavariable",
    "primitive_type",
    "shorthand_field_identifier",
    "ERROR",
};

struct RustGrammar {
  const TSLanguage* lang = tree_sitter_rust();
  ts::KindTable kinds{lang, kRustKinds};
  TSFieldId f(const char* n) const {
    return ts_language_field_id_for_name(lang, n, static_cast<uint32_t>(std::strlen(n)));
  }
  TSFieldId f_name = f("name"), f_body = f("body"), f_type = f("type"), f_trait = f("trait"),
            f_parameters = f("parameters"), f_return_type = f("return_type"), f_pattern = f("pattern"),
            f_value = f("value"), f_function = f("function"), f_arguments = f("arguments"), f_field = f("field"),
            f_path = f("path"), f_list = f("list"), f_alias = f("alias"), f_argument = f("argument"),
            f_macro = f("macro"), f_bounds = f("bounds"), f_outer = f("outer"), f_doc = f("doc");
};
const RustGrammar& rust_grammar() {
  static const RustGrammar g;
  return g;
}

// Names every Rust file sees without a `use` (the prelude's types, variants and std's macros): references to
// them name nothing in a repository.
bool is_prelude(std::string_view n) {
  static const std::unordered_set<std::string_view> names = [] {
    static const char* const all =
        "Some None Ok Err Option Vec String Box ToString ToOwned Clone Copy Send Sync Sized Default Drop Fn "
        "FnMut FnOnce From Into Iterator IntoIterator Extend PartialEq Eq Ord PartialOrd AsRef AsMut TryFrom "
        "TryInto DoubleEndedIterator ExactSizeIterator drop bool char str u8 u16 u32 u64 u128 usize i8 i16 i32 "
        "i64 i128 isize f32 f64 println print eprintln eprint format vec panic assert assert_eq assert_ne "
        "debug_assert debug_assert_eq debug_assert_ne write writeln unreachable unimplemented todo matches "
        "concat stringify include_str include_bytes env cfg line file column format_args dbg _";
    return word_set(all);
  }();
  return names.count(n) > 0;
}

class RustExtractor : ReferenceWalk {
 public:
  RustExtractor(std::string_view src, ParsedFile& out) : ReferenceWalk(out), src_(src), out_(out), g_(rust_grammar()) {
    crate_ = out.module.substr(0, out.module.find('.'));
  }

  void run(TSNode root) { visit_items(root, "", 0); }

 private:
  std::string_view src_;
  ParsedFile& out_;
  const RustGrammar& g_;
  std::string crate_;                       // the crate's name, the first part of the file's module
  std::unordered_set<std::string> locals_;  // names bound inside the function being scanned
  std::string self_type_;                   // what `Self` names inside the impl or trait being visited
  std::vector<TSNode> before_;              // the attributes and comments right before the item being visited

  int kind(TSNode n) const { return g_.kinds(n); }
  std::string_view text(TSNode n) const { return ts::text(n, src_); }
  TSNode field(TSNode n, TSFieldId f) const { return ts_node_child_by_field_id(n, f); }

  // Calls f(item) for each named child of a list that is not an attribute or a comment, with before_ holding
  // the attributes and comments right before it (tree-sitter's prev_sibling walks down from the parent on
  // every call: quadratic in a long list).
  template <class F>
  void for_each_item(TSNode list, F&& f) {
    std::vector<TSNode> run;
    ts::for_each_child(list, true, [&](TSNode c) {
      int k = kind(c);
      if (k == r_attribute_item || k == r_line_comment || k == r_block_comment) {
        run.push_back(c);
        return;
      }
      before_.swap(run);
      run.clear();
      f(c);
      before_.clear();
    });
  }

  // Items of the file (prefix "") or of an inline module (prefix "m."); `depth` counts inline modules,
  // what `super::` climbs first.
  void visit_items(TSNode list, const std::string& prefix, int depth) {
    if (depth > kMaxBlockNesting) return;
    for_each_item(list, [&](TSNode n) {
      switch (kind(n)) {
        case r_function_item:
          visit_function(n, prefix, "", -1);
          break;
        case r_impl_item:
          visit_impl(n, prefix);
          break;
        case r_trait_item:
          visit_trait(n, prefix);
          break;
        case r_struct_item:
        case r_enum_item:
        case r_union_item:
          visit_struct(n, prefix);
          break;
        case r_type_item:
          visit_alias(n, prefix);
          break;
        case r_const_item:
        case r_static_item:
          visit_value(n, prefix);
          break;
        case r_macro_definition:
          visit_macro(n, prefix);
          break;
        case r_use_declaration:
          visit_use(n, depth);
          break;
        case r_extern_crate_declaration:
          visit_extern_crate(n);
          break;
        case r_mod_item: {
          TSNode name = field(n, g_.f_name), body = field(n, g_.f_body);
          if (!ts_node_is_null(name) && !ts_node_is_null(body))
            visit_items(body, prefix + std::string(text(name)) + ".", depth + 1);
          break;
        }
        default:
          break;
      }
    });
  }

  // ---------------------------------------------------------------- imports
  // The module `super` repeated `ups` times names from a file's module after `depth` inline modules ("" when
  // it climbs above the crate).
  std::string climb(int ups, int depth) const {
    std::string m = out_.module;
    ups -= std::min(ups, depth);  // `super` inside an inline module first leaves that module
    for (int i = 0; i < ups; ++i) {
      size_t dot = m.rfind('.');
      if (dot == std::string::npos) return "";
      m.resize(dot);
    }
    return m;
  }

  // Path segments of a use path ("crate", "a", "b"), outermost first; false for a macro metavariable.
  bool path_segments(TSNode n, std::vector<std::string>& out) const {
    std::vector<std::string> rev;
    TSNode cur = n;
    for (int guard = 0; guard < kMaxSyntaxDepth; ++guard) {
      if (ts_node_is_null(cur)) return false;
      int k = kind(cur);
      if (k == r_scoped_identifier) {
        TSNode name = field(cur, g_.f_name);
        if (ts_node_is_null(name)) return false;
        rev.emplace_back(text(name));
        cur = field(cur, g_.f_path);
        if (ts_node_is_null(cur)) break;  // `::a` (2015 edition's crate root): as written
        continue;
      }
      if (k == r_identifier || k == r_crate || k == r_self || k == r_super) {
        rev.emplace_back(text(cur));
        break;
      }
      return false;
    }
    out.insert(out.end(), rev.rbegin(), rev.rend());
    return true;
  }

  // Absolute dotted module of a use path's segments: `crate` -> the crate, `self` -> this module, `super` ->
  // its parent; any other first segment is kept as written (a child module, the crate root in the 2015
  // edition, or another crate: index/symbol_graph.cpp decides).
  bool absolute(const std::vector<std::string>& segs, int depth, std::string& out) const {
    size_t i = 0;
    if (!segs.empty() && segs[0] == "crate") {
      out = crate_;
      i = 1;
    } else if (!segs.empty() && (segs[0] == "self" || segs[0] == "super")) {
      int ups = 0;
      if (segs[0] == "self") i = 1;
      while (i < segs.size() && segs[i] == "super") ++ups, ++i;
      out = climb(ups, depth);
      if (out.empty()) return false;
    }
    for (; i < segs.size(); ++i) {
      if (!out.empty()) out.push_back('.');
      out.append(segs[i]);
    }
    return true;
  }

  void add_import(const std::vector<std::string>& path, const std::string& alias, bool star, int line, int depth) {
    if (path.empty()) return;
    Import im;
    im.line = line;
    im.alias = alias;
    im.star = star;
    std::vector<std::string> segs = path;
    std::string last = segs.back();
    if (star) {
      if (!absolute(segs, depth, im.module)) return;
    } else if (last == "self" && segs.size() > 1) {  // `use a::b::{self}` binds b
      segs.pop_back();
      if (!absolute(segs, depth, im.module)) return;
      if (im.alias.empty()) im.alias = segs.back();
    } else if (segs.size() == 1) {
      if (!absolute(segs, depth, im.module)) return;  // `use foo;`: a crate or module, bound by its name
      if (im.alias.empty()) im.alias = last;
    } else {
      segs.pop_back();
      if (!absolute(segs, depth, im.module)) return;
      im.name = last;
    }
    if (im.alias == "_") return;  // `use Trait as _`: brings methods into scope, binds no name
    out_.imports.push_back(std::move(im));
  }

  // Flattens a use tree: `a::{b, c::d as e, f::*}` -> a.b, a.c.d as e, a.f.*
  void visit_use_tree(TSNode n, std::vector<std::string>& prefix, int line, int depth, int level) {
    if (ts_node_is_null(n) || level > kMaxBlockNesting) return;
    int k = kind(n);
    std::vector<std::string> segs = prefix;
    switch (k) {
      case r_scoped_use_list: {
        TSNode path = field(n, g_.f_path);
        if (!ts_node_is_null(path) && !path_segments(path, segs)) return;
        ts::for_each_child(field(n, g_.f_list), true,
                           [&](TSNode c) { visit_use_tree(c, segs, line, depth, level + 1); });
        return;
      }
      case r_use_list:
        ts::for_each_child(n, true, [&](TSNode c) { visit_use_tree(c, segs, line, depth, level + 1); });
        return;
      case r_use_as_clause: {
        if (!path_segments(field(n, g_.f_path), segs)) return;
        add_import(segs, std::string(text(field(n, g_.f_alias))), false, line, depth);
        return;
      }
      case r_use_wildcard: {
        TSNode path = ts_node_named_child(n, 0);
        if (!ts_node_is_null(path) && !path_segments(path, segs)) return;
        add_import(segs, "", true, line, depth);
        return;
      }
      default:
        if (!path_segments(n, segs)) return;
        add_import(segs, "", false, line, depth);
    }
  }

  void visit_use(TSNode n, int depth) {
    std::vector<std::string> prefix;
    visit_use_tree(field(n, g_.f_argument), prefix, ts::start_line(n), depth, 0);
  }

  void visit_extern_crate(TSNode n) {
    TSNode name = field(n, g_.f_name);
    if (ts_node_is_null(name)) return;
    Import im;
    im.line = ts::start_line(n);
    im.module.assign(text(name));
    if (im.module == "self") return;
    TSNode alias = field(n, g_.f_alias);
    im.alias.assign(ts_node_is_null(alias) ? text(name) : text(alias));
    out_.imports.push_back(std::move(im));
  }

  // ---------------------------------------------------------------- definitions
  // Outer attributes and doc comments directly above an item (rustdoc's `///` and `/** */`): the first line
  // they start on, the attributes' text and the documentation.
  struct Decorations {
    int first_line = 0;
    std::vector<std::string> attributes;
    std::string doc;
  };
  Decorations decorations(TSNode item) const {
    Decorations d;
    std::vector<std::string_view> docs;
    int expect = ts::start_line(item) - 1;
    for (auto it = before_.rbegin(); it != before_.rend(); ++it) {
      TSNode p = *it;
      int k = kind(p);
      if (ts::end_line(p) < expect) break;
      if (k == r_attribute_item) {
        std::string_view t = text(p);
        if (t.size() > 3) d.attributes.insert(d.attributes.begin(), collapse_spaces(t.substr(2, t.size() - 3)));
      } else if (k == r_line_comment || k == r_block_comment) {
        if (ts_node_is_null(field(p, g_.f_outer))) break;  // a plain comment ends the item's decorations
        TSNode doc = field(p, g_.f_doc);
        docs.push_back(ts_node_is_null(doc) ? std::string_view() : text(doc));
      } else {
        break;
      }
      d.first_line = ts::start_line(p);
      expect = d.first_line - 1;
    }
    for (auto it = docs.rbegin(); it != docs.rend(); ++it)
      for (auto line : split_lines(*it)) {
        std::string_view l = trim(line);
        if (starts_with(l, "*")) l = trim(l.substr(1));
        if (!d.doc.empty()) d.doc.push_back('\n');
        d.doc.append(l);
      }
    d.doc = std::string(trim(d.doc));
    return d;
  }

  int add_entity(TSNode n, EntityKind k, std::string name, std::string qualname, int parent) {
    Entity e;
    e.name = std::move(name);
    e.qualname = std::move(qualname);
    e.kind = k;
    e.parent = parent;
    e.start_line = ts::start_line(n);
    e.end_line = ts::end_line(n);
    Decorations d = decorations(n);
    e.decorated_start_line = d.first_line > 0 ? d.first_line : e.start_line;
    e.decorators = std::move(d.attributes);
    e.docstring = std::move(d.doc);
    e.start_byte = ts_node_start_byte(n);
    e.end_byte = ts_node_end_byte(n);
    e.header_end_line = e.end_line;
    out_.entities.push_back(std::move(e));
    return static_cast<int>(out_.entities.size()) - 1;
  }

  // Header, signature and body lines of a function from its body block.
  void set_body(int idx, TSNode body) {
    Entity& e = out_.entities[idx];
    uint32_t hdr_end = ts_node_is_null(body) ? e.end_byte : ts_node_start_byte(body);
    e.signature = collapse_spaces(src_.substr(e.start_byte, hdr_end - e.start_byte));
    if (ts_node_is_null(body)) return;
    e.header_end_line = ts::start_line(body);
    TSNode first{};
    ts::for_each_child(body, true, [&](TSNode c) {
      if (ts_node_is_null(first) && kind(c) != r_line_comment && kind(c) != r_block_comment) first = c;
    });
    if (ts_node_is_null(first)) return;
    e.body_start_line = ts::start_line(first);
    e.body_end_line = e.end_line;
    e.body_start_byte = ts_node_start_byte(first);
  }

  void add_params(int idx, TSNode list) {
    if (ts_node_is_null(list)) return;
    ts::for_each_child(list, true, [&](TSNode p) {
      Parameter prm;
      switch (kind(p)) {
        case r_self_parameter:
          prm.name = "self";
          prm.annotation = collapse_spaces(text(p));
          break;
        case r_parameter: {
          TSNode pat = field(p, g_.f_pattern);
          if (!ts_node_is_null(pat) && kind(pat) == r_identifier) prm.name.assign(text(pat));
          prm.annotation = collapse_spaces(text(field(p, g_.f_type)));
          break;
        }
        case r_variadic_parameter:
          prm.kind = Parameter::var_positional;
          break;
        default:
          return;
      }
      out_.entities[idx].params.push_back(std::move(prm));
    });
  }

  // `owner_type`: the implementing type of an impl's method ("" otherwise); `parent`: a trait's entity.
  void visit_function(TSNode n, const std::string& prefix, const std::string& owner_type, int parent) {
    TSNode name = field(n, g_.f_name);
    if (ts_node_is_null(name) || kind(name) != r_identifier) return;
    std::string nm(text(name));
    bool is_method = !owner_type.empty() || parent >= 0;
    std::string qual = parent >= 0 ? out_.entities[parent].qualname + "." + nm
                                   : prefix + (owner_type.empty() ? "" : owner_type + ".") + nm;
    int idx = add_entity(n, is_method ? EntityKind::method : EntityKind::function, nm, qual, parent);
    add_params(idx, field(n, g_.f_parameters));
    TSNode body = field(n, g_.f_body);
    set_body(idx, body);
    locals_.clear();
    for (const auto& p : out_.entities[idx].params)
      if (!p.name.empty() && p.name != "self") locals_.insert(p.name);
    ts::for_each_child(field(n, g_.f_parameters), true, [&](TSNode p) {
      if (kind(p) == r_parameter) collect_pattern(field(p, g_.f_pattern));
    });
    if (!ts_node_is_null(body)) collect_locals(body);
    int scope = parent >= 0 ? parent : idx;
    scan_types(field(n, g_.f_parameters), scope);
    scan_types(field(n, g_.f_return_type), scope);
    if (!ts_node_is_null(body)) scan(body, idx);
    locals_.clear();
  }

  // The type an impl or a `Self` names, without references, paths' module or type arguments:
  // `&'a mut crate::m::Set<T>` -> "Set".
  std::string base_type_name(TSNode t) const {
    for (int guard = 0; guard < 64 && !ts_node_is_null(t); ++guard) {
      int k = kind(t);
      if (k == r_type_identifier || k == r_primitive_type) return std::string(text(t));
      if (k == r_generic_type) {
        t = field(t, g_.f_type);
      } else if (k == r_scoped_type_identifier) {
        t = field(t, g_.f_name);
      } else if (ts_node_named_child_count(t) > 0 && !ts_node_is_null(field(t, g_.f_type))) {
        t = field(t, g_.f_type);  // reference_type, pointer_type
      } else {
        return "";
      }
    }
    return "";
  }

  void visit_impl(TSNode n, const std::string& prefix) {
    TSNode type = field(n, g_.f_type), body = field(n, g_.f_body);
    std::string owner = base_type_name(type);
    if (owner.empty() || ts_node_is_null(body)) return;
    self_type_ = owner;
    TSNode trait = field(n, g_.f_trait);
    scan_types(trait, -1);
    std::string trait_path;  // `impl fmt::Display for T`: "fmt.Display", as the resolver reads a chain
    if (!ts_node_is_null(trait) && !chain_of(trait, trait_path)) trait_path.clear();
    for_each_item(body, [&](TSNode c) {
      if (kind(c) != r_function_item) return;
      size_t before = out_.entities.size();
      visit_function(c, prefix, owner, -1);
      // The trait an impl method implements: its type's bases gain the trait (provided methods, supertraits).
      if (!trait_path.empty() && out_.entities.size() > before) out_.entities[before].bases.push_back(trait_path);
    });
    self_type_.clear();
  }

  void visit_trait(TSNode n, const std::string& prefix) {
    TSNode name = field(n, g_.f_name);
    if (ts_node_is_null(name)) return;
    std::string nm(text(name));
    int idx = add_entity(n, EntityKind::interface, nm, prefix + nm, -1);
    TSNode body = field(n, g_.f_body);
    Entity& e = out_.entities[idx];
    e.signature = collapse_spaces(
        src_.substr(e.start_byte, (ts_node_is_null(body) ? e.end_byte : ts_node_start_byte(body)) - e.start_byte));
    TSNode bounds = field(n, g_.f_bounds);
    if (!ts_node_is_null(bounds))  // supertraits `trait A: B + C` are A's bases
      ts::for_each_child(bounds, true, [&](TSNode b) {
        std::string base = base_type_name(b);
        if (!base.empty()) out_.entities[idx].bases.push_back(base);
      });
    scan_types(bounds, idx);
    if (ts_node_is_null(body)) return;
    self_type_ = nm;
    for_each_item(body, [&](TSNode c) {
      if (kind(c) == r_function_item) {
        visit_function(c, prefix, "", idx);
      } else if (kind(c) == r_function_signature_item) {
        TSNode mname = field(c, g_.f_name);
        if (ts_node_is_null(mname) || kind(mname) != r_identifier) return;
        std::string mn(text(mname));
        int m = add_entity(c, EntityKind::method, mn, out_.entities[idx].qualname + "." + mn, idx);
        add_params(m, field(c, g_.f_parameters));
        out_.entities[m].signature = collapse_spaces(text(c));
        locals_.clear();
        scan_types(field(c, g_.f_parameters), idx);
        scan_types(field(c, g_.f_return_type), idx);
      }
    });
    self_type_.clear();
  }

  void visit_struct(TSNode n, const std::string& prefix) {
    TSNode name = field(n, g_.f_name);
    if (ts_node_is_null(name)) return;
    std::string nm(text(name));
    int idx = add_entity(n, EntityKind::klass, nm, prefix + nm, -1);
    TSNode body = field(n, g_.f_body);
    {
      Entity& e = out_.entities[idx];
      uint32_t head_end = ts_node_is_null(body) ? e.end_byte : ts_node_start_byte(body);
      e.signature = collapse_spaces(src_.substr(e.start_byte, std::min<uint32_t>(head_end - e.start_byte, 200)));
    }
    if (ts_node_is_null(body)) return;
    locals_.clear();
    self_type_ = nm;
    std::string qual = out_.entities[idx].qualname;
    if (kind(body) == r_field_declaration_list) {
      for_each_item(body, [&](TSNode fd) {
        if (kind(fd) != r_field_declaration) return;
        TSNode fname = field(fd, g_.f_name);
        if (ts_node_is_null(fname)) return;
        std::string fn(text(fname));
        int f = add_entity(fd, EntityKind::field, fn, qual + "." + fn, idx);
        out_.entities[f].signature = collapse_spaces(text(fd));
        scan_types(field(fd, g_.f_type), idx);
      });
    } else if (kind(body) == r_enum_variant_list) {
      for_each_item(body, [&](TSNode v) {
        if (kind(v) != r_enum_variant) return;
        TSNode vname = field(v, g_.f_name);
        if (ts_node_is_null(vname)) return;
        std::string vn(text(vname));
        int f = add_entity(v, EntityKind::field, vn, qual + "." + vn, idx);
        out_.entities[f].signature = collapse_spaces(text(v).substr(0, std::min<size_t>(text(v).size(), 200)));
        scan_types(field(v, g_.f_body), idx);
      });
    } else {
      scan_types(body, idx);  // a tuple struct's field types
    }
    self_type_.clear();
  }

  void visit_alias(TSNode n, const std::string& prefix) {
    TSNode name = field(n, g_.f_name);
    if (ts_node_is_null(name)) return;
    std::string nm(text(name));
    int idx = add_entity(n, EntityKind::klass, nm, prefix + nm, -1);
    out_.entities[idx].signature = collapse_spaces(text(n).substr(0, std::min<size_t>(text(n).size(), 200)));
    locals_.clear();
    scan_types(field(n, g_.f_type), idx);
  }

  void visit_value(TSNode n, const std::string& prefix) {
    TSNode name = field(n, g_.f_name);
    if (ts_node_is_null(name) || text(name) == "_") return;
    std::string nm(text(name));
    int idx = add_entity(n, EntityKind::variable, nm, prefix + nm, -1);
    TSNode value = field(n, g_.f_value);
    Entity& e = out_.entities[idx];
    uint32_t head_end = ts_node_is_null(value) ? e.end_byte : ts_node_start_byte(value);
    e.signature = collapse_spaces(src_.substr(e.start_byte, std::min<uint32_t>(head_end - e.start_byte, 200)));
    locals_.clear();
    scan_types(field(n, g_.f_type), -1);
    if (!ts_node_is_null(value)) scan(value, -1);
  }

  void visit_macro(TSNode n, const std::string& prefix) {
    TSNode name = field(n, g_.f_name);
    if (ts_node_is_null(name)) return;
    std::string nm(text(name));
    int idx = add_entity(n, EntityKind::function, nm, prefix + nm, -1);
    out_.entities[idx].signature = "macro_rules! " + nm;
  }

  // ---------------------------------------------------------------- locals
  // The names a pattern binds (`Some(x)`, `Point { x, y: b }`, `(a, ref mut b)`): identifiers, except the
  // paths that name a pattern's type or variant.
  void collect_pattern(TSNode root) {
    if (ts_node_is_null(root)) return;
    std::vector<TSNode> stack{root};
    while (!stack.empty()) {
      TSNode n = stack.back();
      stack.pop_back();
      int k = kind(n);
      if (k == r_identifier || k == r_shorthand_field_identifier) {  // `Point { x, .. }` binds x
        locals_.emplace(text(n));
        continue;
      }
      if (k == r_scoped_identifier || k == r_scoped_type_identifier || k == r_type_identifier) continue;
      ts::for_each_child_field(n, [&](TSNode c, TSFieldId f) {
        if (!ts_node_is_named(c)) return;
        if ((k == r_tuple_struct_pattern || k == r_struct_pattern) && f == g_.f_type) return;
        if (k == r_field_pattern && f == g_.f_name && !ts_node_is_null(field(n, g_.f_pattern))) return;
        stack.push_back(c);
      });
    }
  }

  // Every name a function binds: let, for, closure parameters, match arms, if/while let. One set per
  // function: a name bound anywhere in it is treated as local everywhere in it (conservative).
  void collect_locals(TSNode root) {
    std::vector<TSNode> stack{root};
    while (!stack.empty()) {
      TSNode n = stack.back();
      stack.pop_back();
      int k = kind(n);
      if (k == r_let_declaration || k == r_let_condition || k == r_for_expression)
        collect_pattern(field(n, g_.f_pattern));
      else if (k == r_closure_parameters)
        ts::for_each_child(n, true,
                           [&](TSNode c) { collect_pattern(kind(c) == r_parameter ? field(c, g_.f_pattern) : c); });
      else if (k == r_match_arm)
        collect_pattern(field(n, g_.f_pattern));
      else if (k == r_function_item || k == r_mod_item || k == r_impl_item)
        continue;  // nested items do not see the function's locals
      ts::for_each_child(n, true, [&](TSNode c) { stack.push_back(c); });
    }
  }

  // ---------------------------------------------------------------- references
  // "a.b.c" for a path (`a::b::c`), a field chain rooted at a name or `self` (`self.x.y`), or a type path;
  // `Self` becomes the implementing type, `self::` is dropped. False when the root is local, a prelude
  // name, or an expression.
  bool chain_of(TSNode n, std::string& out) const {
    std::vector<std::string_view> parts;
    TSNode cur = n;
    int via = -1;  // the kind of node the walk came from (a path or a field access)
    for (int guard = 0; guard < kMaxSyntaxDepth; ++guard) {
      if (ts_node_is_null(cur)) return false;
      int k = kind(cur);
      if (k == r_field_expression) {
        TSNode f = field(cur, g_.f_field);
        if (ts_node_is_null(f) || kind(f) != r_field_identifier) return false;
        parts.push_back(text(f));
        cur = field(cur, g_.f_value);
        via = k;
        continue;
      }
      if (k == r_scoped_identifier || k == r_scoped_type_identifier) {
        TSNode name = field(cur, g_.f_name);
        if (ts_node_is_null(name)) return false;
        parts.push_back(text(name));
        cur = field(cur, g_.f_path);
        via = k;
        continue;
      }
      if (k == r_generic_type || k == r_generic_function || k == r_generic_type_with_turbofish) {
        cur = field(cur, k == r_generic_function ? g_.f_function : g_.f_type);
        continue;
      }
      if (k != r_identifier && k != r_type_identifier && k != r_self && k != r_crate && k != r_super) return false;
      std::string_view root = text(cur);
      if (k == r_identifier && locals_.count(std::string(root))) return false;
      if (is_prelude(root)) return false;
      if (root == "Self") {
        if (self_type_.empty()) return false;
        out = self_type_;
      } else if (k == r_self && via != -1 && via != r_field_expression) {
        out.assign(parts.back());  // `self::f`: this module's f
        parts.pop_back();
      } else {
        out.assign(root);
      }
      break;
    }
    if (out.empty()) return false;
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
      out.push_back('.');
      out.append(*it);
    }
    return true;
  }

  void scan_types(TSNode n, int scope) {
    if (!ts_node_is_null(n)) scan(n, scope);
  }

  // Iterative (an explicit stack): expressions nest one tree level per operator.
  void scan(TSNode root, int scope) {
    walk(root, [&](TSNode n, auto&& later) { scan_node(n, scope, later); });
  }

  // Nodes whose insides reference nothing a body uses: nested items (their own entities or not entities),
  // comments, literals, labels, attributes and macro token trees (not parsed as expressions).
  static bool opaque(int k) {
    switch (k) {
      case r_function_item:
      case r_mod_item:
      case r_impl_item:
      case r_trait_item:
      case r_struct_item:
      case r_enum_item:
      case r_use_declaration:
      case r_line_comment:
      case r_block_comment:
      case r_string_literal:
      case r_raw_string_literal:
      case r_char_literal:
      case r_label:
      case r_lifetime:
      case r_field_identifier:
      case r_attribute_item:
      case r_token_tree:
        return true;
      default:
        return false;
    }
  }

  template <class Later>
  void scan_node(TSNode n, int scope, Later&& later) {
    int k = kind(n);
    if (opaque(k)) return;
    std::string chain;
    switch (k) {
      case r_call_expression: {
        TSNode fn = field(n, g_.f_function);
        TSNode args = field(n, g_.f_arguments);
        int nargs = 0;
        if (!ts_node_is_null(args))
          ts::for_each_child(args, true, [&](TSNode a) {
            if (kind(a) != r_line_comment && kind(a) != r_block_comment && kind(a) != r_attribute_item) ++nargs;
          });
        if (!ts_node_is_null(fn) && chain_of(fn, chain))
          record(scope, chain, RefKind::call, n, nargs);
        else
          later(fn);
        later(args);
        return;
      }
      case r_macro_invocation: {
        TSNode m = field(n, g_.f_macro);
        if (!ts_node_is_null(m) && chain_of(m, chain)) record(scope, chain, RefKind::call, n);
        return;  // a macro's tokens are not parsed as expressions
      }
      case r_struct_expression: {
        TSNode name = field(n, g_.f_name);
        if (!ts_node_is_null(name) && chain_of(name, chain)) record(scope, chain, RefKind::call, n);
        later(field(n, g_.f_body));
        return;
      }
      case r_field_expression:
      case r_scoped_identifier:
      case r_scoped_type_identifier:
        if (chain_of(n, chain))
          record(scope, chain, RefKind::attribute, n);
        else if (k == r_field_expression)
          later(field(n, g_.f_value));
        return;
      case r_generic_type:
      case r_generic_function:  // `Vec<Item>`, `parse::<T>`: the path, then the type arguments
        ts::for_each_child(n, true, [&](TSNode c) { later(c); });
        return;
      case r_identifier:
      case r_type_identifier:
        if (chain_of(n, chain)) record(scope, chain, RefKind::name, n);
        return;
      case r_field_initializer:  // `S { field: v }`: the key names a field of S, not an item
        later(field(n, g_.f_value));
        return;
      case r_shorthand_field_initializer:
        ts::for_each_child(n, true, [&](TSNode c) { later(c); });
        return;
      case r_let_declaration:
        later(field(n, g_.f_type));
        later(field(n, g_.f_value));
        ts::for_each_child_field(n, [&](TSNode c, TSFieldId f) {
          if (f != g_.f_pattern && f != g_.f_type && f != g_.f_value && ts_node_is_named(c)) later(c);
        });
        return;
      default:
        ts::for_each_child(n, true, [&](TSNode c) { later(c); });
    }
  }
};

}  // namespace

void extract_rust(TSParser* parser, std::string_view source, ParsedFile& out, const std::atomic<bool>* stop) {
  TSTree* tree = parse_for_extraction(parser, rust_grammar().lang, source, out, stop);
  if (!tree) return;
  RustExtractor(source, out).run(ts_tree_root_node(tree));
  ts_tree_delete(tree);
}

}  // namespace repoctx
