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

#include <algorithm>
#include <cctype>
#include <cstring>
#include <string>
#include <unordered_set>
#include <vector>

#include "repo/c/includes.h"
#include "repo/parser.h"
#include "repo/reference_walk.h"
#include "repo/ts_util.h"
#include "util/text.h"

extern "C" const TSLanguage* tree_sitter_c(void);
extern "C" const TSLanguage* tree_sitter_cpp(void);

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
  // C++ (tree-sitter-cpp extends tree-sitter-c: the C kinds above keep their names there)
  c_namespace_definition,
  c_nested_namespace_specifier,
  c_namespace_identifier,
  c_class_specifier,
  c_template_declaration,
  c_template_parameter_list,
  c_qualified_identifier,
  c_template_type,
  c_template_function,
  c_template_method,
  c_destructor_name,
  c_operator_name,
  c_reference_declarator,
  c_optional_parameter_declaration,
  c_variadic_parameter_declaration,
  c_base_class_clause,
  c_access_specifier,
  c_alias_declaration,
  c_this,
  c_for_range_loop,
  c_friend_declaration,
  c_raw_string_literal,
  c_field_initializer_list,
  c_operator_cast,
  c_field_initializer,
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
    "namespace_definition",
    "nested_namespace_specifier",
    "namespace_identifier",
    "class_specifier",
    "template_declaration",
    "template_parameter_list",
    "qualified_identifier",
    "template_type",
    "template_function",
    "template_method",
    "destructor_name",
    "operator_name",
    "reference_declarator",
    "optional_parameter_declaration",
    "variadic_parameter_declaration",
    "base_class_clause",
    "access_specifier",
    "alias_declaration",
    "this",
    "for_range_loop",
    "friend_declaration",
    "raw_string_literal",
    "field_initializer_list",
    "operator_cast",
    "field_initializer",
    "ERROR",
};

struct CGrammar {
  explicit CGrammar(const TSLanguage* l) : lang(l) {}
  const TSLanguage* lang;
  ts::KindTable kinds{lang, kCKinds};
  TSFieldId f(const char* n) const {
    return ts_language_field_id_for_name(lang, n, static_cast<uint32_t>(std::strlen(n)));
  }
  TSFieldId f_name = f("name"), f_body = f("body"), f_type = f("type"), f_declarator = f("declarator"),
            f_parameters = f("parameters"), f_value = f("value"), f_path = f("path"), f_function = f("function"),
            f_arguments = f("arguments"), f_argument = f("argument"), f_field = f("field"),
            f_alternative = f("alternative"), f_condition = f("condition"), f_operator = f("operator");
  // C++ only (0 in tree-sitter-c: no node has them there).
  TSFieldId f_scope = f("scope"), f_default_value = f("default_value");
};
const CGrammar& c_grammar(Language lang) {
  static const CGrammar c(tree_sitter_c()), cpp(tree_sitter_cpp());
  return lang == Language::cpp ? cpp : c;
}

class CExtractor : ReferenceWalk {
 public:
  CExtractor(std::string_view src, ParsedFile& out)
      : ReferenceWalk(out), src_(src), out_(out), g_(c_grammar(out.language)) {}

  void run(TSNode root) { visit_items(root, 0); }

