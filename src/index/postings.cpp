#include "index/postings.h"

#include <algorithm>
#include <unordered_map>

namespace repoctx {

std::span<const Posting> PostingsView::find_in(std::span<const PostingTerm> terms, std::span<const Posting> postings,
                                               uint64_t term) {
  auto it =
      std::lower_bound(terms.begin(), terms.end(), term, [](const PostingTerm& t, uint64_t v) { return t.term < v; });
  if (it == terms.end() || it->term != term) return {};
  // Checked here, per term, rather than for every term when an image is mapped: that loop read the whole
  // dictionary of a large index (millions of terms) before a query could read one list. A damaged list is empty.
  if (static_cast<uint64_t>(it->offset) + it->count > postings.size()) return {};
  return postings.subspan(it->offset, it->count);
}

std::span<const Posting> PostingsView::find(uint64_t term) const {
  return find_in(terms, postings, term);
}

uint32_t PostingsView::doc_freq(uint64_t term) const {
  if (!overlay()) return static_cast<uint32_t>(find(term).size());
  size_t n = 0;
  for_each_piece(term, [&](std::span<const Posting> piece, uint32_t) { n += piece.size(); });
  return static_cast<uint32_t>(n);
}

PostingsView PostingsData::view() const {
  return PostingsView{terms, postings, doc_len, present, n_docs, total_len, {}, {}, {}};
}

PostingsData build_postings(const std::vector<const TermVec*>& docs) {
  PostingsData d;
  d.doc_len.assign(docs.size(), 0);
  d.present.assign(docs.size(), 0);
  // Pass 1: document frequency per term (slot = order of first sight).
  std::unordered_map<uint64_t, uint32_t> slot;
  std::vector<uint32_t> df;
  size_t pairs = 0;
  for (const TermVec* t : docs)
    if (t) pairs += t->terms.size();
  slot.reserve(pairs / 8 + 16);
  for (size_t i = 0; i < docs.size(); ++i) {
    const TermVec* t = docs[i];
    if (!t) continue;
    d.present[i] = 1;
    d.doc_len[i] = t->length;
    ++d.n_docs;
    d.total_len += t->length;
    for (const auto& [term, tf] : t->terms) {
      auto [it, added] = slot.try_emplace(term, static_cast<uint32_t>(df.size()));
      if (added) df.push_back(0);
      ++df[it->second];
    }
  }
  // The dictionary in term order; each slot's write position.
  d.terms.reserve(slot.size());
  for (const auto& [term, s] : slot) d.terms.push_back({term, s, df[s]});
  std::sort(d.terms.begin(), d.terms.end(), [](const PostingTerm& a, const PostingTerm& b) { return a.term < b.term; });
  std::vector<uint32_t> next(df.size());
  uint32_t off = 0;
  for (auto& t : d.terms) {
    uint32_t s = t.offset;  // still the slot
    t.offset = off;
    next[s] = off;
    off += t.count;
  }
  // Pass 2: postings, in document order within each term.
  d.postings.resize(pairs);
  for (size_t i = 0; i < docs.size(); ++i) {
    const TermVec* t = docs[i];
    if (!t) continue;
    for (const auto& [term, tf] : t->terms)
      d.postings[next[slot.find(term)->second]++] = {static_cast<uint32_t>(i), tf};
  }
  return d;
}

}  // namespace repoctx
