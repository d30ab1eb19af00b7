// AlignCoder's retrieval codebase (III-A) seen from a completion cursor, and the coarse retrieval over it
// (III-B): what the repository looks like to a completion at (file, line, column), with the text after the
// cursor absent.
//
// The rule (the completion counterpart of TargetContext's hidden body): retrieval for a cursor answers
// exactly what it would answer on a copy of the repository whose file is cut at the cursor. The file's
// stored split-aggregate snippets are replaced, for BM25's statistics, by the snippets of the cut text; its
// dependency snippets come from the imports before the cursor; the file itself is the query side and never
// a result (as in AlignCoder). tests/integration/cursor_cut.py checks the equivalence on real libraries.
#pragma once

#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "retrieve/aligncoder/encoder.h"
#include "retrieve/aligncoder_snippets.h"
#include "retrieve/retriever.h"

namespace repoctx {

struct Cursor {
  int file = -1;
  int line = 1;    // 1-based
  int column = 0;  // byte offset in the line (0 = its start)
};

struct CursorContext {
  Cursor cursor;
  size_t offset = 0;       // byte offset of the cursor in the file
  std::string unfinished;  // the file's text before the cursor: what a copy cut at the cursor holds
  // The cut file's own split-aggregate snippets (in-file context; in BM25's statistics in place of the
  // file's stored snippets).
  std::vector<SnippetSpan> own_spans;
  std::vector<TermVec> own_terms;
  // III-A2 dependency snippets of the imports before the cursor (their entities in other files).
  std::vector<DependencySnippet> dependencies;
  std::vector<TermVec> dependency_terms;
  // Snippet ids past the stored ones: own snippets from own_base, dependency snippets from dep_base.
  int own_base = 0, dep_base = 0;
  // The BM25 overrides that make the snippet corpus that of the cut copy: the file's stored snippets
  // removed, its cut snippets added, and (with_dependencies) the dependency snippets added.
  Bm25Overrides overrides(const RepoView& v, bool with_dependencies) const;
  std::string own_text(size_t i) const;  // the text of own snippet i
};

// Throws Error(bad_input) naming the file when the cursor lies outside it (line past the end, column past
// the end of its line).
std::shared_ptr<const CursorContext> make_cursor_context(const Engine& e, const Cursor& c);

// RLCoder's query: the last `lines` non-blank lines of the unfinished code (0 = all of it).
std::string query_window(const std::string& unfinished, int lines);
// Where that window starts (a byte offset into the unfinished code).
size_t window_start(const std::string& unfinished, int lines);
// The names the cursor's file imports before the cursor (bound names, imported names, module parts).
std::string imported_names(const Engine& e, const CursorContext& ctx);

// One retrievable piece of the codebase.
struct CodebaseItem {
  enum class Kind { base, dependency, own };
  Kind kind = Kind::base;
  int id = -1;  // base: snippet id; dependency / own: index into the context's lists
  double score = 0;
};

// Coarse retrieval (III-B): BM25 over the cross-file base snippets and (with_dependencies) the dependency
// snippets, for `query`, under the cut-copy statistics. Best first; ties by path, line, kind. top_k <= 0:
// every item with a positive score.
std::vector<CodebaseItem> coarse_retrieve(const Engine& e, const CursorContext& ctx, const std::string& query,
                                          bool with_dependencies, int top_k, const Bm25Params& p = {});

// BM25 over the cut file's own snippets, for `in-file` (those overlapping the last `skip_lines` lines
// before the cursor, which the prompt shows anyway, are left out).
std::vector<CodebaseItem> in_file_retrieve(const Engine& e, const CursorContext& ctx, const std::string& query,
                                           int skip_lines, int top_k, const Bm25Params& p = {});

// Sorts best first (score, then path, line, kind) and keeps top_k (<= 0: all).
void rank_items(const Engine& e, const CursorContext& ctx, std::vector<CodebaseItem>& items, int top_k);

// The idf of a token over the cross-file snippets (every stored snippet but those of the cursor's file):
// the same on the repository and on its copy cut at the cursor, whatever the file holds.
class CrossFileIdf {
 public:
  CrossFileIdf(const Engine& e, const CursorContext& ctx);
  double operator()(uint64_t term) const;

 private:
  const Bm25Index& bm25_;
  double n_ = 0;
  std::unordered_map<uint64_t, int> file_df_;
};

// III-C fine-grained retrieval, shared by the retrievers and training:
// the encoder's query (the unfinished code around the window, the imported names, the candidates),
QueryParts query_parts(const Engine& e, const CursorContext& ctx, int query_lines, std::vector<std::string> candidates);
// the pool it re-ranks: BM25's best `pool` snippets of `text`, and (with_dependencies) every dependency
// snippet BM25 left out (they summarise what the file imports: the APIs a completion calls),
std::vector<CodebaseItem> fine_pool(const Engine& e, const CursorContext& ctx, const std::string& text,
                                    bool with_dependencies, int pool);
// and the feature bags of pool items (idf over the cross-file snippets).
std::vector<FeatureBag> item_bags(const Engine& e, const CursorContext& ctx, const std::vector<CodebaseItem>& items,
                                  const CrossFileIdf& idf, std::vector<std::string>* texts = nullptr);

// Text, file and lines of an item; as a Hit (labels "base", "dependency", "in-file").
std::string item_text(const Engine& e, const CursorContext& ctx, const CodebaseItem& it);
Hit item_hit(const Engine& e, const CursorContext& ctx, const CodebaseItem& it);

}  // namespace repoctx
