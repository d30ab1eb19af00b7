#include "retrieve/bm25.h"

#include <algorithm>
#include <cmath>
#include <limits>

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
  compute_bounds();
}

void Bm25Index::attach(const PostingsView& lists, std::function<const TermVec&(int)> doc_terms) {
  owned_ = PostingsData{};
  doc_ptrs_.clear();
  v_ = lists;
  doc_terms_ = std::move(doc_terms);
  bound_.clear();
}

void Bm25Index::compute_bounds() {
  bound_.clear();
  const double avgdl = this->avgdl();
  if (avgdl <= 0) return;
  const Bm25Params p;
  const double c1 = p.k1 * (1.0 - p.b);
  // A query's overrides move the mean length by a few documents' worth; one whose c2 falls below the floor
  // (its mean length grew by more than 1%) is scored without the bounds.
  bound_c2_floor_ = p.k1 * p.b / (avgdl * 1.01);
  bound_.resize(owned_.terms.size());
  for (size_t i = 0; i < owned_.terms.size(); ++i) {
    const PostingTerm& t = owned_.terms[i];
    double g = 0;
    for (uint32_t j = t.offset; j < t.offset + t.count; ++j) {
      const double tf = static_cast<double>(owned_.postings[j].tf);
      g = std::max(g, tf / (tf + c1 + bound_c2_floor_ * static_cast<double>(owned_.doc_len[owned_.postings[j].doc])));
    }
    bound_[i] = g;
  }
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

namespace {

// The documents of `all` whose score is at least the k-th largest (all of them when there are at most k).
void keep_k_with_ties(std::vector<ScoredDoc>& all, size_t k) {
  if (all.size() <= k) return;
  if (k == 0) {
    all.clear();
    return;
  }
  std::vector<double> s(all.size());
  for (size_t i = 0; i < all.size(); ++i) s[i] = all[i].score;
  std::nth_element(s.begin(), s.begin() + static_cast<long>(k - 1), s.end(), std::greater<>());
  const double kth = s[k - 1];
  std::erase_if(all, [&](const ScoredDoc& d) { return d.score < kth; });
}

// A query term of the MaxScore loop: its postings, its weight, and the largest contribution it can make.
struct BoundTerm {
  std::span<const Posting> list;
  double w, ub;
};

// The prepared query's terms that have postings, highest bound first, into `terms`; false when a weight is
// not positive (the bounds need every contribution positive).
bool bound_terms(const Bm25Index::Prepared& pq, const PostingsView& v, const std::vector<double>& bound, double kp1,
                 std::vector<BoundTerm>& terms) {
  for (const auto& [term, w] : pq.weights) {
    auto it = std::lower_bound(v.terms.begin(), v.terms.end(), term,
                               [](const PostingTerm& t, uint64_t x) { return t.term < x; });
    if (it == v.terms.end() || it->term != term) continue;
    if (!(w > 0)) return false;
    // The margin covers rounding: the bound is another product than the contributions'.
    const double g = bound[static_cast<size_t>(it - v.terms.begin())];
    terms.push_back({v.postings.subspan(it->offset, it->count), w, w * kp1 * g * (1.0 + 1e-9)});
  }
  std::sort(terms.begin(), terms.end(), [](const BoundTerm& a, const BoundTerm& b) { return a.ub > b.ub; });
  return true;
}

// One top_k query's MaxScore pass over the per-thread partial sums `acc` (zero outside `touched`).
struct MaxScore {
  const Bm25Index& index;
  const Bm25Index::Prepared& pq;
  const PostingsView& v;
  const std::vector<BoundTerm>& terms;
  const std::vector<double>& rest;  // rest[i]: the bounds of terms i.. together
  std::vector<double>& acc;
  std::vector<uint32_t>& touched;
  const std::vector<char>& skip;
  const size_t n_ids, k;
  const double c1, c2, kp1;
  const std::function<bool(int)>& keep;
  // theta: the k-th best exact score among documents found so far (a lower bound of the final k-th).
  double theta = -std::numeric_limits<double>::infinity();

  double exact(uint32_t d) const { return Bm25Index::score_prepared(pq, index.doc_terms(static_cast<int>(d))); }

  void refresh_theta() {
    std::vector<std::pair<double, uint32_t>> best;
    best.reserve(touched.size());
    for (uint32_t d : touched)
      if (!skip[d]) best.emplace_back(acc[d], d);
    const size_t look = std::min(best.size(), 2 * k);
    std::partial_sort(best.begin(), best.begin() + static_cast<long>(look), best.end(), std::greater<>());
    std::vector<double> found;
    for (size_t j = 0; j < look && found.size() < k; ++j)
      if (keep(static_cast<int>(best[j].second))) found.push_back(exact(best[j].second));
    if (found.size() < k) return;
    theta = std::max(theta, *std::min_element(found.begin(), found.end()));
  }

  // Reads whole lists, term by term, until the terms left could not lift a document they alone contain to
  // theta; theta is refreshed from the best partial sums after terms 1, 2, 4, 8, ... Returns the first
  // term not read.
  size_t read_lists() {
    size_t i = 0;
    for (size_t next_refresh = 1; i < terms.size(); ++i) {
      if (rest[i] < theta) break;
      for (const Posting& po : terms[i].list) {
        const uint32_t d = po.doc;
        if (d >= n_ids || skip[d]) continue;
        const double tf = static_cast<double>(po.tf);
        if (acc[d] == 0.0) touched.push_back(d);
        acc[d] += terms[i].w * tf * kp1 / (tf + c1 + c2 * static_cast<double>(v.doc_len[d]));
      }
      if (i + 1 < terms.size() && (i + 1 == next_refresh || (theta < 0 && touched.size() >= k))) {
        refresh_theta();
        if (i + 1 == next_refresh) next_refresh *= 2;
      }
    }
    return i;
  }

  // The documents found that the terms from `from` on could still lift to theta.
  std::vector<uint32_t> candidates(size_t from) const {
    std::vector<uint32_t> cand;
    for (uint32_t d : touched)
      if ((acc[d] + rest[from]) * (1.0 + 1e-9) >= theta && keep(static_cast<int>(d))) cand.push_back(d);
    return cand;
  }

  // Adds the terms from `from` on to the sums of the documents `open` marks (a byte per posting to test, no
  // arithmetic for the others).
  void finish_open(size_t from, const std::vector<char>& open) {
    for (size_t j = from; j < terms.size(); ++j)
      for (const Posting& po : terms[j].list) {
        const uint32_t d = po.doc;
        if (d >= n_ids || !open[d]) continue;
        const double tf = static_cast<double>(po.tf);
        acc[d] += terms[j].w * tf * kp1 / (tf + c1 + c2 * static_cast<double>(v.doc_len[d]));
      }
  }

  // acc holds each candidate's whole sum, in another order than score_all's: the k-th best of them is the
  // answer's up to rounding, and the candidates within a margin of it are scored exactly.
  std::vector<ScoredDoc> select_exact(const std::vector<uint32_t>& cand) const {
    std::vector<double> sums;
    sums.reserve(cand.size());
    for (uint32_t d : cand) sums.push_back(acc[d]);
    double cut = -std::numeric_limits<double>::infinity();
    if (sums.size() > k) {
      std::nth_element(sums.begin(), sums.begin() + static_cast<long>(k - 1), sums.end(), std::greater<>());
      cut = sums[k - 1] * (1.0 - 1e-9);
    }
    std::vector<ScoredDoc> out;
    for (uint32_t d : cand)
      if (acc[d] >= cut) out.push_back({static_cast<int>(d), exact(d)});
    keep_k_with_ties(out, k);
    return out;
  }
};

}  // namespace

std::vector<ScoredDoc> Bm25Index::top_k(const std::vector<std::pair<uint64_t, uint32_t>>& q, const Bm25Params& p,
                                        const Bm25Overrides* ov, size_t k, const std::function<bool(int)>& keep) const {
  auto select = [&](std::vector<ScoredDoc> all) {
    std::erase_if(all, [&](const ScoredDoc& d) { return !keep(d.doc); });
    keep_k_with_ties(all, k);
    return all;
  };
  if (k == 0) return {};
  const Bm25Params defaults;
  if (bound_.empty() || v_.overlay() || p.k1 != defaults.k1 || p.b != defaults.b || (ov && !ov->replaced.empty()))
    return select(score_all(q, p, ov));
  const Stats s = stats(ov);
  if (s.n <= 0 || s.avgdl <= 0) return {};
  const double c1 = p.k1 * (1.0 - p.b), c2 = p.k1 * p.b / s.avgdl, kp1 = p.k1 + 1.0;
  if (c2 < bound_c2_floor_) return select(score_all(q, p, ov));
  // Exact scores of single documents: prepare() weighs the terms as score_all does and score_prepared sums
  // them in the same (query) order with the same formula, so its score is score_all's bit for bit.
  const Prepared pq = prepare(q, p, ov);
  std::vector<BoundTerm> terms;
  if (!bound_terms(pq, v_, bound_, kp1, terms)) return select(score_all(q, p, ov));
  const size_t m = terms.size();
  std::vector<double> rest(m + 1, 0.0);
  for (size_t i = m; i-- > 0;) rest[i] = rest[i + 1] + terms[i].ub;

  thread_local std::vector<double> acc;  // partial sums, in bound order (not score_all's: never returned)
  thread_local std::vector<uint32_t> touched;
  thread_local std::vector<char> skip;
  const size_t n_ids = v_.doc_len.size();
  if (acc.size() < n_ids) acc.assign(n_ids, 0.0);
  touched.clear();
  struct Clear {  // acc left zero however this ends
    ~Clear() {
      for (uint32_t d : touched) acc[d] = 0.0;
    }
  } clear;
  SkipMarks marks(skip, n_ids, ov);

  MaxScore ms{*this, pq, v_, terms, rest, acc, touched, skip, n_ids, k, c1, c2, kp1, keep};
  const size_t i = ms.read_lists();
  // The documents found that the terms left could still lift to theta are finished with those terms'
  // lists, read for them alone.
  thread_local std::vector<char> open;
  if (open.size() < n_ids) open.assign(n_ids, 0);
  std::vector<uint32_t> cand = ms.candidates(i);
  struct Close {
    const std::vector<uint32_t>& c;
    ~Close() {
      for (uint32_t d : c) open[d] = 0;
    }
  } close{cand};
  for (uint32_t d : cand) open[d] = 1;
  ms.finish_open(i, open);
  if (cand.empty()) return {};
  return ms.select_exact(cand);
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
