#include "retrieve/bm25.h"

#include <algorithm>
#include <cmath>

#include "util/hash.h"
#include "util/text.h"

namespace repoctx {

std::vector<std::pair<uint64_t, uint32_t>> query_terms(std::string_view text) {
  TermVec tv = term_vector(text);
  return std::move(tv.terms);
}

void Bm25Index::build(const std::vector<const TermVec*>& docs) {
  doc_ptrs_ = docs;
  doc_terms_ = nullptr;
  owned_ = build_postings(docs);
  v_ = owned_.view();
}

void Bm25Index::attach(const PostingsView& lists, std::function<const TermVec&(int)> doc_terms) {
  owned_ = PostingsData{};
  doc_ptrs_.clear();
  v_ = lists;
  doc_terms_ = std::move(doc_terms);
}

uint32_t Bm25Index::df(uint64_t term) const {
  return v_.doc_freq(term);
}

static uint32_t tf_in(const TermVec& d, uint64_t term) {
  auto it = std::lower_bound(d.terms.begin(), d.terms.end(), std::make_pair(term, uint32_t{0}));
  return it != d.terms.end() && it->first == term ? it->second : 0;
}

Bm25Index::Stats Bm25Index::stats(const Bm25Overrides* ov) const {
  int64_t n = static_cast<int64_t>(v_.n_docs);
  int64_t total = static_cast<int64_t>(v_.total_len);
  if (ov) {
    for (int d : ov->removed) {
      if (!present(d)) continue;
      --n;
      total -= v_.doc_len[d];
    }
    for (const auto& [d, tv] : ov->replaced) {
      if (present(d))
        total -= v_.doc_len[d];
      else
        ++n;
      total += tv->length;
    }
  }
  return {static_cast<double>(n), n > 0 ? static_cast<double>(total) / static_cast<double>(n) : 0.0};
}

double Bm25Index::idf(uint64_t term, const Stats& s, const Bm25Overrides* ov) const {
  int64_t d = df(term);
  if (ov) {
    for (int r : ov->removed)
      if (present(r) && tf_in(doc(r), term)) --d;
    for (const auto& [r, tv] : ov->replaced) {
      if (present(r) && tf_in(doc(r), term)) --d;
      if (tf_in(*tv, term)) ++d;
    }
  }
  double dd = static_cast<double>(d);
  return std::log(1.0 + (s.n - dd + 0.5) / (dd + 0.5));
}

namespace {

// Marks the documents an override removes or replaces in a per-thread array (sized to the ids) for the
// scoring loops to skip, and unmarks them when done, also when something throws.
class SkipMarks {
 public:
  SkipMarks(std::vector<char>& skip, size_t n_ids, const Bm25Overrides* ov) : skip_(skip), ov_(ov) {
    if (skip_.size() < n_ids) skip_.assign(n_ids, 0);
    set(1);
  }
  ~SkipMarks() { set(0); }
  SkipMarks(const SkipMarks&) = delete;
  SkipMarks& operator=(const SkipMarks&) = delete;

