// C extraction over tree-sitter-c: functions, `#define` macros (function-like -> function, object-like ->
// variable), structs, unions and enums with a body (class; a body without a tag is named by the typedef that
// declares it), typedef names (class), struct and union members (field of the nearest named struct: the
// members of an anonymous struct or union inside another are its members), enumerators and file-scope
// variables (variable); definitions inside `#if`/`#ifdef` branches count, each branch's. `#include`s are
// imports. Inside bodies: calls, identifiers, type names, struct tags and member chains rooted at a file-scope
// name (locals and parameters excluded).
//
// Lines follow universal-ctags (the oracle tests/oracle/c_entities.py checks them): an entity starts on the
// line of its name (`static int\nfoo(void)` starts at `foo`: the specifiers above are its decorated start,
// as a Python decorator is), a tagged type on its `struct`/`union`/`enum` keyword, a macro on `#define`.
#include <tree_sitter/api.h>

#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "repo/parser.h"
#include "repo/reference_walk.h"
#include "repo/ts_util.h"
#include "util/text.h"

extern "C" const TSLanguage* tree_sitter_c(void);

namespace repoctx {
namespace {

enum CKind : int {
  c_preproc_include,
  c_preproc_def,
  c_preproc_function_def,
  c_preproc_if,
  c_preproc_ifdef,
  c_preproc_else,
  c_preproc_elif,
  c_preproc_elifdef,
  c_preproc_params,
  c_linkage_specification,
  c_declaration_list,
  c_function_definition,
  c_declaration,
  c_type_definition,
  c_struct_specifier,
  c_union_specifier,
  c_enum_specifier,
  c_field_declaration_list,
  c_field_declaration,
  c_enumerator_list,
  c_enumerator,
  c_storage_class_specifier,
  c_function_declarator,
  c_pointer_declarator,
  c_array_declarator,
  c_parenthesized_declarator,
  c_attributed_declarator,
  c_init_declarator,
  c_identifier,
  c_field_identifier,
  c_type_identifier,
  c_primitive_type,
  c_parameter_list,
  c_parameter_declaration,
  c_variadic_parameter,
  c_call_expression,
  c_field_expression,
  c_compound_statement,
  c_comment,
  c_string_literal,
  c_system_lib_string,
  c_char_literal,
  c_concatenated_string,
  c_field_designator,
  c_statement_identifier,
  c_macro_type_specifier,
  c_expression_statement,
  c_ERROR,
};
const std::vector<const char*> kCKinds = {
    "preproc_include",
    "preproc_def",
    "preproc_function_def",
    "preproc_if",
    "preproc_ifdef",
    "preproc_else",
    "preproc_elif",
    "preproc_elifdef",
    "preproc_params",
    "linkage_specification",
    "declaration_list",
    "function_definition",
    "declaration",
    "type_definition",
    "struct_specifier",
    "union_specifier",
    "enum_specifier",
    "field_declaration_list",
    "field_declaration",
    "enumerator_list",
    "enumerator",
    "storage_class_specifier",
    "function_declarator",
    "pointer_declarator",
    "array_declarator",
    "parenthesized_declarator",
    "attributed_declarator",
    "init_declarator",
    "identifier",
    "field_identifier",
    "type_identifier",
    "primitive_type",
    "parameter_list",
    "parameter_declaration",
    "variadic_parameter",
    "call_expression",
    "field_expression",
    "compound_statement",
    "comment",
    "string_literal",
    "system_lib_string",
    "char_literal",
    "concatenated_string",
    "field_designator",
    "statement_identifier",
    "macro_type_specifier",
    "expression_statement",
    "ERROR",
};

struct CGrammar {
  const TSLanguage* lang = tree_sitter_c();
  ts::KindTable kinds{lang, kCKinds};
  TSFieldId f(const char* n) const {
    return ts_language_field_id_for_name(lang, n, static_cast<uint32_t>(std::strlen(n)));
  }
  TSFieldId f_name = f("name"), f_body = f("body"), f_type = f("type"), f_declarator = f("declarator"),
            f_parameters = f("parameters"), f_value = f("value"), f_path = f("path"), f_function = f("function"),
            f_arguments = f("arguments"), f_argument = f("argument"), f_field = f("field"),
            f_alternative = f("alternative"), f_condition = f("condition"), f_operator = f("operator");
};
const CGrammar& c_grammar() {
  static const CGrammar g;
  return g;
}

class CExtractor : ReferenceWalk {
 public:
  CExtractor(std::string_view src, ParsedFile& out) : ReferenceWalk(out), src_(src), out_(out), g_(c_grammar()) {}

