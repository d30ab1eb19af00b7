// The texts retrieval scores: one document per entity, and AlignCoder's split-aggregate base snippets.
// Both depend only on one file, so the index stores them with the file and re-derives them when the file
// (or, for a target, its hidden-body form) changes.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "repo/model.h"

namespace repoctx {

// Bag of words of a document: (term id = XXH3-64 of the token, term frequency), sorted by id.
struct TermVec {
  std::vector<std::pair<uint64_t, uint32_t>> terms;
  uint32_t length = 0;  // number of tokens
  std::string serialize() const;
  static TermVec deserialize(std::string_view blob, uint32_t length);
};
TermVec term_vector(std::string_view text);

struct SnippetSpan {
  int start_line = 0, end_line = 0;  // inclusive, 1-based
  int code_lines = 0;                // non-blank lines (the |S| of AlignCoder eq. 15-16)
};
// AlignCoder III-A1: mini-blocks of consecutive non-blank lines, greedily aggregated while the snippet
// holds at most max_lines lines (eq. 16); a mini-block longer than max_lines is cut into max_lines chunks.
std::vector<SnippetSpan> split_aggregate(std::string_view source, int max_lines);

// What BM25 scores for an entity: callables and variables by their full source lines (decorators to
// end; a statement that shares a line with others through `;` by its own part of it); classes by their
// skeleton (header, docstring, member signatures), so a class document does not duplicate its methods'
// bodies. From an entity and its direct children.
std::string entity_document(const Entity& e, const std::vector<const Entity*>& children, std::string_view source,
                            const std::vector<uint32_t>& line_starts);

// The term vectors of every entity document of a parsed file, in time and memory linear in the file:
// children lists are built once, and once the documents hold more than kEntityDocumentBudget times the
// file's bytes (+1 MiB; real code stays under 2.5 times: nested functions repeat their bodies in their
// parents' documents), the remaining entities are scored by their signature blocks instead; `shortened`
// counts them (a statement binding 100,000 names would otherwise repeat itself 100,000 times).
// Stops early (fewer vectors) when util/cancel.h reports an interrupt.
inline constexpr size_t kEntityDocumentBudget = 8;
struct EntityTerms {
  std::vector<TermVec> terms;
  size_t shortened = 0;
};
EntityTerms entity_term_vectors(const ParsedFile& pf, std::string_view source,
                                const std::vector<uint32_t>& line_starts);

// "def f(a, b):" followed by the docstring, indented: the visible part of a target.
std::string entity_signature_block(const Entity& e);

}  // namespace repoctx
