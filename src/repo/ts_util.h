// Small helpers over tree-sitter's C API: node kinds by symbol table lookup (not string compares),
// child iteration with cursors (ts_node_child(i) is linear in i), and line arithmetic.
#pragma once

#include <tree_sitter/api.h>

#include <algorithm>
#include <deque>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace repoctx::ts {

// Maps every symbol id of a language whose name is in `names` to the index of that name (others -> -1).
class KindTable {
 public:
  KindTable(const TSLanguage* lang, const std::vector<const char*>& names) {
    std::unordered_map<std::string_view, int> by_name;
    for (size_t i = 0; i < names.size(); ++i) by_name.emplace(names[i], static_cast<int>(i));
    uint32_t n = ts_language_symbol_count(lang);
    table_.assign(n, -1);
    for (uint32_t s = 0; s < n; ++s) {
      auto it = by_name.find(ts_language_symbol_name(lang, static_cast<TSSymbol>(s)));
      if (it != by_name.end()) table_[s] = it->second;
    }
    // An ERROR node's symbol is tree-sitter's builtin (TSSymbol)-1, outside the language's symbol table.
    if (auto it = by_name.find("ERROR"); it != by_name.end()) error_ = it->second;
  }
  int operator()(TSNode n) const {
    TSSymbol s = ts_node_symbol(n);
    if (s == static_cast<TSSymbol>(-1)) return error_;
    return s < table_.size() ? table_[s] : -1;
  }

 private:
  std::vector<int> table_;
  int error_ = -1;
};

// Cursors are reused per recursion depth: ts_tree_cursor_new allocates, and these helpers run for
// every node of every file (reset keeps the cursor's buffer).
class CursorPool {
 public:
  ~CursorPool() {
    for (auto& c : cursors_) ts_tree_cursor_delete(&c);
  }
  TSTreeCursor* acquire(TSNode n) {
    if (depth_ == cursors_.size())
      cursors_.push_back(ts_tree_cursor_new(n));
    else
      ts_tree_cursor_reset(&cursors_[depth_], n);
    return &cursors_[depth_++];
  }
  void release() { --depth_; }

 private:
  std::deque<TSTreeCursor> cursors_;  // stable addresses while deeper frames grow the pool
  size_t depth_ = 0;
};
inline CursorPool& cursor_pool() {
  thread_local CursorPool pool;
  return pool;
}
struct CursorLease {
  TSTreeCursor* c;
  explicit CursorLease(TSNode n) : c(cursor_pool().acquire(n)) {}
  ~CursorLease() { cursor_pool().release(); }
};

// Calls f(child) for each child (named only if `named`), using a cursor.
template <class F>
void for_each_child(TSNode node, bool named, F&& f) {
  CursorLease lease(node);
  TSTreeCursor* c = lease.c;
  if (ts_tree_cursor_goto_first_child(c)) {
    do {
      TSNode ch = ts_tree_cursor_current_node(c);
      if (!named || ts_node_is_named(ch)) f(ch);
    } while (ts_tree_cursor_goto_next_sibling(c));
  }
}

// Calls f(child, field_id) for each child with its field id (0 = none).
template <class F>
void for_each_child_field(TSNode node, F&& f) {
  CursorLease lease(node);
  TSTreeCursor* c = lease.c;
  if (ts_tree_cursor_goto_first_child(c)) {
    do {
      f(ts_tree_cursor_current_node(c), ts_tree_cursor_current_field_id(c));
    } while (ts_tree_cursor_goto_next_sibling(c));
  }
}

// The depth of the tree under `n` (n alone = 1), walked with one cursor (no recursion).
inline int max_depth(TSNode n) {
  TSTreeCursor c = ts_tree_cursor_new(n);
  int depth = 1, best = 1;
  for (;;) {
    if (ts_tree_cursor_goto_first_child(&c)) {
      best = std::max(best, ++depth);
      continue;
    }
    while (!ts_tree_cursor_goto_next_sibling(&c)) {
      if (!ts_tree_cursor_goto_parent(&c)) {
        ts_tree_cursor_delete(&c);
        return best;
      }
      --depth;
    }
  }
}

inline std::string_view text(TSNode n, std::string_view src) {
  uint32_t a = ts_node_start_byte(n), b = ts_node_end_byte(n);
  if (a > src.size() || b > src.size() || b < a) return {};
  return src.substr(a, b - a);
}
inline int start_line(TSNode n) {
  return static_cast<int>(ts_node_start_point(n).row) + 1;
}
// A node that ends right after a newline reports column 0 of the next row; that newline belongs to the
// previous line.
inline int end_line(TSNode n) {
  TSPoint p = ts_node_end_point(n);
  TSPoint s = ts_node_start_point(n);
  if (p.column == 0 && p.row > s.row) return static_cast<int>(p.row);
  return static_cast<int>(p.row) + 1;
}

}  // namespace repoctx::ts
