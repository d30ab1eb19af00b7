// One target's candidate pool and the features of each candidate, built family by family. Every family
// reads the repository with the target's body hidden (the TargetContext).
//
//   candidates.cpp       which entities enter the pool: scope tiers (class, module, imports, members of
//                        visible classes), what the target's file uses elsewhere, the BM25 tiers; how the
//                        target's file uses them
//   neighbour_votes.cpp  the most similar functions (repository-wide and in the target's file) vote for
//                        what they reference
//   features.cpp         per-candidate features: kind, naming, BM25, votes, usage, popularity, ranks
//   module_couse.cpp     module co-use: what the repository does with the other members of a
//                        candidate's module
#pragma once

#include <algorithm>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "retrieve/engine.h"
#include "retrieve/structural/file_facts.h"
#include "retrieve/structural/scratch.h"
#include "retrieve/structural/structural.h"

namespace repoctx::structural {

using QueryTerms = std::vector<std::pair<uint64_t, uint32_t>>;  // query_terms()

// The candidates and features of `context`'s target for `query`: the whole pipeline of families.
StructuralCandidates build_candidates(RepositoryFacts& facts, const TargetContext& context, const std::string& query,
                                      const StructuralParams& params);

struct CandidatePool {
  RepositoryFacts& facts;
  const RepoView& view;
  const SymbolGraph& graph;
  const TargetContext& context;
  const StructuralParams& params;
  const std::vector<EntityRec>& entities;
  const int target, target_file, target_class;  // target_class: the class enclosing the target, -1 none
  ScratchLease scratch;                         // candidate rows, votes, using units, co-use counts by entity id
  const uint32_t stamp;                         // the request's stamp in scratch
  StructuralCandidates out;
  // Usage in the target's file (outside the hidden body).
  const FileUsage* file_usage = nullptr;
  std::vector<int> bound_name_uses;  // uses of each of file_usage's roots (bound names), by root id
  // (entity, unit using it) pairs, sorted and unique; scratch units_begin/end index them per entity.
  std::vector<std::pair<int, int>> entity_units;
  std::vector<int> used_entities;  // the entities of entity_units, ascending
  int n_units = 0;                 // units with any reference left
  // By candidate row: the index in facts.bindings(target_file) of the import binding that brought it in, -1
  // none (a map to a copy of the bound name cost a node and a string per member of every imported module).
  std::vector<int32_t> binding_of_row;
  // The entity BM25 pass's score of every document it touched (the first entry of a document is its sum).
  std::vector<ScoredDoc> entity_scores;
  int n_neighbours = 0;

  CandidatePool(RepositoryFacts& facts, const TargetContext& context, const StructuralParams& params);

  // ---- the pool (candidates.cpp)
  // The feature row of candidate `entity`, added to the pool on first use; null for a hidden entity.
  std::vector<double>* row_of(int entity);
  bool used_in_file(int entity) const { return scratch->units_stamp[entity] == stamp; }
  // The units using `entity` in the target's file (entity_units' range), empty when none.
  std::pair<const std::pair<int, int>*, const std::pair<int, int>*> units_of(int entity) const {
    if (!used_in_file(entity)) return {nullptr, nullptr};
    return {entity_units.data() + scratch->units_begin[entity], entity_units.data() + scratch->units_end[entity]};
  }
  const EntityScratch::Vote* vote_of(int entity) const {
    return scratch->vote_stamp[entity] == stamp ? &scratch->vote[entity] : nullptr;
  }
  // TargetContext::is_hidden_entity, here where it runs for every document a query touches (a call into
  // another unit per document would be ~2% of a request).
  bool is_hidden_doc(int doc) const {
    return doc == target || (!context.removed_entities.empty() &&
                             std::binary_search(context.removed_entities.begin(), context.removed_entities.end(), doc));
  }
  void add_class_members(int cls, int feature);
  void bind(int candidate, int32_t binding);
  void scope_tiers();
  void count_file_usage();
  void usage_tier();
  void bm25_tiers(const Bm25Index& entity_index, const QueryTerms& query_terms, const Bm25Overrides& overrides);

  // ---- neighbour votes (neighbour_votes.cpp)
  std::vector<int> refs_seen_from(int function) const;
  void neighbour_votes(const Bm25Index& visible, const QueryTerms& query_terms);
  void local_votes(const Bm25Index& visible, const QueryTerms& query_terms);

  // ---- per-candidate features (features.cpp)
  // `x` is a candidate's feature row (indexed by Feature), `row` its index in `out`.
  void candidate_features(const Bm25Index& entity_index, const QueryTerms& query_terms, const Bm25Overrides& overrides,
                          const std::string& query);
  std::vector<int> query_name_ids(const std::string& query);
  std::vector<uint8_t> name_part_marks(const std::string& query);
  int class_unit_count() const;
  std::vector<double> candidate_bm25(const Bm25Index& entity_index, const QueryTerms& query_terms,
                                     const Bm25Overrides& overrides) const;
  std::vector<int> binding_use_counts();
  void name_features(std::vector<double>& x, int candidate, const std::vector<int>& query_names,
                     const std::vector<uint8_t>& part_marks);
  void target_name_features(std::vector<double>& x, int candidate, const std::vector<int>& target_parts,
                            std::string_view target_stem);
  void usage_features(std::vector<double>& x, int candidate, size_t row, int class_units,
                      const std::vector<int>& binding_uses);
  void popularity_features();
  void rank_feature(int from, int rank_to, int rel_to);

  // ---- module co-use (module_couse.cpp)
  void module_couse_features();
};

}  // namespace repoctx::structural
