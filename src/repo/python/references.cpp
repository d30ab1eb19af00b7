#include "repo/python/references.h"

#include <fmt/format.h>

#include <algorithm>

#include "repo/parser.h"

namespace repoctx::py {

void Context::too_deep(TSNode at, const char* what, int limit) {
  if (truncated) return;
  truncated = true;
  int line = ts::start_line(at);
  out.errors.push_back({line, line,
                        fmt::format("{} nested deeper than {} levels at line {}: not analysed below that depth "
                                    "(CPython does not compile such code either)",
                                    what, limit, line),
                        true});
}

bool ReferenceScanner::chain_of(TSNode n, std::string& out, TSNode* rest, int* levels) const {
  // Iterative: the attributes are collected walking down the objects, then joined from the root name.
  thread_local std::vector<TSNode> attrs;
  attrs.clear();
  TSNode cur = n;
  int depth = 0;
  auto fail = [&](TSNode r) {
    if (rest) *rest = r;
    if (levels) *levels = depth;
    return false;
  };
  for (;;) {
    int k = cx_.kind(cur);
    if (k == k_attribute) {
      TSNode obj = cx_.field(cur, cx_.g.f_object);
      TSNode attr = cx_.field(cur, cx_.g.f_attribute);
      if (ts_node_is_null(obj) || ts_node_is_null(attr)) {
        ++depth;
        return fail(obj);
      }
      attrs.push_back(attr);
      cur = obj;
      ++depth;
      continue;
    }
    if (k == k_identifier) {
      out.assign(cx_.text(cur));
      break;
    }
    if (k == k_call) {
      TSNode fn = cx_.field(cur, cx_.g.f_function);
      TSNode args = cx_.field(cur, cx_.g.f_arguments);
      if (!ts_node_is_null(fn) && cx_.kind(fn) == k_identifier && cx_.text(fn) == "super" && !ts_node_is_null(args) &&
          ts_node_named_child_count(args) == 0) {
        out = "super()";
        break;
      }
    }
    return fail(cur);
  }
  for (auto it = attrs.rbegin(); it != attrs.rend(); ++it) {
    out.push_back('.');
    out.append(cx_.text(*it));
  }
  return true;
}

void ReferenceScanner::record(Scope& sc, std::string chain, RefKind rk, TSNode at, bool store, int nargs,
                              std::vector<std::string> kwargs) {
  Reference r;
  r.scope = sc.entity;
  r.chain = std::move(chain);
  r.kind = rk;
  r.line = ts::start_line(at);
  r.is_store = store;
  r.nargs = nargs;
  r.kwargs = std::move(kwargs);
  cx_.out.references.push_back(std::move(r));
  cx_.scopes.note_reference(sc);
}

void ReferenceScanner::note_constructor_binding(TSNode asg, Scope& sc) {
  if (sc.type != ScopeType::function) return;
  TSNode left = cx_.field(asg, cx_.g.f_left), right = cx_.field(asg, cx_.g.f_right);
  if (ts_node_is_null(left) || ts_node_is_null(right) || cx_.kind(left) != k_identifier || cx_.kind(right) != k_call)
    return;
  std::string chain;
  if (!chain_of(cx_.field(right, cx_.g.f_function), chain) || chain == "super()") return;
  sc.ctor_binds[std::string(cx_.text(left))].emplace_back(std::move(chain), ts::start_line(asg));
}

// ---------------------------------------------------------------- bindings (iterative tree walks)
void ReferenceScanner::bind_target(TSNode t, Scope& sc) {
  if (ts_node_is_null(t) || sc.type != ScopeType::function) return;
  std::vector<TSNode> todo{t};
  while (!todo.empty()) {
    TSNode n = todo.back();
    todo.pop_back();
    switch (cx_.kind(n)) {
      case k_identifier:
        ScopeTable::bind(sc, cx_.text(n));
        break;
      case k_pattern_list:
      case k_tuple_pattern:
      case k_list_pattern:
      case k_list_splat_pattern:
      case k_parenthesized_expression:
      case k_tuple:
      case k_list:
      case k_as_pattern_target:
        ts::for_each_child(n, true, [&](TSNode c) { todo.push_back(c); });
        break;
      default:
        break;  // attributes and subscripts bind nothing
    }
  }
}

void ReferenceScanner::bind_pattern_captures(TSNode root, Scope& sc) {
  if (sc.type != ScopeType::function) return;
  std::vector<TSNode> todo{root};
  while (!todo.empty()) {
    TSNode n = todo.back();
    todo.pop_back();
    int k = cx_.kind(n);
    if (k == k_identifier) {
      ScopeTable::bind(sc, cx_.text(n));
    } else if (k == k_dotted_name) {
      // A lone name in a case pattern is a capture; dotted names are value patterns.
      if (ts_node_named_child_count(n) == 1) ScopeTable::bind(sc, cx_.text(n));
    } else if (k == k_keyword_argument) {
      if (auto v = cx_.field(n, cx_.g.f_value); !ts_node_is_null(v)) todo.push_back(v);
    } else {
      ts::for_each_child(n, true, [&](TSNode c) { todo.push_back(c); });
    }
  }
}

void ReferenceScanner::bind_lambda_params(TSNode params, Scope& sc) {
  // Lambda parameters: conservatively treated as locals of the enclosing function.
  if (ts_node_is_null(params)) return;
  ts::for_each_child(params, true, [&](TSNode p) {
    TSNode nm = cx_.kind(p) == k_identifier ? p : cx_.field(p, cx_.g.f_name);
    if (ts_node_is_null(nm) && ts_node_named_child_count(p) > 0) nm = ts_node_named_child(p, 0);
    if (!ts_node_is_null(nm) && cx_.kind(nm) == k_identifier) ScopeTable::bind(sc, cx_.text(nm));
  });
}

// ---------------------------------------------------------------- the walk
void ReferenceScanner::scan(TSNode n, Scope& sc) {
  if (ts_node_is_null(n)) return;
  size_t base = stack_.size();
  stack_.push_back({n, &sc, 0, Op::scan});
  run(base);
}

void ReferenceScanner::scan_store_target(TSNode t, Scope& sc) {
  if (ts_node_is_null(t)) return;
  size_t base = stack_.size();
  stack_.push_back({t, &sc, 0, Op::store});
  run(base);
}

void ReferenceScanner::later(Op op, TSNode n, Scope& sc, int depth) {
  if (!ts_node_is_null(n)) pending_.push_back({n, &sc, depth, op});
}

ReferenceScanner::~ReferenceScanner() {
  // A walk left by an exception: its children cursors go back to the pool.
  for (const Task& t : stack_)
    if (t.cursor) ts::cursor_pool().release();
}

void ReferenceScanner::children_later(TSNode n, Scope& sc, int depth, Op op) {
  if (ts_node_child_count(n) > 0) pending_.push_back({n, &sc, depth, Op::children, op});
}

// The next named child of a `children` task's node (its cursor is taken from the pool at the first call and
// given back after the last child). Children tasks end in the order they start (a stack), as the pool wants.
bool ReferenceScanner::next_child(Task& t, TSNode& child) {
  bool moved;
  if (!t.cursor) {
    t.cursor = ts::cursor_pool().acquire(t.node);
    moved = ts_tree_cursor_goto_first_child(t.cursor);
  } else {
    moved = ts_tree_cursor_goto_next_sibling(t.cursor);
  }
  for (; moved; moved = ts_tree_cursor_goto_next_sibling(t.cursor)) {
    child = ts_tree_cursor_current_node(t.cursor);
    if (ts_node_is_named(child)) return true;
  }
  ts::cursor_pool().release();
  t.cursor = nullptr;
  return false;
}

// Depth-first: a node's own records happen when it is handled, and its children are handled next, in
// order, before its later siblings: the same order as a recursive walk.
void ReferenceScanner::run(size_t base) {
  while (stack_.size() > base) {
    if (stack_.back().op == Op::children) {
      // The task stays below its child until its last child is handed out.
      TSNode child;
      if (!next_child(stack_.back(), child)) {
        stack_.pop_back();
        continue;
      }
      const Task& parent = stack_.back();
      stack_.push_back({child, parent.sc, parent.depth, parent.child_op});
      continue;
    }
    Task t = stack_.back();
    stack_.pop_back();
    if (t.depth > kMaxSyntaxDepth) {
      cx_.too_deep(t.node, "an expression", kMaxSyntaxDepth);
      continue;
    }
    size_t mark = pending_.size();
    step(t);
    for (size_t i = pending_.size(); i > mark; --i) stack_.push_back(pending_[i - 1]);
    pending_.resize(mark);
  }
}

void ReferenceScanner::step(const Task& t) {
  switch (t.op) {
    case Op::scan:
      scan_node(t.node, *t.sc, t.depth);
      return;
    case Op::store:
      store_node(t.node, *t.sc, t.depth);
      return;
    case Op::callee:
      callee_node(t.node, *t.sc, t.depth);
      return;
    case Op::children:  // run() hands out the children
      return;
  }
}

void ReferenceScanner::store_node(TSNode t, Scope& sc, int depth) {
  switch (cx_.kind(t)) {
    case k_identifier:
      return;
    case k_attribute: {
      std::string chain;
      TSNode rest{};
      int levels = 0;
      if (chain_of(t, chain, &rest, &levels))
        record(sc, std::move(chain), RefKind::attribute, t, true);
      else
        later(Op::scan, rest, sc, depth + levels);
      return;
    }
    case k_pattern_list:
    case k_tuple_pattern:
    case k_list_pattern:
    case k_list_splat_pattern:
    case k_parenthesized_expression:
    case k_tuple:
    case k_list:
      children_later(t, sc, depth + 1, Op::store);
      return;
    default:
      scan_node(t, sc, depth);
  }
}

void ReferenceScanner::callee_node(TSNode fn, Scope& sc, int depth) {
  if (cx_.kind(fn) == k_attribute) {
    std::string chain;
    TSNode rest{};
    int levels = 0;
    if (!chain_of(fn, chain, &rest, &levels)) later(Op::scan, rest, sc, depth + levels);
    return;
  }
  scan_node(fn, sc, depth);
}

void ReferenceScanner::scan_call(TSNode n, Scope& sc, int depth) {
  TSNode fn = cx_.field(n, cx_.g.f_function);
  TSNode args = cx_.field(n, cx_.g.f_arguments);
  std::string chain;
  int nargs = 0;
  std::vector<std::string> kwargs;
  if (!ts_node_is_null(args) && cx_.kind(args) == k_argument_list) {
    ts::for_each_child(args, true, [&](TSNode a) {
      int ak = cx_.kind(a);
      if (ak == k_keyword_argument)
        kwargs.emplace_back(cx_.text(cx_.field(a, cx_.g.f_name)));
      else if (ak == k_list_splat || ak == k_dictionary_splat)
        nargs = -1000000;
      else if (ak != k_comment && ak != k_line_continuation)
        ++nargs;  // `\` continuations are nodes too
    });
  } else if (!ts_node_is_null(args)) {
    nargs = 1;  // f(x for x in y)
  }
  if (nargs < 0) nargs = -1;
  if (!ts_node_is_null(fn) && chain_of(fn, chain) && chain != "super()")
    record(sc, std::move(chain), RefKind::call, n, false, nargs, std::move(kwargs));
  else
    later(Op::callee, fn, sc, depth + 1);
  later(Op::scan, args, sc, depth + 1);
}

void ReferenceScanner::scan_lambda(TSNode n, Scope& sc, int depth) {
  bind_lambda_params(cx_.field(n, cx_.g.f_parameters), sc);
  ts::for_each_child_field(n, [&](TSNode c, TSFieldId f) {
    if (f == cx_.g.f_parameters) {
      ts::for_each_child(c, true, [&](TSNode p) { later(Op::scan, cx_.field(p, cx_.g.f_value), sc, depth + 2); });
    } else if (ts_node_is_named(c)) {
      later(Op::scan, c, sc, depth + 1);
    }
  });
}

// A dotted chain is one reference; an attribute of something else (a call's result, a subscript) is
// scanned for the references in its object.
void ReferenceScanner::scan_attribute(TSNode n, Scope& sc, int depth) {
  std::string chain;
  TSNode rest{};
  int levels = 0;
  if (chain_of(n, chain, &rest, &levels))
    record(sc, std::move(chain), RefKind::attribute, n);
  else
    later(Op::scan, rest, sc, depth + levels);
}

// `with x as y`: only the value is a reference; the alias binds.
void ReferenceScanner::scan_as_pattern(TSNode n, Scope& sc, int depth) {
  ts::for_each_child_field(n, [&](TSNode c, TSFieldId f) {
    if (!ts_node_is_named(c)) return;
    if (f == cx_.g.f_alias)
      bind_target(c, sc);
    else
      later(Op::scan, c, sc, depth + 1);
  });
}

// Only f-strings hold expressions; plain literals (docstrings, data) are skipped whole.
void ReferenceScanner::scan_string(TSNode n, Scope& sc, int depth) {
  std::string_view t = cx_.text(n);
  size_t q = t.find_first_of("'\"");
  if (q == std::string_view::npos || t.substr(0, q).find_first_of("fF") == std::string_view::npos) return;
  children_later(n, sc, depth + 1);
}

void ReferenceScanner::scan_node(TSNode n, Scope& sc, int depth) {
  const Grammar& g = cx_.g;
  switch (cx_.kind(n)) {
    case k_identifier:
      record(sc, std::string(cx_.text(n)), RefKind::name, n);
      return;
    case k_attribute:
      scan_attribute(n, sc, depth);
      return;
    case k_call:
      scan_call(n, sc, depth);
      return;
    case k_keyword_argument:
      later(Op::scan, cx_.field(n, g.f_value), sc, depth + 1);
      return;
    case k_lambda:
      scan_lambda(n, sc, depth);
      return;
    case k_assignment:
      bind_target(cx_.field(n, g.f_left), sc);
      note_constructor_binding(n, sc);
      later(Op::store, cx_.field(n, g.f_left), sc, depth + 1);
      later(Op::scan, cx_.field(n, g.f_type), sc, depth + 1);
      later(Op::scan, cx_.field(n, g.f_right), sc, depth + 1);
      return;
    case k_augmented_assignment:
      bind_target(cx_.field(n, g.f_left), sc);
      later(Op::store, cx_.field(n, g.f_left), sc, depth + 1);
      later(Op::scan, cx_.field(n, g.f_right), sc, depth + 1);
      return;
    case k_named_expression:
      if (auto nm = cx_.field(n, g.f_name); !ts_node_is_null(nm)) ScopeTable::bind(sc, cx_.text(nm));
      later(Op::scan, cx_.field(n, g.f_value), sc, depth + 1);
      return;
    case k_for_in_clause:
      bind_target(cx_.field(n, g.f_left), sc);
      later(Op::store, cx_.field(n, g.f_left), sc, depth + 1);
      ts::for_each_child_field(n, [&](TSNode c, TSFieldId f) {
        if (f == g.f_right && ts_node_is_named(c)) later(Op::scan, c, sc, depth + 1);
      });
      return;
    case k_as_pattern:
      scan_as_pattern(n, sc, depth);
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
      on_definition_(n, sc);
      return;
    case k_string:
      scan_string(n, sc, depth);
      return;
    default:
      if (ts_node_child_count(n) == 0) return;  // literals and other leaves
      children_later(n, sc, depth + 1);
  }
}

}  // namespace repoctx::py