 private:
  std::string_view src_;
  ParsedFile& out_;
  const CGrammar& g_;
  std::vector<TSNode> comments_;            // the comments right before the item being visited
  std::unordered_set<std::string> locals_;  // names bound inside the function being scanned
  bool in_header_ = is_c_header_path(out_.path);
  bool cpp_ = out_.language == Language::cpp;
  // C++ scopes: the qualified name of the namespace or class being visited ("ns.Outer." or ""), and the class
  // whose members are being visited (-1: none).
  std::string prefix_;
  std::string namespace_prefix_;  // the namespaces alone ("ns." or "")
  int class_owner_ = -1;
  int local_type_depth_ = 0;
  std::unordered_set<uint32_t> local_types_seen_;  // start bytes of the local types defined so far

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
      case c_namespace_definition:
        visit_namespace(n, depth);
        break;
      case c_class_specifier:
        visit_class(n, n, "", depth);
        break;
      case c_template_declaration:
        visit_template(n, depth, [&](TSNode inner) { visit_item(inner, depth + 1); });
        break;
      case c_alias_declaration:
        visit_alias(n);
        break;
      default:
        break;
    }
  }

  // ---------------------------------------------------------------- C++ scopes
  // '.'-joined path of a (possibly qualified, templated) name: `ns::Foo<T>::bar` -> "ns.Foo.bar", `~Foo` and
  // `operator==` as spelled; "" for what names nothing.
  std::string name_path(TSNode n, int guard = 0) const {
    if (ts_node_is_null(n) || guard > kMaxBlockNesting) return {};
    switch (kind(n)) {
      case c_qualified_identifier: {
        std::string scope = name_path(field(n, g_.f_scope), guard + 1);
        std::string name = name_path(field(n, g_.f_name), guard + 1);
        return scope.empty() ? name : name.empty() ? scope : scope + "." + name;
      }
      case c_template_type:
      case c_template_function:
      case c_template_method:
        return name_path(field(n, g_.f_name), guard + 1);
      case c_nested_namespace_specifier: {
        std::string out;
        ts::for_each_child(n, true, [&](TSNode c) {
          std::string part = name_path(c, guard + 1);
          if (part.empty()) return;
          if (!out.empty()) out.push_back('.');
          out += part;
        });
        return out;
      }
      case c_identifier:
      case c_field_identifier:
      case c_type_identifier:
      case c_namespace_identifier:
      case c_destructor_name:
        return ts_node_is_missing(n) ? std::string() : std::string(text(n));
      case c_operator_name:
        return collapse_spaces(text(n));
      case c_operator_cast:  // `operator bool()`: named by the type it converts to
        return "operator " + collapse_spaces(text(field(n, g_.f_type)));
      default:
        return {};
    }
  }

  static std::string last_part(const std::string& path) {
    size_t dot = path.rfind('.');
    return dot == std::string::npos ? path : path.substr(dot + 1);
  }

  // `namespace a::b { ... }`: its items qualified "a.b." (an anonymous namespace adds nothing).
  void visit_namespace(TSNode n, int depth) {
    std::string saved = prefix_;
    std::string name = name_path(field(n, g_.f_name));
    if (!name.empty()) prefix_ += name + ".";
    namespace_prefix_ = prefix_;
    visit_items(field(n, g_.f_body), depth + 1);
    prefix_ = std::move(saved);
    namespace_prefix_ = prefix_;
  }

  // `template <...> X`: X visited by `visit`, the entity it defines starting at `template` (its decorated start,
  // with the comment above the template as its documentation).
  template <class Visit>
  void visit_template(TSNode n, int depth, Visit&& visit) {
    if (depth > kMaxBlockNesting) {
      too_deep(n, "nested templates", kMaxBlockNesting);
      return;
    }
    TSNode inner{};
    ts::for_each_child(n, true, [&](TSNode c) {
      int k = kind(c);
      if (k != c_template_parameter_list && k != c_comment) inner = c;
    });
    if (ts_node_is_null(inner)) return;
    size_t first = out_.entities.size();
    visit(inner);
    if (first >= out_.entities.size()) return;
    Entity& e = out_.entities[first];
    e.decorated_start_line = std::min(e.decorated_start_line, ts::start_line(n));
    e.start_byte = std::min(e.start_byte, ts_node_start_byte(n));
    if (e.parent < 0 && e.docstring.empty()) {
      auto [line, doc] = doc_before(n);
      e.docstring = std::move(doc);
      if (line > 0) e.decorated_start_line = std::min(e.decorated_start_line, line);
    }
  }

  // `using T = U;`: a type name, like a typedef.
  void visit_alias(TSNode n) {
    std::string nm = name_path(field(n, g_.f_name));
    if (nm.empty()) return;
    int line = ts::start_line(field(n, g_.f_name));  // a type name is one line, as a typedef's (ctags' rule)
    int idx = add_entity(n, line, line, EntityKind::klass, nm, prefix_ + nm, class_owner_);
    std::string_view whole = text(n);
    out_.entities[idx].signature = collapse_spaces(whole.substr(0, std::min<size_t>(whole.size(), 200)));
    scan_type(field(n, g_.f_type), class_owner_);
  }

  // A C++ class, struct or union with a body (`name` names an untagged one a typedef names): a class entity,
  // its bases, and its members qualified by it. An anonymous struct or union inside a class lends its members
  // to the class.
  void visit_class(TSNode whole, TSNode type, const std::string& name, int depth) {
    if (depth > kMaxBlockNesting) {
      too_deep(type, "nested classes", kMaxBlockNesting);
      return;
    }
    TSNode body = field(type, g_.f_body);
    if (ts_node_is_null(body)) return;
    TSNode tag = field(type, g_.f_name);
    std::string path = ts_node_is_null(tag) ? name : name_path(tag);
    if (path.empty()) {
      if (class_owner_ >= 0) visit_class_body(body, depth + 1);
      return;
    }
    std::string simple = last_part(path);
    TSNode span = class_owner_ >= 0 ? type : whole;
    int idx = add_entity(span, ts::start_line(type), ts::end_line(type), EntityKind::klass, simple, prefix_ + path,
                         class_owner_);
    const char* keyword = kind(type) == c_union_specifier    ? "union "
                          : kind(type) == c_struct_specifier ? "struct "
                                                             : "class ";
    std::string signature = keyword + path;
    ts::for_each_child(type, true, [&](TSNode c) {
      if (kind(c) != c_base_class_clause) return;
      signature += " " + collapse_spaces(text(c));
      ts::for_each_child(c, true, [&](TSNode b) {
        std::string base = name_path(b);
        if (!base.empty()) out_.entities[idx].bases.push_back(std::move(base));
        if (kind(b) == c_template_type) scan(b, -1);
      });
    });
    out_.entities[idx].signature = std::move(signature);
    std::string saved_prefix = prefix_;
    int saved_owner = class_owner_;
    prefix_ = out_.entities[idx].qualname + ".";
    class_owner_ = idx;
    visit_class_body(body, depth + 1);
    prefix_ = std::move(saved_prefix);
    class_owner_ = saved_owner;
  }

  void visit_class_body(TSNode list, int depth) {
    if (depth > kMaxBlockNesting) {
      too_deep(list, "a class declaration", kMaxBlockNesting);
      return;
    }
    ts::for_each_child_field(list, [&](TSNode m, TSFieldId f) {
      if (!ts_node_is_named(m) || f == g_.f_condition || f == g_.f_name) return;
      visit_class_member(m, depth);
    });
  }

  void visit_class_member(TSNode m, int depth) {
    switch (kind(m)) {
      case c_preproc_if:
      case c_preproc_ifdef:
      case c_preproc_else:
      case c_preproc_elif:
      case c_preproc_elifdef:
        visit_class_body(m, depth + 1);
        break;
      case c_function_definition:
        visit_function(m);
        break;
      case c_field_declaration:
      case c_declaration:
        visit_field(m, depth);
        break;
      case c_template_declaration:
        visit_template(m, depth, [&](TSNode inner) { visit_class_member(inner, depth + 1); });
        break;
      case c_alias_declaration:
        visit_alias(m);
        break;
      case c_type_definition:
        visit_typedef(m);
        break;
      case c_friend_declaration:  // `friend bool operator==(...) { ... }`: a function of the enclosing namespace
        ts::for_each_child(m, true, [&](TSNode c) {
          if (kind(c) != c_function_definition) return;
          std::string saved_prefix = prefix_;
          int saved_owner = class_owner_;
          prefix_ = namespace_prefix_;
          class_owner_ = -1;
          visit_function(c);
          prefix_ = std::move(saved_prefix);
          class_owner_ = saved_owner;
        });
        break;
      case c_class_specifier:
      case c_struct_specifier:
      case c_union_specifier:
      case c_enum_specifier:
        visit_tagged(m, m, "", -1, depth);
        break;
      default:
        break;
    }
  }

  // A member declaration: data members (field), member function declarations (a method marked "declaration",
  // as a header's prototype is) and the types its specifier defines.
  void visit_field(TSNode fd, int depth) {
    TSNode type = field(fd, g_.f_type);
    ts::for_each_child_field(fd, [&](TSNode d, TSFieldId ff) {
      if (ff != g_.f_declarator) return;
      TSNode fn{};
      TSNode name = declared_name(d, &fn);
      if (ts_node_is_null(name)) return;
      if (!ts_node_is_null(fn)) {
        visit_prototype(fd, name, fn);
        return;
      }
      std::string nm = name_path(name);
      if (nm.empty()) return;
      int idx =
          add_entity(fd, ts::start_line(name), ts::end_line(fd), EntityKind::field, nm, prefix_ + nm, class_owner_);
      std::string_view whole = text(fd);
      out_.entities[idx].signature = collapse_spaces(whole.substr(0, std::min<size_t>(whole.size(), 200)));
      scan(field(fd, g_.f_default_value), class_owner_);
      if (kind(d) == c_init_declarator) scan(field(d, g_.f_value), class_owner_);
    });
    if (is_tagged(type) && !ts_node_is_null(field(type, g_.f_body)))
      visit_tagged(type, type, "", -1, depth);
    else
      scan_type(type, class_owner_);
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
    std::reverse(parts.begin(), parts.end());
    return {first, comment_block_text(parts)};
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
      if (k == c_identifier || k == c_field_identifier || k == c_type_identifier || k == c_qualified_identifier ||
          k == c_destructor_name || k == c_operator_name || k == c_template_function || k == c_operator_cast)
        return ts_node_is_missing(d) || ts_node_start_byte(d) == ts_node_end_byte(d) ? TSNode{} : d;
      if (k == c_function_declarator && fn && ts_node_is_null(*fn)) *fn = d;
      if (k == c_parenthesized_declarator || k == c_attributed_declarator || k == c_reference_declarator) {
        TSNode inner{};
        ts::for_each_child(d, true, [&](TSNode c) {
          if (ts_node_is_null(inner) && kind(c) != c_comment) inner = c;
        });
        // `void (*handler)(int)`: a pointer to a function is a variable, not a function.
        if (fn && k == c_parenthesized_declarator && !ts_node_is_null(inner) && kind(inner) == c_pointer_declarator)
          *fn = TSNode{};
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
      } else if (kind(p) == c_parameter_declaration || kind(p) == c_optional_parameter_declaration ||
                 kind(p) == c_variadic_parameter_declaration) {
        if (kind(p) == c_variadic_parameter_declaration) prm.kind = Parameter::var_positional;
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
    std::string path = cpp_ ? name_path(name) : std::string(text(name));
    if (path.empty()) return;
    std::string nm = last_part(path);
    int idx =
        add_entity(n, ts::start_line(name), ts::end_line(n), function_kind(nm, path), nm, prefix_ + path, class_owner_);
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
    ts::for_each_child(n, true, [&](TSNode c) {  // a constructor's `: base(x), member_(y)`
      if (kind(c) == c_field_initializer_list) scan(c, idx);
    });
    if (!ts_node_is_null(body)) scan(body, idx);
    locals_.clear();
  }

  // A member function is a method (a constructor when named after its class); so is `void A::f() {}`, defined
  // outside its class.
  EntityKind function_kind(const std::string& name, const std::string& path) const {
    if (class_owner_ >= 0)
      return name == out_.entities[class_owner_].name ? EntityKind::constructor : EntityKind::method;
    size_t dot = path.rfind('.');
    if (dot == std::string::npos) return EntityKind::function;
    size_t start = path.rfind('.', dot - 1);
    start = start == std::string::npos ? 0 : start + 1;
    return path.compare(start, dot - start, name) == 0 ? EntityKind::constructor : EntityKind::method;
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
      std::string path = cpp_ ? name_path(name) : std::string(text(name));
      if (path.empty()) return;
      std::string nm = last_part(path);
      int idx = add_entity(n, ts::start_line(name), ts::end_line(n), EntityKind::variable, nm, prefix_ + path, -1);
      if (is_static) out_.entities[idx].decorators.push_back("static");
      std::string_view whole = text(n);
      out_.entities[idx].signature = collapse_spaces(whole.substr(0, std::min<size_t>(whole.size(), 200)));
      if (kind(d) == c_init_declarator) scan(field(d, g_.f_value), -1);
    });
  }

  // `int f(struct s *p);` in a header: what an includer sees of a function defined elsewhere (its signature and
  // documentation), a function entity without a body marked "declaration".
  void visit_prototype(TSNode decl, TSNode name, TSNode fn) {
    std::string path = cpp_ ? name_path(name) : std::string(text(name));
    if (path.empty()) return;
    std::string nm = last_part(path);
    int idx = add_entity(decl, ts::start_line(name), ts::end_line(decl), function_kind(nm, path), nm, prefix_ + path,
                         class_owner_);
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
      int idx =
          add_entity(n, ts::start_line(name), ts::end_line(name), EntityKind::klass, nm, prefix_ + nm, class_owner_);
      out_.entities[idx].signature = collapse_spaces(whole.substr(0, std::min<size_t>(whole.size(), 200)));
    }
    if (!is_tagged(type)) scan_type(type, -1);
  }

  bool is_tagged(TSNode t) const {
    if (ts_node_is_null(t)) return false;
    int k = kind(t);
    return k == c_struct_specifier || k == c_union_specifier || k == c_enum_specifier || k == c_class_specifier;
  }

  // The tagged types a declaration's type specifier defines (a body), for `owner` (-1: file scope).
  void visit_type_in(TSNode decl, TSNode type, int depth) {
    if (!is_tagged(type) || ts_node_is_null(field(type, g_.f_body))) {
      if (is_tagged(type)) scan_type(type, -1);
      return;
    }
    if (ts_node_is_null(field(type, g_.f_name))) {
      if (kind(type) == c_enum_specifier) visit_enumerators(field(type, g_.f_body), prefix_);  // `enum { A, B };`
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
    if (cpp_ && kind(type) != c_enum_specifier) {
      visit_class(whole, type, name, depth);
      return;
    }
    TSNode body = field(type, g_.f_body);
    if (ts_node_is_null(body)) return;
    TSNode tag = field(type, g_.f_name);
    std::string nm = ts_node_is_null(tag) ? name : cpp_ ? name_path(tag) : std::string(text(tag));
    if (kind(type) == c_enum_specifier) {
      // C++ names an enumerator by its enum ("Color.red", as a scoped enum requires); C by itself.
      std::string enum_prefix;
      if (!nm.empty()) {
        int idx = add_entity(whole, ts::start_line(type), ts::end_line(type), EntityKind::klass, last_part(nm),
                             prefix_ + nm, class_owner_);
        out_.entities[idx].signature = "enum " + nm;
        if (cpp_) enum_prefix = prefix_ + nm + ".";
      }
      visit_enumerators(body, enum_prefix);
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

  void visit_enumerators(TSNode list, const std::string& qual) {
    ts::for_each_child_field(list, [&](TSNode c, TSFieldId f) {
      if (!ts_node_is_named(c) || f == g_.f_condition || f == g_.f_name) return;
      int k = kind(c);
      if (k == c_preproc_if || k == c_preproc_ifdef || k == c_preproc_else || k == c_preproc_elif ||
          k == c_preproc_elifdef) {
        visit_enumerators(c, qual);
        return;
      }
      if (k != c_enumerator) return;
      TSNode name = field(c, g_.f_name);
      if (ts_node_is_null(name)) return;
      std::string nm(text(name));
      int line = ts::start_line(name);
      int idx = add_entity(c, line, line, EntityKind::variable, nm, qual + nm, -1);
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
      if (k == c_declaration || k == c_parameter_declaration || k == c_optional_parameter_declaration ||
          k == c_variadic_parameter_declaration || k == c_for_range_loop) {
        ts::for_each_child_field(n, [&](TSNode d, TSFieldId f) {
          if (f != g_.f_declarator) return;
          TSNode name = declared_name(d);
          if (!ts_node_is_null(name)) locals_.emplace(text(name));
        });
      }
      ts::for_each_child(n, true, [&](TSNode c) { stack.push_back({c, depth + 1}); });
    }
  }

  // A type defined inside a function: a file-scope definition in C (ctags lists it too); in C++ the function's
  // member ("f.Helper"). Its members' bodies have their own locals.
  void visit_local_type(TSNode n, int scope) {
    // A class in a member function of a class in a function...: each level recurses (bounded like a block).
    if (local_type_depth_ >= kMaxBlockNesting) {
      too_deep(n, "types nested in functions", kMaxBlockNesting);
      return;
    }
    ++local_type_depth_;
    int saved_owner = class_owner_;
    std::string saved_prefix = prefix_;
    std::unordered_set<std::string> saved_locals;
    saved_locals.swap(locals_);
    class_owner_ = cpp_ ? scope : -1;
    if (cpp_) prefix_ = out_.entities[scope].qualname + ".";
    visit_tagged(n, n, "", -1, 0);
    class_owner_ = saved_owner;
    prefix_ = std::move(saved_prefix);
    locals_.swap(saved_locals);
    --local_type_depth_;
  }

  void visit_local_type_name(TSNode n, int scope) {
    std::string saved_prefix = prefix_;
    int saved_owner = class_owner_;
    prefix_ = out_.entities[scope].qualname + ".";
    class_owner_ = scope;
    if (kind(n) == c_alias_declaration)
      visit_alias(n);
    else
      visit_typedef(n);
    prefix_ = std::move(saved_prefix);
    class_owner_ = saved_owner;
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
      if (k == c_this) {
        out = "this";
      } else if (k == c_qualified_identifier || k == c_template_function || k == c_template_type) {
        out = name_path(cur);  // `ns::f`, `A::B::c`, `make<T>`: the names without their template arguments
        if (out.empty()) return false;
        if (out.find('.') == std::string::npos && locals_.count(out)) return false;
      } else if (k == c_identifier || k == c_type_identifier) {
        std::string_view root = text(cur);
        if (locals_.count(std::string(root))) return false;
        out.assign(root);
      } else {
        return false;
      }
      for (auto it = fields.rbegin(); it != fields.rend(); ++it) {
        std::string f = cpp_ ? name_path(*it) : std::string(text(*it));
        if (f.empty()) return false;
        out.push_back('.');
        out += f;
      }
      return out != "this";
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

  // `struct s` names a type; `struct s { ... }` inside a function defines one (ctags lists it too). Returns the
  // body the scan goes on into: what a local class's members use, the enclosing function's hidden body uses.
  TSNode scan_type_specifier(TSNode n, int scope) {
    TSNode tag = field(n, g_.f_name);
    TSNode body = field(n, g_.f_body);
    if (!ts_node_is_null(tag) && ts_node_is_null(body)) record(scope, std::string(text(tag)), RefKind::name, tag);
    // Each local type is defined once: the scans of the functions enclosing it all meet it (a class in a member
    // function of a class in a function is walked by both functions' scans).
    if (!ts_node_is_null(tag) && !ts_node_is_null(body) && scope >= 0 &&
        local_types_seen_.insert(ts_node_start_byte(n)).second)
      visit_local_type(n, scope);
    return body;
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
      case c_qualified_identifier:
      case c_template_function:
        if (chain_of(n, chain)) record(scope, chain, RefKind::name, n);
        if (k == c_template_function) later(field(n, g_.f_arguments));
        return;
      case c_field_initializer:  // `: member_(x)` names the member
        ts::for_each_child(n, true, [&](TSNode c) {
          if (kind(c) == c_field_identifier)
            record(scope, std::string(text(c)), RefKind::name, c);
          else
            later(c);
        });
        return;
      case c_template_type:  // `vector<Foo>`: the template's name and its arguments' names
        if (chain_of(n, chain)) record(scope, chain, RefKind::name, n);
        later(field(n, g_.f_arguments));
        return;
      case c_class_specifier:
      case c_struct_specifier:
      case c_union_specifier:
      case c_enum_specifier:
        if (TSNode body = scan_type_specifier(n, scope); !ts_node_is_null(body)) later(body);
        return;
      case c_type_definition:
      case c_alias_declaration:  // a C++ type name local to a function: the function's member
        if (cpp_ && scope >= 0) {
          visit_local_type_name(n, scope);
          return;
        }
        ts::for_each_child(n, true, [&](TSNode c) { later(c); });
        return;
      case c_preproc_def:
      case c_preproc_function_def:  // a macro defined inside a function body
        if (scope >= 0) visit_macro(n);
        return;
      case c_comment:
      case c_string_literal:
      case c_raw_string_literal:
      case c_namespace_identifier:
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

bool is_word(char c) {
  return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
}

// Export macros (`GTEST_API_`, `LLAMA_API`), which the build defines to an attribute or to nothing, blanked
// before parsing: a parser that does not expand macros reads them as types or names.
//
// `class GTEST_API_ Cardinality {`: an export macro between the keyword and the name, which a parser that does
// not expand macros reads as a class named GTEST_API_ followed by a function. Such a macro (an upper-case word
// followed by the class's name and then `{`, `:` or `final`) is blanked with spaces, so that lines and byte
// offsets stay those of the file. Returns whether anything was blanked.
bool blank_class_export_macros(std::string& s) {
  bool changed = false;
  for (const char* keyword : {"class ", "struct "}) {
    size_t klen = std::strlen(keyword);
    for (size_t at = s.find(keyword); at != std::string::npos; at = s.find(keyword, at + klen)) {
      if (at > 0 && is_word(s[at - 1])) continue;
      size_t m = at + klen;
      while (m < s.size() && s[m] == ' ') ++m;
      size_t m_end = m;
      while (m_end < s.size() && (std::isupper(static_cast<unsigned char>(s[m_end])) ||
                                  std::isdigit(static_cast<unsigned char>(s[m_end])) || s[m_end] == '_'))
        ++m_end;
      if (m_end - m < 2 || m_end >= s.size() || s[m_end] != ' ') continue;
      size_t n = m_end;
      while (n < s.size() && s[n] == ' ') ++n;
      size_t n_end = n;
      while (n_end < s.size() && is_word(s[n_end])) ++n_end;
      if (n_end == n) continue;
      size_t after = n_end;
      while (after < s.size() && (s[after] == ' ' || s[after] == '\n')) ++after;
      if (after >= s.size()) continue;
      if (s[after] == '{' || (s[after] == ':' && (after + 1 >= s.size() || s[after + 1] != ':')) ||
          s.compare(after, 5, "final") == 0) {
        std::fill(s.begin() + static_cast<long>(m), s.begin() + static_cast<long>(m_end), ' ');
        changed = true;
      }
    }
  }
  return changed;
}

bool is_macro_word(std::string_view w) {
  if (w.size() < 3) return false;
  bool letter = false;
  for (char c : w) {
    if (std::isupper(static_cast<unsigned char>(c)))
      letter = true;
    else if (!std::isdigit(static_cast<unsigned char>(c)) && c != '_')
      return false;
  }
  return letter;
}

// `GTEST_API_ Cardinality AtLeast(int n) {`: an upper-case word opening a line, followed by at least two more
// words (a type and a name) before the `(` on that line, is an export macro; blanked as above. One word
// (`DWORD f(`) is a return type and stays.
bool blank_function_export_macros(std::string& s) {
  bool changed = false;
  for (size_t line = 0; line < s.size();) {
    size_t eol = s.find('\n', line);
    if (eol == std::string::npos) eol = s.size();
    size_t w = line;
    while (w < eol && (s[w] == ' ' || s[w] == '\t')) ++w;
    size_t w_end = w;
    while (w_end < eol && is_word(s[w_end])) ++w_end;
    if (w_end < eol && s[w_end] == ' ' && is_macro_word(std::string_view(s).substr(w, w_end - w))) {
      int words = 0;
      size_t i = w_end;
      for (; i < eol; ++i) {
        char c = s[i];
        if (is_word(c)) {
          if (!is_word(s[i - 1])) ++words;
        } else if (!(c == ' ' || c == '\t' || c == ':' || c == '*' || c == '&' || c == '<' || c == '>' || c == ',')) {
          break;
        }
      }
      if (i < eol && s[i] == '(' && words >= 2) {
        std::fill(s.begin() + static_cast<long>(w), s.begin() + static_cast<long>(w_end), ' ');
        changed = true;
      }
    }
    line = eol + 1;
  }
  return changed;
}

}  // namespace

void extract_c(TSParser* parser, std::string_view source, ParsedFile& out, const std::atomic<bool>* stop) {
  std::string blanked;
  if (out.language == Language::cpp) {
    blanked.assign(source);
    bool changed = blank_class_export_macros(blanked);
    changed = blank_function_export_macros(blanked) || changed;
    if (changed) source = blanked;
  }
  TSTree* tree = parse_for_extraction(parser, c_grammar(out.language).lang, source, out, stop);
  if (!tree) return;
  CExtractor(source, out).run(ts_tree_root_node(tree));
  ts_tree_delete(tree);
}

}  // namespace repoctx
