// Inverted lists for BM25 in one flat layout, the same in memory and in the persisted query image
// (index/query_image.h): a dictionary sorted by term id pointing into one array of (document, term
// frequency) postings, plus each document's length. Built at index time and memory-mapped at query time,
// so that a process answering one query reads only the lists its terms need.
#pragma once

#include <algorithm>
#include <cstdint>
#include <span>
#include <vector>

#include "repo/documents.h"

namespace repoctx {

struct PostingTerm {
  uint64_t term;    // XXH3-64 of the token (TermVec's ids)
  uint32_t offset;  // first posting of the term
  uint32_t count;   // document frequency
};

struct Posting {
  uint32_t doc;
  uint32_t tf;
};

// Old documents [begin, end) of a base image that an update kept, each now numbered doc + shift.
struct PostingRun {
  uint32_t begin, end;
  int32_t shift;
  uint32_t pad;
};

// A read-only view of inverted lists, owned elsewhere (a PostingsData, or a mapped image).
//
// Overlay (an update's image over a base image, index/query_image.h): `terms`/`postings` are then the
// base's lists, in the base's numbering; `runs` say which of its documents are kept and their numbers now
// (ascending, disjoint, order kept); `extra_*` hold the lists of the documents the update added, in the
// current numbering. doc_len, present, n_docs and total_len are always in the current numbering.
struct PostingsView {
  std::span<const PostingTerm> terms;  // sorted by term
  std::span<const Posting> postings;   // per term, by document
  std::span<const uint32_t> doc_len;   // per document id (0 for absent documents)
  std::span<const uint8_t> present;    // 1 where the document exists
  uint64_t n_docs = 0, total_len = 0;
  std::span<const PostingRun> runs;          // empty: no overlay
  std::span<const PostingTerm> extra_terms;  // the overlay's own lists (sorted by term)
  std::span<const Posting> extra_postings;

  bool overlay() const { return !runs.empty() || !extra_terms.empty(); }
  // The postings of `term` (empty when no document has it) in the lists `terms`/`postings` (without overlay,
  // every posting of the term).
  std::span<const Posting> find(uint64_t term) const;

  // Calls f(span of postings, shift) for the postings of `term` in ascending current document order, each
  // document number being posting.doc + shift (modulo 2^32), the overlay's documents in their place.
  template <class F>
  void for_each_piece(uint64_t term, F&& f) const {
    std::span<const Posting> base = find(term);
    if (!overlay()) {
      if (!base.empty()) f(base, uint32_t{0});
      return;
    }
    std::span<const Posting> extra = find_in(extra_terms, extra_postings, term);
    size_t ei = 0;
    auto extra_below = [&](uint64_t limit) {  // the overlay's postings numbered below `limit`
      size_t from = ei;
      while (ei < extra.size() && extra[ei].doc < limit) ++ei;
      if (ei > from) f(extra.subspan(from, ei - from), uint32_t{0});
    };
    const Posting* lo = base.data();
    const Posting* const end = lo + base.size();
    auto by_doc = [](const Posting& p, uint32_t doc) { return p.doc < doc; };
    for (const PostingRun& r : runs) {
      if (lo == end) break;
      lo = std::lower_bound(lo, end, r.begin, by_doc);
      const Posting* hi = std::lower_bound(lo, end, r.end, by_doc);
      if (lo == hi) continue;
      extra_below(static_cast<uint64_t>(static_cast<int64_t>(lo->doc) + r.shift));
      f(std::span<const Posting>(lo, static_cast<size_t>(hi - lo)), static_cast<uint32_t>(r.shift));
      lo = hi;
    }
    extra_below(UINT64_MAX);
  }
  // Documents containing `term` (for_each_piece's count).
  uint32_t doc_freq(uint64_t term) const;

 private:
  static std::span<const Posting> find_in(std::span<const PostingTerm> terms, std::span<const Posting> postings,
                                          uint64_t term);
};

struct PostingsData {
  std::vector<PostingTerm> terms;
  std::vector<Posting> postings;
  std::vector<uint32_t> doc_len;
  std::vector<uint8_t> present;
  uint64_t n_docs = 0, total_len = 0;
  PostingsView view() const;
};

// docs[i] is document i; null = no document with that id (counts neither in N nor in the mean length).
PostingsData build_postings(const std::vector<const TermVec*>& docs);

}  // namespace repoctx
