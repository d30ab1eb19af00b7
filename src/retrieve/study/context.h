// The context a study strategy gathers: sets of lines per corpus document (the study's "viewed lines"), its
// size in tokens (the study's context length: the tokens of every gathered line), and its hits.
#pragma once

#include <map>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "retrieve/retriever.h"
#include "retrieve/study/corpus.h"
#include "util/token_count.h"

namespace repoctx {

class GatheredContext {
 public:
  GatheredContext(const StudyCorpus& corpus, TokenCounter counter) : corpus_(corpus), counter_(counter) {}
  // Lines [first, last] (1-based, inclusive) of a corpus document, clamped to it.
  void add(int doc, int first, int last);
  bool empty() const { return lines_.empty(); }
  // Sum over gathered lines of their tokens (cl100k unless the estimate was chosen), each line without its
  // newline.
  int tokens() const { return tokens_; }
  TokenCounter counter() const { return counter_; }
  const std::map<int, std::set<int>>& lines() const { return lines_; }  // by document
  const StudyCorpus& corpus() const { return corpus_; }
  // One hit per contiguous range of lines, in document order; entity = the innermost function or class that
  // holds the whole range (-1 when none does). A text file's hits have file -1, its path and its text.
  std::vector<Hit> hits() const;
  // A hit of hits(): its path, and "path lines a-b:" with its lines.
  const std::string& path_of(const Hit& h) const;
  std::string text_of(const Hit& h) const;
  nlohmann::json to_json() const;  // {"path": [[first, last], ...]}

 private:
  const StudyCorpus& corpus_;
  TokenCounter counter_;
  std::map<int, std::set<int>> lines_;
  int tokens_ = 0;
};

// The innermost function or class of `file` whose lines hold [first, last]; -1 when none.
int innermost_entity(const RepoView& v, int file, int first, int last);

}  // namespace repoctx
