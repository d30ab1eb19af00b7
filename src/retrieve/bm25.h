// Okapi BM25 over term vectors, in memory, with per-query document overrides.
//
// Variant: Okapi BM25 with the non-negative idf of Lucene / Robertson-Sparck Jones plus one,
//   idf(t) = ln(1 + (N - df + 0.5) / (df + 0.5)),
//   score(q, d) = sum over query tokens t (repeated tokens count again) of
//                 idf(t) * tf(t,d) * (k1 + 1) / (tf(t,d) + k1 * (1 - b + b * |d| / avgdl)).
// bench/reference/ref_index.py implements the same formula; tests compare the two.
//
// Overrides make "the target's body is absent" exact: a query can remove documents (entities nested in
// the hidden body) and replace others (the target itself, snippets overlapping its body) by their
// hidden-body versions; N, avgdl, df and scores are then those of a copy of the repository without the
// body, not an approximation.
#pragma once

#include <cstdint>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "repo/documents.h"

namespace repoctx {

struct Bm25Params {
  double k1 = 1.5;
  double b = 0.75;
};

struct Bm25Overrides {
  std::vector<int> removed;                              // documents absent for this query
  std::vector<std::pair<int, const TermVec*>> replaced;  // documents with other content for this query
};

struct ScoredDoc {
  int doc;
  double score;
};

// A query's terms: (term id, count in the query), sorted by id.
std::vector<std::pair<uint64_t, uint32_t>> query_terms(std::string_view text);

class Bm25Index {
 public:
  Bm25Index() = default;
  // docs[i] is document i; null = no document with that id (counts neither in N nor in avgdl).
  void build(const std::vector<const TermVec*>& docs);

  size_t num_docs() const { return n_docs_; }
  uint32_t doc_freq(uint64_t term) const { return df(term); }  // documents containing the term
  double avgdl() const { return n_docs_ ? static_cast<double>(total_len_) / static_cast<double>(n_docs_) : 0.0; }

  // Scores every document containing a query term. `allowed` (optional, size = number of ids) restricts
  // the documents that may be returned, without changing the statistics. Returns documents with a
  // positive score, unordered.
  std::vector<ScoredDoc> score_all(const std::vector<std::pair<uint64_t, uint32_t>>& q, const Bm25Params& p,
                                   const Bm25Overrides* ov = nullptr, const std::vector<char>* allowed = nullptr) const;

  // A query's per-term weights under the statistics of `ov`, for scoring many single documents.
  struct Prepared {
    std::vector<std::pair<uint64_t, double>> weights;  // (term, idf * query count)
    double c1 = 0, c2 = 0, kp1 = 0;
  };
  Prepared prepare(const std::vector<std::pair<uint64_t, uint32_t>>& q, const Bm25Params& p,
                   const Bm25Overrides* ov = nullptr) const;
  static double score_prepared(const Prepared& pq, const TermVec& doc);

  // Score of one document (with the same statistics as score_all under the same overrides).
  double score_doc(const std::vector<std::pair<uint64_t, uint32_t>>& q, const TermVec& doc, const Bm25Params& p,
                   const Bm25Overrides* ov = nullptr) const;

  size_t memory_bytes() const;

 private:
  struct Posting {
    uint32_t doc;
    uint32_t tf;
  };
  struct Stats {
    double n, avgdl;
  };
  Stats stats(const Bm25Overrides* ov) const;
  double idf(uint64_t term, const Stats& s, const Bm25Overrides* ov) const;
  uint32_t df(uint64_t term) const;

  std::unordered_map<uint64_t, std::vector<Posting>> postings_;
  std::vector<uint32_t> doc_len_;
  std::vector<char> present_;
  const std::vector<const TermVec*>* docs_ = nullptr;
  std::vector<const TermVec*> doc_ptrs_;
  size_t n_docs_ = 0;
  uint64_t total_len_ = 0;
};

// Min-max normalisation to [0, 1] (all-equal scores map to 1 when positive, else 0).
std::vector<double> normalize_scores(const std::vector<double>& s);
// ProjAgent eq. 6: v = w * norm(bm25) + (1 - w) * norm(dense), w = 0.5 by default.
std::vector<double> hybrid_scores(const std::vector<double>& bm25, const std::vector<double>& dense, double w = 0.5);

}  // namespace repoctx
