// What the Java, Go, JavaScript, Rust and C extractors share around their own node rules: recording a
// reference, the iterative walk of a body (an explicit stack bounded by kMaxSyntaxDepth: expressions nest
// one tree level per operator), and the one partial-file error a walk that stopped leaves.
#pragma once

#include <tree_sitter/api.h>

#include <string>
#include <utility>
#include <vector>

#include "repo/model.h"
#include "repo/parser.h"
#include "repo/ts_util.h"

namespace repoctx {

class ReferenceWalk {
 protected:
  explicit ReferenceWalk(ParsedFile& out) : refs_out_(out) {}

  void record(int scope, std::string chain, RefKind rk, TSNode at, int nargs = -1) {
    Reference r;
    r.scope = scope;
    r.chain = std::move(chain);
    r.kind = rk;
    r.line = ts::start_line(at);
    r.nargs = nargs;
    refs_out_.references.push_back(std::move(r));
  }

  // Records, once per file, that a walk stopped at `at` (the file is indexed as far as it reached).
  void too_deep(TSNode at, const char* what = "an expression", int limit = kMaxSyntaxDepth) {
    if (truncated_) return;
    truncated_ = true;
    int line = ts::start_line(at);
    refs_out_.errors.push_back({line, line,
                                what + std::string(" nested deeper than ") + std::to_string(limit) +
                                    " levels at line " + std::to_string(line) + ": not analysed below that depth",
                                true});
  }

  // e's header end and body lines from its body node (null or empty: the header is the whole entity).
  static void set_body_lines(Entity& e, TSNode body) {
    e.header_end_line = ts_node_is_null(body) ? e.end_line : ts::start_line(body);
    if (ts_node_is_null(body) || ts_node_named_child_count(body) == 0) return;
    TSNode first = ts_node_named_child(body, 0);
    e.body_start_line = ts::start_line(first);
    e.body_end_line = e.end_line;
    e.body_start_byte = ts_node_start_byte(first);
  }
  // f() one declaration level deeper, unless kMaxBlockNesting levels are open already (nested types: the file
  // is then indexed down to that depth, and `what` names what nested too deep).
  template <class F>
  void nested(TSNode at, const char* what, F&& f) {
    if (nesting_ >= kMaxBlockNesting) {
      too_deep(at, what, kMaxBlockNesting);
      return;
    }
    ++nesting_;
    f();
    --nesting_;
  }

  // Depth first in source order from `root`: visit(node, later) records what the node means and hands
  // later(child) the children to walk next, in order.
  template <class Visit>
  void walk(TSNode root, Visit&& visit) {
    struct Task {
      TSNode node;
      int depth;
    };
    std::vector<Task> stack{{root, 0}};
    std::vector<Task> kids;
    while (!stack.empty()) {
      Task t = stack.back();
      stack.pop_back();
      if (ts_node_is_null(t.node)) continue;
      if (t.depth > kMaxSyntaxDepth) {
        too_deep(t.node);
        continue;
      }
      kids.clear();
      visit(t.node, [&](TSNode c) { kids.push_back({c, t.depth + 1}); });
      for (auto it = kids.rbegin(); it != kids.rend(); ++it) stack.push_back(*it);
    }
  }

 private:
  ParsedFile& refs_out_;
  bool truncated_ = false;
  int nesting_ = 0;
};

}  // namespace repoctx