  void run(TSNode root) { visit_items(root, 0); }

 private:
  std::string_view src_;
  ParsedFile& out_;
  const CGrammar& g_;
  std::vector<TSNode> comments_;            // the comments right before the item being visited
  std::unordered_set<std::string> locals_;  // names bound inside the function being scanned
  bool in_header_ = ends_with(out_.path, ".h");

  int kind(TSNode n) const { return g_.kinds(n); }
  std::string_view text(TSNode n) const { return ts::text(n, src_); }
  TSNode field(TSNode n, TSFieldId f) const { return ts_node_child_by_field_id(n, f); }

  // ---------------------------------------------------------------- items
  // The items of the file, of an `extern "C"` block or of a preprocessor branch (`depth` counts those).
  void visit_items(TSNode list, int depth) {
    if (depth > kMaxBlockNesting) {
      too_deep(list, "conditional compilation", kMaxBlockNesting);
      return;
    }
    struct Item {
      TSNode node;
      std::vector<TSNode> comments;
    };
    std::vector<Item> items;
    std::vector<TSNode> run;
    ts::for_each_child_field(list, [&](TSNode n, TSFieldId f) {
      if (!ts_node_is_named(n) || f == g_.f_condition || f == g_.f_name) return;
      if (kind(n) == c_comment) {
        run.push_back(n);
        return;
      }
      items.push_back({n, std::move(run)});
      run.clear();
    });
    for (size_t i = 0; i < items.size(); ++i) {
      comments_ = std::move(items[i].comments);
      if (i + 1 < items.size() && visit_macro_defined_function(items[i].node, items[i + 1].node))
        ++i;
      else if (!(i + 1 < items.size() && is_specifier_prefix(items[i].node, items[i + 1].node)))
        visit_item(items[i].node, depth);
      comments_.clear();
    }
  }

  // `asmlinkage void noinstr f(void) { ... }`: specifier macros tree-sitter cannot know end a declaration it
  // closes with a missing `;` on the line the function definition starts; that is no variable.
  bool is_specifier_prefix(TSNode decl, TSNode next) const {
    if (kind(decl) != c_declaration || kind(next) != c_function_definition) return false;
    if (ts::start_line(next) != ts::end_line(decl)) return false;
    bool missing = false;
    ts::for_each_child(decl, false, [&](TSNode c) { missing = missing || ts_node_is_missing(c); });
    return missing;
  }

  // `SYSCALL_DEFINE1(acct, const char __user *, name) { ... }`: a macro that writes a function's header,
  // which tree-sitter reads as a call statement followed by a block. The function is named by the macro
  // (as ctags names it: the name the source spells there).
  bool visit_macro_defined_function(TSNode stmt, TSNode block) {
    if (kind(stmt) != c_expression_statement || kind(block) != c_compound_statement) return false;
    TSNode call = ts_node_named_child(stmt, 0);
    if (ts_node_is_null(call) || kind(call) != c_call_expression) return false;
    TSNode fn = field(call, g_.f_function);
    if (ts_node_is_null(fn) || kind(fn) != c_identifier) return false;
    if (ts::start_line(block) > ts::end_line(stmt) + 1) return false;
    std::string nm(text(fn));
    int idx = add_entity(stmt, ts::start_line(fn), ts::end_line(block), EntityKind::function, nm, nm, -1);
    Entity& e = out_.entities[idx];
    e.end_byte = ts_node_end_byte(block);
    e.signature = collapse_spaces(text(call));
    set_body(idx, block);
    locals_.clear();
    collect_locals(block);
    scan(block, idx);
    return true;
  }

