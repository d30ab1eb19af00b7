// What every extractor fuzz target checks on a parsed file: the invariants the index and its readers rely
// on, and the per-file work of the indexer (documents, snippets, reference encoding, body masking).
// A violated invariant aborts (libFuzzer reports it with the input).
#pragma once

#include <cstdio>
#include <cstdlib>
#include <string>

#include "index/schema.h"
#include "repo/documents.h"
#include "repo/model.h"
#include "util/text.h"

namespace repoctx::fuzz {

[[noreturn]] inline void violated(const char* what) {
  std::fprintf(stderr, "invariant violated: %s\n", what);
  std::abort();
}

inline void check_file(const ParsedFile& pf, const std::string& src) {
  for (size_t i = 0; i < pf.entities.size(); ++i) {
    const Entity& e = pf.entities[i];
    if (e.parent >= static_cast<int>(i) || e.parent < -1) violated("an entity's parent comes before it");
    if (e.start_byte > e.end_byte || e.end_byte > src.size()) violated("entity bytes within the file");
    if (e.start_line < 1) violated("entity lines are 1-based");
  }
  for (const auto& r : pf.references)
    if (r.scope >= static_cast<int>(pf.entities.size()) || r.scope < -1) violated("reference scopes are entities");
  auto starts = line_starts(src);
  auto terms = entity_term_vectors(pf, src, starts);
  if (terms.terms.size() != pf.entities.size()) violated("one term vector per entity");
  for (const auto& sp : split_aggregate(src, 15)) term_vector(line_range(src, starts, sp.start_line, sp.end_line));
  auto refs = decode_references(encode_references(pf.references));
  if (refs.size() != pf.references.size()) violated("references round-trip");
  for (size_t i = 0; i < refs.size(); ++i)
    if (refs[i].chain != pf.references[i].chain || refs[i].line != pf.references[i].line)
      violated("references round-trip");
  for (const auto& e : pf.entities)
    if (e.body_start_line > 0) {
      std::string masked = mask_body(src, e);
      if (line_starts(masked).size() != starts.size()) violated("masking keeps the line count");
    }
}

}  // namespace repoctx::fuzz
