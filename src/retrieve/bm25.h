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
#include <functional>
#include <string_view>
#include <vector>

#include "index/postings.h"
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
  // Serves from inverted lists kept elsewhere (the index's memory-mapped query image); a document's terms,
  // needed only for per-query overrides, come from `doc_terms`.
  void attach(const PostingsView& lists, std::function<const TermVec&(int)> doc_terms);

  size_t num_docs() const { return static_cast<size_t>(v_.n_docs); }
  uint32_t doc_freq(uint64_t term) const { return df(term); }  // documents containing the term
  double avgdl() const { return v_.n_docs ? static_cast<double>(v_.total_len) / static_cast<double>(v_.n_docs) : 0.0; }

  // Scores every document containing a query term. `allowed` (optional, size = number of ids) restricts
  // the documents that may be returned, without changing the statistics. Returns documents with a
  // positive score, unordered.
  std::vector<ScoredDoc> score_all(const std::vector<std::pair<uint64_t, uint32_t>>& q, const Bm25Params& p,
                                   const Bm25Overrides* ov = nullptr, const std::vector<char>* allowed = nullptr) const;

  // The documents `keep` accepts whose score_all score is at least the k-th best one's (the k best and
  // every document tied with the k-th, so that any order of the ties finds its first k among them), with
  // score_all's scores bit for bit; unordered. An index made by build() skips most documents that cannot
  // reach the k-th score (MaxScore, Turtle & Flood 1995, term at a time): terms are read from the one
  // whose largest possible contribution is highest, and once the terms left could not lift a document
  // they alone contain to the k-th score, only the documents already found are finished, scored on
  // their own terms. An attached index, other parameters than build()'s bounds, or overrides that replace
  // documents: score_all and a selection.
  std::vector<ScoredDoc> top_k(const std::vector<std::pair<uint64_t, uint32_t>>& q, const Bm25Params& p,
                               const Bm25Overrides* ov, size_t k, const std::function<bool(int)>& keep) const;

  // A query's per-term weights under the statistics of `ov`, for scoring many single documents.
  struct Prepared {
    std::vector<std::pair<uint64_t, double>> weights;  // (term, idf * query count)
    double c1 = 0, c2 = 0, kp1 = 0;
  };
  Prepared prepare(const std::vector<std::pair<uint64_t, uint32_t>>& q, const Bm25Params& p,
                   const Bm25Overrides* ov = nullptr) const;
  static double score_prepared(const Prepared& pq, const TermVec& doc);
  // The terms of document d (under no override), and whether d is a document at all.
  const TermVec& doc_terms(int d) const { return doc(d); }
  bool has_doc(int d) const { return present(d); }

  // Score of one document (with the same statistics as score_all under the same overrides).
  double score_doc(const std::vector<std::pair<uint64_t, uint32_t>>& q, const TermVec& doc, const Bm25Params& p,
                   const Bm25Overrides* ov = nullptr) const;

  size_t memory_bytes() const;

 private:
  struct Stats {
    double n, avgdl;
  };
  Stats stats(const Bm25Overrides* ov) const;
  double idf(uint64_t term, const Stats& s, const Bm25Overrides* ov) const;
  uint32_t df(uint64_t term) const;
  bool present(int d) const { return d >= 0 && static_cast<size_t>(d) < v_.present.size() && v_.present[d]; }
  const TermVec& doc(int d) const { return doc_terms_ ? doc_terms_(d) : *doc_ptrs_[d]; }

  // Per dictionary entry of an index made by build(): the largest tf / (tf + c1 + c2 * |d|) of the term's
  // postings under the default parameters, with c2 a little below any query's (bound_c2_floor_).
  void compute_bounds();
  std::vector<double> bound_;
  double bound_c2_floor_ = 0;

  PostingsData owned_;  // build(); attach() leaves it empty
  PostingsView v_;
  std::vector<const TermVec*> doc_ptrs_;
  std::function<const TermVec&(int)> doc_terms_;
};

// Min-max normalisation to [0, 1] (all-equal scores map to 1 when positive, else 0).
std::vector<double> normalize_scores(const std::vector<double>& s);
// ProjAgent eq. 6: v = w * norm(bm25) + (1 - w) * norm(dense), w = 0.5 by default.
std::vector<double> hybrid_scores(const std::vector<double>& bm25, const std::vector<double>& dense, double w = 0.5);

}  // namespace repoctx