  void visit_item(TSNode n, int depth) {
    switch (kind(n)) {
      case c_preproc_include:
        visit_include(n);
        break;
      case c_preproc_def:
      case c_preproc_function_def:
        visit_macro(n);
        break;
      case c_preproc_if:
      case c_preproc_ifdef:
      case c_preproc_else:
      case c_preproc_elif:
      case c_preproc_elifdef:
      case c_declaration_list:
        visit_items(n, depth + 1);
        break;
      case c_ERROR:  // a region tree-sitter could not place (a macro it cannot know) still holds whole items
        visit_items(n, depth + 1);
        break;
      case c_linkage_specification:
        visit_items(field(n, g_.f_body), depth + 1);
        break;
      case c_function_definition:
        visit_function(n);
        break;
      case c_declaration:
        visit_declaration(n);
        break;
      case c_type_definition:
        visit_typedef(n);
        break;
      case c_struct_specifier:
      case c_union_specifier:
      case c_enum_specifier:
        visit_tagged(n, n, "", -1, 0);
        break;
      case c_expression_statement:  // a macro invoked at file scope (`EXPORT_SYMBOL(f);`)
        scan(n, -1);
        break;
      default:
        break;
    }
  }

  // `#include "x.h"` (the includer's folder first: level 1) and `#include <x.h>` (level 0): an include
  // brings every name of the header, like a star import.
  void visit_include(TSNode n) {
    TSNode path = field(n, g_.f_path);
    if (ts_node_is_null(path)) return;
    int pk = kind(path);
    if (pk != c_string_literal && pk != c_system_lib_string) return;
    std::string_view p = text(path);
    if (p.size() < 3) return;
    Import im;
    im.line = ts::start_line(n);
    im.module.assign(trim(p.substr(1, p.size() - 2)));
    im.level = pk == c_string_literal ? 1 : 0;
    im.star = true;
    out_.imports.push_back(std::move(im));
  }

  // ---------------------------------------------------------------- definitions
  // The comment block directly above an item (consecutive comments, each ending on the line before the
  // next): its first line and its text.
  std::pair<int, std::string> doc_before(TSNode item) const {
    int expect = ts::start_line(item) - 1, first = 0;
    std::vector<std::string_view> parts;
    for (auto it = comments_.rbegin(); it != comments_.rend(); ++it) {
      if (ts::end_line(*it) != expect) break;
      parts.push_back(text(*it));
      first = ts::start_line(*it);
      expect = first - 1;
    }
    std::string doc;
    for (auto it = parts.rbegin(); it != parts.rend(); ++it) {
      std::string_view t = *it;
      if (starts_with(t, "//"))
        t = t.substr(2);
      else if (starts_with(t, "/*") && t.size() >= 4)
        t = t.substr(2, t.size() - 4);
      for (auto line : split_lines(t)) {
        std::string_view l = trim(line);
        if (starts_with(l, "*")) l = trim(l.substr(1));
        if (!doc.empty()) doc.push_back('\n');
        doc.append(l);
      }
    }
    return {first, std::string(trim(doc))};
  }

