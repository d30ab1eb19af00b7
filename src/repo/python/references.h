// The references of Python expressions (maximal attribute chains rooted at a name, calls with their
// argument counts, stores through attributes) and the names expressions bind (assignment targets,
// walrus, lambda parameters, comprehension variables, match captures).
//
// The walk is iterative (an explicit stack in depth-first order, so references come out in source order):
// expressions nested tens of thousands of levels deep (`1+1+...+1`, `((((x))))`, `a.b().b()...`) cost
// no native stack. Below kMaxSyntaxDepth levels nothing is analysed and the file is reported as partial.
#pragma once

#include <tree_sitter/api.h>

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "repo/model.h"
#include "repo/python/grammar.h"
#include "repo/python/scopes.h"
#include "repo/ts_util.h"

namespace repoctx::py {

// What the extractor's parts share for one file.
struct Context {
  Context(std::string_view source, ParsedFile& parsed) : src(source), out(parsed) {}
  std::string_view src;
  ParsedFile& out;
  const Grammar& g = grammar();
  ScopeTable scopes;
  bool truncated = false;  // a depth limit was reached (reported once)

  int kind(TSNode n) const { return g.kinds(n); }
  std::string_view text(TSNode n) const { return ts::text(n, src); }
  TSNode field(TSNode n, TSFieldId f) const { return ts_node_child_by_field_id(n, f); }
  // Records, once per file, that the walk stopped at `at` because `what` nests beyond `limit` levels.
  void too_deep(TSNode at, const char* what, int limit);
};

class ReferenceScanner {
 public:
  // `on_definition` visits a def or class met inside an expression (tree-sitter's error recovery puts
  // them there) as a statement of the scope.
  ReferenceScanner(Context& cx, std::function<void(TSNode, Scope&)> on_definition)
      : cx_(cx), on_definition_(std::move(on_definition)) {}
  ~ReferenceScanner();
  ReferenceScanner(const ReferenceScanner&) = delete;
  ReferenceScanner& operator=(const ReferenceScanner&) = delete;

  // Records the references of expression `n` evaluated in `sc`.
  void scan(TSNode n, Scope& sc);
  // Assignment targets: plain names only bind; attribute targets (self.x = ...) are recorded as stores.
  void scan_store_target(TSNode t, Scope& sc);
  // Binds the names of an assignment / for / with target in a function scope.
  void bind_target(TSNode t, Scope& sc);
  // Binds the capture names of a match-case pattern.
  void bind_pattern_captures(TSNode n, Scope& sc);
  // `x = Chain(...)` in a function: a candidate for receiver-type inference.
  void note_constructor_binding(TSNode asg, Scope& sc);

  // "a.b.c" for attribute chains rooted at a name, "super().x" for super calls. When `n` is no chain,
  // false; then *rest is the sub-expression whose references remain to be scanned (the object below the
  // chain's last attribute node, possibly null) and *levels how many tree levels below `n` it lies.
  bool chain_of(TSNode n, std::string& out, TSNode* rest = nullptr, int* levels = nullptr) const;

 private:
  // `children`: the named children of `node`, one at a time, each handled with `child_op` (a list literal
  // of a million elements costs one task and one cursor, not a million queued tasks).
  enum class Op : uint8_t { scan, store, callee, children };
  struct Task {
    TSNode node;
    Scope* sc;
    int depth;
    Op op;
    Op child_op = Op::scan;
    TSTreeCursor* cursor = nullptr;  // `children`: at the last child handed out (from ts::cursor_pool())
  };
  void run(size_t base);
  void step(const Task& t);
  void scan_node(TSNode n, Scope& sc, int depth);
  void scan_call(TSNode n, Scope& sc, int depth);
  void scan_lambda(TSNode n, Scope& sc, int depth);
  void scan_attribute(TSNode n, Scope& sc, int depth);
  void scan_as_pattern(TSNode n, Scope& sc, int depth);
  void scan_string(TSNode n, Scope& sc, int depth);
  void store_node(TSNode t, Scope& sc, int depth);
  void callee_node(TSNode fn, Scope& sc, int depth);
  void later(Op op, TSNode n, Scope& sc, int depth);
  void children_later(TSNode n, Scope& sc, int depth, Op op = Op::scan);
  bool next_child(Task& t, TSNode& child);
  void bind_lambda_params(TSNode params, Scope& sc);
  void record(Scope& sc, std::string chain, RefKind rk, TSNode at, bool store = false, int nargs = -1,
              std::vector<std::string> kwargs = {});

  Context& cx_;
  std::function<void(TSNode, Scope&)> on_definition_;
  std::vector<Task> stack_;    // pending work, popped from the back
  std::vector<Task> pending_;  // the children of the node being handled, in source order
};

}  // namespace repoctx::py
