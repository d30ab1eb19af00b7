// The context a study strategy gathers: sets of lines per indexed file (the study's "viewed lines"), its
// size in tokens (the study's context length: the tokens of every gathered line), and its hits.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "retrieve/retriever.h"
#include "util/token_count.h"

namespace repoctx {

class GatheredContext {
 public:
  GatheredContext(const Engine& e, TokenCounter counter) : e_(e), counter_(counter) {}
  // Lines [first, last] (1-based, inclusive) of a file, clamped to the file.
  void add(int file, int first, int last);
  bool empty() const { return lines_.empty(); }
  // Sum over gathered lines of their tokens (cl100k unless the estimate was chosen), each line without its
  // newline.
  int tokens() const { return tokens_; }
  TokenCounter counter() const { return counter_; }
  const std::map<int, std::set<int>>& lines() const { return lines_; }
  // One hit per contiguous range of lines, in file order; entity = the innermost function or class that
  // holds the whole range (-1 when none does).
  std::vector<Hit> hits() const;
  nlohmann::json to_json() const;  // {"path": [[first, last], ...]}

 private:
  const Engine& e_;
  TokenCounter counter_;
  std::map<int, std::set<int>> lines_;
  int tokens_ = 0;
};

// The innermost function or class of `file` whose lines hold [first, last]; -1 when none.
int innermost_entity(const RepoView& v, int file, int first, int last);

}  // namespace repoctx