  // An entity named at `name_line`, spanning the bytes of `whole` (its declaration: specifiers included).
  int add_entity(TSNode whole, int name_line, int end_line, EntityKind k, std::string name, std::string qualname,
                 int parent) {
    Entity e;
    e.name = std::move(name);
    e.qualname = std::move(qualname);
    e.kind = k;
    e.parent = parent;
    e.start_line = name_line;
    e.end_line = std::max(end_line, name_line);
    e.decorated_start_line = std::min(ts::start_line(whole), name_line);
    e.start_byte = ts_node_start_byte(whole);
    e.end_byte = ts_node_end_byte(whole);
    e.header_end_line = e.end_line;
    if (parent < 0) {
      auto [first, doc] = doc_before(whole);
      e.docstring = std::move(doc);
      if (first > 0) e.decorated_start_line = std::min(e.decorated_start_line, first);
    }
    out_.entities.push_back(std::move(e));
    return static_cast<int>(out_.entities.size()) - 1;
  }

  // The identifier a declarator declares (through pointers, arrays, parentheses, attributes and an
  // initialiser), or a null node (an abstract declarator); `fn` is set to the function declarator met on
  // the way, if any.
  TSNode declared_name(TSNode d, TSNode* fn = nullptr) const {
    for (int guard = 0; !ts_node_is_null(d) && guard < kMaxBlockNesting; ++guard) {
      int k = kind(d);
      if (k == c_identifier || k == c_field_identifier || k == c_type_identifier)
        return ts_node_is_missing(d) || ts_node_start_byte(d) == ts_node_end_byte(d) ? TSNode{} : d;
      if (k == c_function_declarator && fn && ts_node_is_null(*fn)) *fn = d;
      if (k == c_parenthesized_declarator || k == c_attributed_declarator) {
        TSNode inner{};
        ts::for_each_child(d, true, [&](TSNode c) {
          if (ts_node_is_null(inner) && kind(c) != c_comment) inner = c;
        });
        d = inner;
        continue;
      }
      d = field(d, g_.f_declarator);
    }
    return TSNode{};
  }

  bool has_storage(TSNode decl, std::string_view which) const {
    bool found = false;
    ts::for_each_child(decl, true, [&](TSNode c) {
      if (kind(c) == c_storage_class_specifier && text(c) == which) found = true;
    });
    return found;
  }

  void add_params(int idx, TSNode fn) {
    TSNode list = ts_node_is_null(fn) ? TSNode{} : field(fn, g_.f_parameters);
    if (ts_node_is_null(list)) return;
    ts::for_each_child(list, true, [&](TSNode p) {
      Parameter prm;
      if (kind(p) == c_variadic_parameter) {
        prm.kind = Parameter::var_positional;
        prm.annotation = "...";
      } else if (kind(p) == c_parameter_declaration) {
        TSNode name = declared_name(field(p, g_.f_declarator));
        if (!ts_node_is_null(name)) prm.name.assign(text(name));
        prm.annotation = collapse_spaces(text(field(p, g_.f_type)));
        if (prm.name.empty() && prm.annotation == "void" && ts_node_named_child_count(list) == 1) return;
      } else {
        return;
      }
      out_.entities[idx].params.push_back(std::move(prm));
    });
  }

  // Header and body lines of a function from its block.
  void set_body(int idx, TSNode body) {
    if (ts_node_is_null(body)) return;
    Entity& e = out_.entities[idx];
    e.header_end_line = ts::start_line(body);
    TSNode first{};
    ts::for_each_child(body, true, [&](TSNode c) {
      if (ts_node_is_null(first) && kind(c) != c_comment) first = c;
    });
    if (ts_node_is_null(first)) return;
    e.body_start_line = ts::start_line(first);
    e.body_end_line = e.end_line;
    e.body_start_byte = ts_node_start_byte(first);
  }

