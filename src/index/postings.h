// Inverted lists for BM25 in one flat layout, the same in memory and in the persisted query image
// (index/query_image.h): a dictionary sorted by term id pointing into one array of (document, term
// frequency) postings, plus each document's length. Built at index time and memory-mapped at query time,
// so that a process answering one query reads only the lists its terms need.
#pragma once

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

// A read-only view of inverted lists, owned elsewhere (a PostingsData, or a mapped image).
struct PostingsView {
  std::span<const PostingTerm> terms;  // sorted by term
  std::span<const Posting> postings;   // per term, by document
  std::span<const uint32_t> doc_len;   // per document id (0 for absent documents)
  std::span<const uint8_t> present;    // 1 where the document exists
  uint64_t n_docs = 0, total_len = 0;

  // The postings of `term` (empty when no document has it).
  std::span<const Posting> find(uint64_t term) const;
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