 private:
  void set(char value) {
    if (!ov_) return;
    for (int d : ov_->removed)
      if (d >= 0 && static_cast<size_t>(d) < skip_.size()) skip_[d] = value;
    for (const auto& r : ov_->replaced)
      if (r.first >= 0 && static_cast<size_t>(r.first) < skip_.size()) skip_[r.first] = value;
  }
  std::vector<char>& skip_;
  const Bm25Overrides* ov_;
};

}  // namespace

std::vector<ScoredDoc> Bm25Index::score_all(const std::vector<std::pair<uint64_t, uint32_t>>& q, const Bm25Params& p,
                                            const Bm25Overrides* ov, const std::vector<char>* allowed) const {
  Stats s = stats(ov);
  if (s.n <= 0 || s.avgdl <= 0) return {};
  const double c1 = p.k1 * (1.0 - p.b), c2 = p.k1 * p.b / s.avgdl, kp1 = p.k1 + 1.0;
  thread_local std::vector<double> acc;
  thread_local std::vector<uint32_t> touched;
  thread_local std::vector<char> skip;
  const size_t n_ids = v_.doc_len.size();
  if (acc.size() < n_ids) acc.assign(n_ids, 0.0);
  touched.clear();
  SkipMarks marks(skip, n_ids, ov);
  for (const auto& tq : q) {
    const uint64_t term = tq.first;  // named, not bound: lambdas cannot capture structured bindings in C++20
    const uint32_t qtf = tq.second;
    double w = -1;  // computed when the term has a posting
    // Pieces in ascending document order (one without an overlay: the term's list), each document
    // accumulated once per term, so the sums are those of a freshly written image.
    v_.for_each_piece(term, [&](std::span<const Posting> list, uint32_t shift) {
      if (w < 0) w = idf(term, s, ov) * static_cast<double>(qtf);
      for (const Posting& po : list) {
        const uint32_t doc = po.doc + shift;
        if (doc >= n_ids) continue;  // a damaged mapped list must not write out of bounds
        if (skip[doc]) continue;
        if (allowed && !(*allowed)[doc]) continue;
        double tf = static_cast<double>(po.tf);
        double add = w * tf * kp1 / (tf + c1 + c2 * static_cast<double>(v_.doc_len[doc]));
        if (acc[doc] == 0.0) touched.push_back(doc);
        acc[doc] += add;
      }
    });
  }
  std::vector<ScoredDoc> out;
  out.reserve(touched.size() + (ov ? ov->replaced.size() : 0));
  for (uint32_t d : touched) {
    out.push_back({static_cast<int>(d), acc[d]});
    acc[d] = 0.0;
  }
  if (ov)
    for (const auto& [d, tv] : ov->replaced) {
      if (allowed && d >= 0 && static_cast<size_t>(d) < allowed->size() && !(*allowed)[d]) continue;
      double sc = score_doc(q, *tv, p, ov);
      if (sc > 0) out.push_back({d, sc});
    }
  return out;
}

double Bm25Index::score_doc(const std::vector<std::pair<uint64_t, uint32_t>>& q, const TermVec& doc,
                            const Bm25Params& p, const Bm25Overrides* ov) const {
  Stats s = stats(ov);
  if (s.n <= 0 || s.avgdl <= 0) return 0;
  const double c1 = p.k1 * (1.0 - p.b), c2 = p.k1 * p.b / s.avgdl, kp1 = p.k1 + 1.0;
  double score = 0;
  for (const auto& [term, qtf] : q) {
    uint32_t tf = tf_in(doc, term);
    if (!tf) continue;
    double w = idf(term, s, ov) * static_cast<double>(qtf);
    double t = static_cast<double>(tf);
    score += w * t * kp1 / (t + c1 + c2 * static_cast<double>(doc.length));
  }
  return score;
}

Bm25Index::Prepared Bm25Index::prepare(const std::vector<std::pair<uint64_t, uint32_t>>& q, const Bm25Params& p,
                                       const Bm25Overrides* ov) const {
  Prepared pq;
  Stats s = stats(ov);
  if (s.n <= 0 || s.avgdl <= 0) return pq;
  pq.c1 = p.k1 * (1.0 - p.b);
  pq.c2 = p.k1 * p.b / s.avgdl;
  pq.kp1 = p.k1 + 1.0;
  for (const auto& [term, qtf] : q) pq.weights.emplace_back(term, idf(term, s, ov) * static_cast<double>(qtf));
  return pq;
}

double Bm25Index::score_prepared(const Prepared& pq, const TermVec& doc) {
  double score = 0;
  // Both sides are sorted by term id: a merge instead of a search per term.
  size_t i = 0, j = 0;
  while (i < pq.weights.size() && j < doc.terms.size()) {
    if (pq.weights[i].first < doc.terms[j].first)
      ++i;
    else if (pq.weights[i].first > doc.terms[j].first)
      ++j;
    else {
      double t = static_cast<double>(doc.terms[j].second);
      score += pq.weights[i].second * t * pq.kp1 / (t + pq.c1 + pq.c2 * static_cast<double>(doc.length));
      ++i;
      ++j;
    }
  }
  return score;
}

size_t Bm25Index::memory_bytes() const {
  return owned_.terms.capacity() * sizeof(PostingTerm) + owned_.postings.capacity() * sizeof(Posting) +
         owned_.doc_len.capacity() * 4 + owned_.present.capacity() + doc_ptrs_.capacity() * sizeof(void*);
}

std::vector<double> normalize_scores(const std::vector<double>& s) {
  std::vector<double> out(s.size(), 0.0);
  if (s.empty()) return out;
  auto [lo, hi] = std::minmax_element(s.begin(), s.end());
  double a = *lo, b = *hi;
  for (size_t i = 0; i < s.size(); ++i) out[i] = b > a ? (s[i] - a) / (b - a) : (b > 0 ? 1.0 : 0.0);
  return out;
}

std::vector<double> hybrid_scores(const std::vector<double>& bm25, const std::vector<double>& dense, double w) {
  auto nb = normalize_scores(bm25);
  auto nd = normalize_scores(dense);
  std::vector<double> out(bm25.size());
  for (size_t i = 0; i < out.size(); ++i) out[i] = w * nb[i] + (1.0 - w) * (i < nd.size() ? nd[i] : 0.0);
  return out;
}

}  // namespace repoctx