  void visit_function(TSNode n) {
    TSNode fn{};
    TSNode name = declared_name(field(n, g_.f_declarator), &fn);
    // `SYSCALL_DEFINE0(getpid) { ... }` reads as type `SYSCALL_DEFINE0` and declarator `(getpid)`: without a
    // function declarator it can only be a macro writing the header, named by the macro (as ctags does).
    TSNode type = field(n, g_.f_type);
    if (ts_node_is_null(fn) && !ts_node_is_null(type) && kind(type) == c_type_identifier) name = type;
    if (ts_node_is_null(name)) return;
    std::string nm(text(name));
    int idx = add_entity(n, ts::start_line(name), ts::end_line(n), EntityKind::function, nm, nm, -1);
    if (has_storage(n, "static")) out_.entities[idx].decorators.push_back("static");
    add_params(idx, fn);
    TSNode body = field(n, g_.f_body);
    Entity& e = out_.entities[idx];
    uint32_t hdr_end = ts_node_is_null(body) ? e.end_byte : ts_node_start_byte(body);
    e.signature = collapse_spaces(src_.substr(e.start_byte, hdr_end - e.start_byte));
    set_body(idx, body);
    locals_.clear();
    for (const auto& p : out_.entities[idx].params)
      if (!p.name.empty()) locals_.insert(p.name);
    if (!ts_node_is_null(body)) collect_locals(body);
    scan_type(field(n, g_.f_type), idx);
    if (!ts_node_is_null(fn)) scan(field(fn, g_.f_parameters), idx);
    if (!ts_node_is_null(body)) scan(body, idx);
    locals_.clear();
  }

  // `#define N 1` (variable) and `#define f(a, b) ...` (function): file-local in a .c file, every
  // includer's in a header (the resolver's rule).
  void visit_macro(TSNode n) {
    TSNode name = field(n, g_.f_name);
    if (ts_node_is_null(name)) return;
    bool fn = kind(n) == c_preproc_function_def;
    std::string nm(text(name));
    TSNode value = field(n, g_.f_value);
    int end = ts_node_is_null(value) ? ts::start_line(n) : ts::end_line(value);
    int idx = add_entity(n, ts::start_line(n), end, fn ? EntityKind::function : EntityKind::variable, nm, nm, -1);
    Entity& e = out_.entities[idx];
    e.decorators.push_back("define");
    std::string_view whole = text(n);
    e.signature = collapse_spaces(whole.substr(0, std::min<size_t>(whole.size(), 200)));
    if (fn) {
      TSNode params = field(n, g_.f_parameters);
      if (!ts_node_is_null(params))
        ts::for_each_child(params, false, [&](TSNode p) {
          Parameter prm;
          if (kind(p) == c_identifier)
            prm.name.assign(text(p));
          else if (text(p) == "...")
            prm.kind = Parameter::var_positional;
          else
            return;
          e.params.push_back(std::move(prm));
        });
    }
  }

  // A file-scope declaration: the variables it defines (not `extern` ones), a header's function prototypes
  // and the tagged types its specifier defines.
  void visit_declaration(TSNode n) {
    TSNode type = field(n, g_.f_type);
    visit_type_in(n, type, -1);
    bool is_extern = has_storage(n, "extern"), is_static = has_storage(n, "static");
    locals_.clear();
    ts::for_each_child_field(n, [&](TSNode d, TSFieldId f) {
      if (f != g_.f_declarator) return;
      TSNode fn{};
      TSNode name = declared_name(d, &fn);
      if (ts_node_is_null(name)) return;
      if (!ts_node_is_null(fn)) {
        if (in_header_) visit_prototype(n, name, fn);
        return;
      }
      if (is_extern) return;
      std::string nm(text(name));
      int idx = add_entity(n, ts::start_line(name), ts::end_line(n), EntityKind::variable, nm, nm, -1);
      if (is_static) out_.entities[idx].decorators.push_back("static");
      std::string_view whole = text(n);
      out_.entities[idx].signature = collapse_spaces(whole.substr(0, std::min<size_t>(whole.size(), 200)));
      if (kind(d) == c_init_declarator) scan(field(d, g_.f_value), -1);
    });
  }

