// The best documents of a scored set, in a deterministic order: by score, then by path, line and qualified
// name (entity_before), so that the order never depends on internal ids.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <limits>
#include <vector>

#include "retrieve/engine.h"

namespace repoctx::structural {

struct Ranked {
  int doc;
  double score;
};

// Sorts `ranked` by score, then path, line, qualified name, and keeps its first `keep`.
inline void sort_docs(const RepoView& view, std::vector<Ranked>& ranked, size_t keep) {
  auto better = [&](const Ranked& a, const Ranked& b) {
    if (a.score != b.score) return a.score > b.score;
    return entity_before(view, a.doc, b.doc);
  };
  if (ranked.size() > keep) {
    std::partial_sort(ranked.begin(), ranked.begin() + static_cast<long>(keep), ranked.end(), better);
    ranked.resize(keep);
  } else {
    std::sort(ranked.begin(), ranked.end(), better);
  }
}

// The k first of the scored documents `keep` accepts, in sort_docs' order. Ties are broken by paths, and
// comparing strings (or copying) the ~20,000 documents a query touches cost more than scoring them: the
// k-th best score is found first with a heap of k numbers, and only the documents reaching it (every one
// tied with the k-th stays: the path decides among them) are sorted.
template <class Keep>
std::vector<Ranked> top_docs(const RepoView& view, const std::vector<ScoredDoc>& scored, size_t k, Keep&& keep) {
  std::vector<double> heap;  // min-heap of the k best scores so far
  heap.reserve(std::min(k, scored.size()) + 1);
  for (const auto& doc : scored) {
    if (heap.size() == k && (k == 0 || doc.score <= heap.front())) continue;
    if (!keep(doc.doc)) continue;
    heap.push_back(doc.score);
    std::push_heap(heap.begin(), heap.end(), std::greater<>());
    if (heap.size() > k) {
      std::pop_heap(heap.begin(), heap.end(), std::greater<>());
      heap.pop_back();
    }
  }
  const double cut = heap.size() == k && k > 0 ? heap.front() : -std::numeric_limits<double>::infinity();
  std::vector<Ranked> ranked;
  for (const auto& doc : scored)
    if (doc.score >= cut && keep(doc.doc)) ranked.push_back({doc.doc, doc.score});
  sort_docs(view, ranked, k);
  return ranked;
}

}  // namespace repoctx::structural