  // `int f(struct s *p);` in a header: what an includer sees of a function defined elsewhere (its signature and
  // documentation), a function entity without a body marked "declaration".
  void visit_prototype(TSNode decl, TSNode name, TSNode fn) {
    std::string nm(text(name));
    int idx = add_entity(decl, ts::start_line(name), ts::end_line(decl), EntityKind::function, nm, nm, -1);
    Entity& e = out_.entities[idx];
    e.decorators.push_back("declaration");
    std::string_view whole = text(decl);
    e.signature = collapse_spaces(whole.substr(0, std::min<size_t>(whole.size(), 400)));
    add_params(idx, fn);
    locals_.clear();
    for (const auto& p : out_.entities[idx].params)
      if (!p.name.empty()) locals_.insert(p.name);
    scan_type(field(decl, g_.f_type), idx);
    scan(field(fn, g_.f_parameters), idx);
    locals_.clear();
  }

  // `typedef T name, *pname;`: each name a class; an untagged struct, union or enum body in T is named by
  // the first of them.
  void visit_typedef(TSNode n) {
    TSNode type = field(n, g_.f_type);
    std::vector<TSNode> names;
    ts::for_each_child_field(n, [&](TSNode d, TSFieldId f) {
      if (f != g_.f_declarator) return;
      TSNode name = declared_name(d);
      if (!ts_node_is_null(name)) names.push_back(name);
    });
    std::string first = names.empty() ? std::string() : std::string(text(names[0]));
    bool untagged_body =
        is_tagged(type) && ts_node_is_null(field(type, g_.f_name)) && !ts_node_is_null(field(type, g_.f_body));
    if (untagged_body && !first.empty()) {
      visit_tagged(n, type, first, -1, 0);
      names.erase(names.begin());
    } else {
      visit_type_in(n, type, -1);
    }
    std::string_view whole = text(n);
    for (TSNode name : names) {
      std::string nm(text(name));
      int idx = add_entity(n, ts::start_line(name), ts::end_line(name), EntityKind::klass, nm, nm, -1);
      out_.entities[idx].signature = collapse_spaces(whole.substr(0, std::min<size_t>(whole.size(), 200)));
    }
    if (!is_tagged(type)) scan_type(type, -1);
  }

  bool is_tagged(TSNode t) const {
    if (ts_node_is_null(t)) return false;
    int k = kind(t);
    return k == c_struct_specifier || k == c_union_specifier || k == c_enum_specifier;
  }

  // The tagged types a declaration's type specifier defines (a body), for `owner` (-1: file scope).
  void visit_type_in(TSNode decl, TSNode type, int depth) {
    if (!is_tagged(type) || ts_node_is_null(field(type, g_.f_body))) {
      if (is_tagged(type)) scan_type(type, -1);
      return;
    }
    if (ts_node_is_null(field(type, g_.f_name))) {
      if (kind(type) == c_enum_specifier) visit_enumerators(field(type, g_.f_body));  // `enum { A, B };`
      return;
    }
    visit_tagged(decl, type, "", -1, depth < 0 ? 0 : depth);
  }

  // A struct, union or enum with a body, named by its tag (or `name` when untagged); members of a
  // struct/union go to `owner` when it is untagged and nested (`owner` >= 0), else to the new type.
  void visit_tagged(TSNode whole, TSNode type, const std::string& name, int owner, int depth) {
    if (depth > kMaxBlockNesting) {
      too_deep(type, "a struct declaration", kMaxBlockNesting);
      return;
    }
    TSNode body = field(type, g_.f_body);
    if (ts_node_is_null(body)) return;
    TSNode tag = field(type, g_.f_name);
    std::string nm = ts_node_is_null(tag) ? name : std::string(text(tag));
    if (kind(type) == c_enum_specifier) {
      if (!nm.empty()) {
        int idx = add_entity(whole, ts::start_line(type), ts::end_line(type), EntityKind::klass, nm, nm, -1);
        out_.entities[idx].signature = "enum " + nm;
      }
      visit_enumerators(body);
      return;
    }
    int into = owner;
    if (!nm.empty()) {
      // A struct tag has file scope in C even when declared inside another struct.
      TSNode span = ts_node_eq(whole, type) || owner >= 0 ? type : whole;
      into = add_entity(span, ts::start_line(type), ts::end_line(type), EntityKind::klass, nm, nm, -1);
      out_.entities[into].signature = (kind(type) == c_union_specifier ? "union " : "struct ") + nm;
    }
    if (into < 0) return;
    visit_members(body, into, depth + 1);
  }

  void visit_members(TSNode list, int owner, int depth) {
    if (depth > kMaxBlockNesting) {
      too_deep(list, "a struct declaration", kMaxBlockNesting);
      return;
    }
    ts::for_each_child_field(list, [&](TSNode fd, TSFieldId f) {
      if (!ts_node_is_named(fd) || f == g_.f_condition || f == g_.f_name) return;
      int k = kind(fd);
      if (k == c_preproc_if || k == c_preproc_ifdef || k == c_preproc_else || k == c_preproc_elif ||
          k == c_preproc_elifdef) {
        visit_members(fd, owner, depth + 1);
        return;
      }
      if (k != c_field_declaration) return;
      TSNode type = field(fd, g_.f_type);
      bool declares = false;
      const std::string owner_name = out_.entities[owner].qualname;  // a copy: add_entity grows the vector
      ts::for_each_child_field(fd, [&](TSNode d, TSFieldId ff) {
        if (ff != g_.f_declarator) return;
        TSNode name = declared_name(d);
        if (ts_node_is_null(name)) return;
        declares = true;
        std::string nm(text(name));
        int idx =
            add_entity(fd, ts::start_line(name), ts::end_line(fd), EntityKind::field, nm, owner_name + "." + nm, owner);
        std::string_view whole = text(fd);
        out_.entities[idx].signature = collapse_spaces(whole.substr(0, std::min<size_t>(whole.size(), 200)));
      });
      if (is_tagged(type) && !ts_node_is_null(field(type, g_.f_body))) {
        if (ts_node_is_null(field(type, g_.f_name)) && kind(type) != c_enum_specifier)
          visit_tagged(type, type, "", owner, depth);  // untagged: its members are the owner's
        else
          visit_tagged(type, type, "", declares ? -1 : owner, depth);
      } else {
        scan_type(type, owner);
      }
    });
  }

  void visit_enumerators(TSNode list) {
    ts::for_each_child_field(list, [&](TSNode c, TSFieldId f) {
      if (!ts_node_is_named(c) || f == g_.f_condition || f == g_.f_name) return;
      int k = kind(c);
      if (k == c_preproc_if || k == c_preproc_ifdef || k == c_preproc_else || k == c_preproc_elif ||
          k == c_preproc_elifdef) {
        visit_enumerators(c);
        return;
      }
      if (k != c_enumerator) return;
      TSNode name = field(c, g_.f_name);
      if (ts_node_is_null(name)) return;
      std::string nm(text(name));
      int line = ts::start_line(name);
      int idx = add_entity(c, line, line, EntityKind::variable, nm, nm, -1);
      out_.entities[idx].signature = collapse_spaces(text(c).substr(0, std::min<size_t>(text(c).size(), 200)));
      TSNode value = field(c, g_.f_value);
      if (!ts_node_is_null(value)) scan(value, -1);
    });
  }

  // ---------------------------------------------------------------- locals
  // Every name a function body declares, one set per function (a name declared anywhere in it is local
  // everywhere in it: conservative for resolution).
  void collect_locals(TSNode root) {
    std::vector<std::pair<TSNode, int>> stack{{root, 0}};
    while (!stack.empty()) {
      TSNode n = stack.back().first;
      int depth = stack.back().second;  // not a structured binding: lambdas below capture it (clang 14)
      stack.pop_back();
      if (depth > kMaxSyntaxDepth) continue;
      int k = kind(n);
      if (k == c_declaration || k == c_parameter_declaration) {
        ts::for_each_child_field(n, [&](TSNode d, TSFieldId f) {
          if (f != g_.f_declarator) return;
          TSNode name = declared_name(d);
          if (!ts_node_is_null(name)) locals_.emplace(text(name));
        });
      }
      ts::for_each_child(n, true, [&](TSNode c) { stack.push_back({c, depth + 1}); });
    }
  }

  // ---------------------------------------------------------------- references
  // "a.b.c" for a member chain rooted at a file-scope name (not a local), false otherwise.
  bool chain_of(TSNode n, std::string& out) const {
    std::vector<TSNode> fields;
    TSNode cur = n;
    for (int guard = 0; guard < kMaxSyntaxDepth; ++guard) {
      int k = kind(cur);
      if (k == c_field_expression) {
        fields.push_back(field(cur, g_.f_field));
        cur = field(cur, g_.f_argument);
        if (ts_node_is_null(cur)) return false;
        continue;
      }
      if (k != c_identifier && k != c_type_identifier) return false;
      std::string_view root = text(cur);
      if (locals_.count(std::string(root))) return false;
      out.assign(root);
      for (auto it = fields.rbegin(); it != fields.rend(); ++it) {
        out.push_back('.');
        out.append(text(*it));
      }
      return true;
    }
    return false;
  }

  void scan_type(TSNode n, int scope) {
    if (!ts_node_is_null(n)) scan(n, scope);
  }

  // Calls, names, type names, struct tags and member chains in source order.
  void scan(TSNode root, int scope) {
    if (ts_node_is_null(root)) return;
    walk(root, [&](TSNode n, auto&& later) { scan_node(n, scope, later); });
  }

  template <class Later>
  void scan_node(TSNode n, int scope, Later&& later) {
    int k = kind(n);
    std::string chain;
    switch (k) {
      case c_call_expression: {
        TSNode fn = field(n, g_.f_function);
        TSNode args = field(n, g_.f_arguments);
        int nargs = 0;
        if (!ts_node_is_null(args)) ts::for_each_child(args, true, [&](TSNode a) { nargs += kind(a) != c_comment; });
        if (!ts_node_is_null(fn) && chain_of(fn, chain))
          record(scope, chain, RefKind::call, n, nargs);
        else
          later(fn);
        later(args);
        return;
      }
      case c_field_expression:
        if (chain_of(n, chain))
          record(scope, chain, RefKind::attribute, n);
        else
          later(field(n, g_.f_argument));
        return;
      case c_identifier:
      case c_type_identifier:
        if (chain_of(n, chain)) record(scope, chain, RefKind::name, n);
        return;
      case c_struct_specifier:
      case c_union_specifier:
      case c_enum_specifier: {
        TSNode tag = field(n, g_.f_name);
        TSNode body = field(n, g_.f_body);
        if (!ts_node_is_null(tag) && ts_node_is_null(body)) record(scope, std::string(text(tag)), RefKind::name, tag);
        // A type defined inside a function is still a definition (ctags lists it too).
        if (!ts_node_is_null(tag) && !ts_node_is_null(body) && scope >= 0) visit_tagged(n, n, "", -1, 0);
        later(body);
        return;
      }
      case c_preproc_def:
      case c_preproc_function_def:  // a macro defined inside a function body
        if (scope >= 0) visit_macro(n);
        return;
      case c_comment:
      case c_string_literal:
      case c_concatenated_string:
      case c_char_literal:
      case c_field_identifier:
      case c_field_designator:
      case c_statement_identifier:
      case c_primitive_type:
        return;
      default:
        ts::for_each_child(n, true, [&](TSNode c) { later(c); });
    }
  }
};

}  // namespace

void extract_c(TSParser* parser, std::string_view source, ParsedFile& out, const std::atomic<bool>* stop) {
  TSTree* tree = parse_for_extraction(parser, c_grammar().lang, source, out, stop);
  if (!tree) return;
  CExtractor(source, out).run(ts_tree_root_node(tree));
  ts_tree_delete(tree);
}

}  // namespace repoctx
