// Per-candidate features: what a candidate is (kind, naming), how its name matches the query, the
// target's parameters and the target's name, its BM25 score, the neighbours' votes, its use in the target's
// file and class, the use of the import that brought it in, its popularity, and per-target ranks.
#include "retrieve/structural/features.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <string>
#include <unordered_set>
#include <vector>

#include "retrieve/structural/candidates.h"
#include "util/text.h"

namespace repoctx::structural {

namespace {

// The identifiers of a text (letters, digits and underscores, not starting with a digit), distinct.
std::unordered_set<std::string> identifiers(std::string_view text) {
  std::unordered_set<std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    unsigned char ch = static_cast<unsigned char>(text[i]);
    if (std::isalpha(ch) || ch == '_') {
      size_t j = i;
      while (j < text.size() && (std::isalnum(static_cast<unsigned char>(text[j])) || text[j] == '_')) ++j;
      out.emplace(text.substr(i, j - i));
      i = j;
    } else {
      ++i;
    }
  }
  return out;
}

// A name without its leading underscores.
std::string_view stem_of(std::string_view name) {
  name.remove_prefix(std::min(name.find_first_not_of('_'), name.size()));
  return name;
}

}  // namespace

// The ids of the entity names the query has as identifiers, ascending.
std::vector<int> CandidatePool::query_name_ids(const std::string& query) {
  std::vector<int> query_names;
  for (const auto& id : identifiers(query))
    if (int name = facts.name_id(id); name >= 0) query_names.push_back(name);
  std::sort(query_names.begin(), query_names.end());
  return query_names;
}

// Per name-part id: bit 1 when the query has the part, bit 2 when the target's parameters (names and
// annotations) do. Tokens no name has cannot match a name part.
std::vector<uint8_t> CandidatePool::name_part_marks(const std::string& query) {
  std::vector<uint8_t> part_marks(facts.n_parts(), 0);
  auto mark = [&](const std::string& text, uint8_t bit) {
    for (auto& token : tokenize_code(text))
      if (int id = facts.part_id(token); id >= 0) part_marks[static_cast<size_t>(id)] |= bit;
  };
  mark(query, 1);
  for (const auto& param : entities[target].params) {
    mark(param.name, 2);
    mark(param.annotation, 2);
  }
  return part_marks;
}

// The callables of the target's class in its file, the target excepted (0 outside a class).
int CandidatePool::class_unit_count() const {
  int class_units = 0;
  const FileRec& file = view.files()[target_file];
  if (target_class >= 0)
    for (int i = file.first_entity; i < file.first_entity + file.n_entities; ++i)
      if (entities[i].parent_index == target_class && is_callable(entities[i].kind) && i != target) ++class_units;
  return class_units;
}

// The entity pass's score of each candidate, by row (its first entry; a document it did not touch has no
// query term: 0), found through the candidates' rows in one pass over the scored documents (scattering all
// ~20,000 of them into a per-document array and clearing it again cost more than the scoring).
std::vector<double> CandidatePool::candidate_bm25(const Bm25Index& entity_index, const QueryTerms& query_terms,
                                                  const Bm25Overrides& overrides) const {
  auto prepared = entity_index.prepare(query_terms, params.bm25, &overrides);
  std::vector<double> bm25(out.entities.size(), 0.0);
  std::vector<char> found(out.entities.size(), 0);
  for (const auto& scored : entity_scores) {
    if (scored.doc < 0 || static_cast<size_t>(scored.doc) >= entities.size() || scratch->row_stamp[scored.doc] != stamp)
      continue;
    const auto row = static_cast<size_t>(scratch->row[scored.doc]);
    if (!found[row]) {
      found[row] = 1;
      bm25[row] = scored.score;
    }
  }
  // score_all summed the same terms in the same order with the same formula: its score is this one's.
  // Documents the hidden body replaces are scored on their replacement (the last one given for a document).
  for (const auto& [doc, terms] : overrides.replaced)
    if (doc >= 0 && static_cast<size_t>(doc) < entities.size() && scratch->row_stamp[doc] == stamp)
      bm25[static_cast<size_t>(scratch->row[doc])] = Bm25Index::score_prepared(prepared, *terms);
  return bm25;
}

// The uses in the target's file (outside the hidden body) of each import binding's bound name.
std::vector<int> CandidatePool::binding_use_counts() {
  std::vector<int> binding_uses;
  for (const auto& binding : facts.bindings(target_file)) {
    auto root = file_usage->root_id.find(binding.bound);
    binding_uses.push_back(root == file_usage->root_id.end() ? 0 : bound_name_uses[static_cast<size_t>(root->second)]);
  }
  return binding_uses;
}

void CandidatePool::candidate_features(const Bm25Index& entity_index, const QueryTerms& query_terms,
                                       const Bm25Overrides& overrides, const std::string& query) {
  const std::vector<int> query_names = query_name_ids(query);
  const std::vector<uint8_t> part_marks = name_part_marks(query);
  const int class_units = class_unit_count();
  const std::vector<double> bm25 = candidate_bm25(entity_index, query_terms, overrides);
  double max_bm25 = 0;
  for (size_t row = 0; row < out.entities.size(); ++row) max_bm25 = std::max(max_bm25, bm25[row]);
  const std::vector<int> binding_uses = binding_use_counts();
  const auto& target_parts = facts.name_part_ids_of(target);
  const std::string_view target_stem = stem_of(entities[target].name);
  for (size_t row = 0; row < out.entities.size(); ++row) {
    int candidate = out.entities[row];
    auto& x = out.features[row];
    name_features(x, candidate, query_names, part_marks);
    target_name_features(x, candidate, target_parts, target_stem);
    x[f_bm25_rel] = max_bm25 > 0 ? bm25[row] / max_bm25 : 0;
    x[f_bm25_log] = std::log1p(bm25[row]);
    usage_features(x, candidate, row, class_units, binding_uses);
  }
  popularity_features();
  rank_feature(f_popularity, f_popularity_rank, -1);
  rank_feature(f_vote, f_vote_rank, f_vote_rel);
  rank_feature(f_local_vote, f_local_vote_rank, f_local_vote_rel);
  rank_feature(f_file_usage, f_usage_rank, -1);
}

// What a candidate is (kind, naming), how its name matches the query and the target's parameters.
// part_marks: per name-part id, 1 when the query has it, 2 when the target's parameters do (bits).
void CandidatePool::name_features(std::vector<double>& x, int candidate, const std::vector<int>& query_names,
                                  const std::vector<uint8_t>& part_marks) {
  const EntityRec& entity = entities[candidate];
  const auto& name = facts.name_facts(candidate);
  x[f_kind_function] = entity.kind == EntityKind::function;
  x[f_kind_method] = entity.kind == EntityKind::method || entity.kind == EntityKind::constructor;
  x[f_kind_class] = is_type(entity.kind);
  x[f_kind_variable] = entity.kind == EntityKind::variable;
  x[f_kind_attribute] = entity.kind == EntityKind::attribute || entity.kind == EntityKind::field;
  x[f_dunder] = name.dunder;
  x[f_private] = name.private_;
  x[f_upper] = name.upper;
  x[f_name_in_query] = std::binary_search(query_names.begin(), query_names.end(), name.name_id) ? 1 : 0;
  const auto& parts = facts.name_part_ids_of(candidate);
  int query_hits = 0, param_hits = 0;
  for (int part : parts) {
    query_hits += part_marks[static_cast<size_t>(part)] & 1;
    param_hits += (part_marks[static_cast<size_t>(part)] >> 1) & 1;
  }
  x[f_name_overlap] = parts.empty() ? 0 : static_cast<double>(query_hits) / static_cast<double>(parts.size());
  x[f_param_match] = parts.empty() ? 0 : static_cast<double>(param_hits) / static_cast<double>(parts.size());
}

// How the candidate's name relates to the target's name: shared subwords, or one name inside the other
// (`get_x` and `_get_x`, `x` and `x_impl`).
void CandidatePool::target_name_features(std::vector<double>& x, int candidate, const std::vector<int>& target_parts,
                                         std::string_view target_stem) {
  const auto& parts = facts.name_part_ids_of(candidate);
  int hits = 0;
  for (int part : parts)
    hits += std::find(target_parts.begin(), target_parts.end(), part) != target_parts.end() ? 1 : 0;
  x[f_target_name_overlap] = parts.empty() ? 0 : static_cast<double>(hits) / static_cast<double>(parts.size());
  const std::string_view stem = stem_of(entities[candidate].name);
  x[f_name_stem] =
      stem.size() >= 3 && target_stem.size() >= 3 && stem != target_stem &&
      (target_stem.find(stem) != std::string_view::npos || stem.find(target_stem) != std::string_view::npos);
}

// Votes, usage in the file and in the class, import usage, proximity, and the interactions of scope tiers
// with kinds. `row` is the candidate's row; binding_uses: the uses in the file (outside the hidden body) of
// each binding's bound name.
void CandidatePool::usage_features(std::vector<double>& x, int candidate, size_t row, int class_units,
                                   const std::vector<int>& binding_uses) {
  const EntityRec& entity = entities[candidate];
  if (const auto* vote = vote_of(candidate)) {
    x[f_vote] = vote->all;
    x[f_vote_count] = static_cast<double>(vote->voters) / std::max(1, n_neighbours);
    x[f_vote_top5] = vote->top5;
    x[f_vote_file] = vote->same_file;
    x[f_vote_class] = vote->same_class;
  }
  if (scratch->local_stamp[candidate] == stamp) x[f_local_vote] = scratch->local_vote[candidate];
  if (used_in_file(candidate)) {
    int users = 0, class_users = 0;
    auto [units_begin, units_end] = units_of(candidate);
    for (auto pair = units_begin; pair != units_end; ++pair) {
      int unit = pair->second;
      if (unit < 0) continue;
      ++users;
      if (target_class >= 0 && entities[unit].parent_index == target_class) ++class_users;
    }
    x[f_file_usage] = std::log1p(users);
    x[f_file_usage_frac] = n_units > 0 ? static_cast<double>(users) / n_units : 0;
    x[f_class_usage] = class_units > 0 ? static_cast<double>(class_users) / class_units : 0;
  }
  if (row < binding_of_row.size() && binding_of_row[row] >= 0) {
    const int uses = binding_uses[static_cast<size_t>(binding_of_row[row])];
    x[f_import_unused] = uses == 0;
    x[f_import_uses] = std::log1p(uses);
  }
  if (entity.file == target_file)
    x[f_proximity] = 1.0 / (1.0 + std::abs(entity.start_line - entities[target].start_line) / 100.0);
  x[f_method_of_own_class_private] = x[f_class_direct] * x[f_private];
  x[f_direct_method] = x[f_class_direct] * x[f_kind_method];
  x[f_direct_attribute] = x[f_class_direct] * x[f_kind_attribute];
  x[f_module_function] = x[f_module] * x[f_kind_function];
  x[f_module_class] = x[f_module] * x[f_kind_class];
  x[f_import_class] = x[f_import] * x[f_kind_class];
  x[f_import_function] = x[f_import] * x[f_kind_function];
}

// Repository-wide use, without the hidden body's own references; and whether a class is named like an
// exception.
void CandidatePool::popularity_features() {
  const auto& popularity = facts.popularity();
  const std::vector<int>& own = facts.refs_of(target);  // sorted
  for (size_t row = 0; row < out.entities.size(); ++row) {
    int candidate = out.entities[row];
    int users = popularity[candidate] - (std::binary_search(own.begin(), own.end(), candidate) ? 1 : 0);
    out.features[row][f_popularity] = std::log1p(std::max(0, users));
    out.features[row][f_exception_class] =
        is_type(entities[candidate].kind) && facts.name_facts(candidate).exception_name;
  }
}

// 1 / (1 + rank) of each candidate by feature `from` (candidates with 0 get 0), and value / max.
void CandidatePool::rank_feature(int from, int rank_to, int rel_to) {
  std::vector<std::pair<double, size_t>> ranked;
  for (size_t row = 0; row < out.features.size(); ++row)
    if (out.features[row][from] > 0) ranked.emplace_back(out.features[row][from], row);
  std::stable_sort(ranked.begin(), ranked.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  // Ties share the best rank, so the order of equal candidates cannot matter.
  size_t rank = 0;
  for (size_t i = 0; i < ranked.size(); ++i) {
    if (i > 0 && ranked[i].first < ranked[i - 1].first) rank = i;
    out.features[ranked[i].second][rank_to] = 1.0 / (1.0 + static_cast<double>(rank));
    if (rel_to >= 0) out.features[ranked[i].second][rel_to] = ranked[i].first / ranked.front().first;
  }
}

}  // namespace repoctx::structural

namespace repoctx {

const std::vector<std::string>& structural_feature_names() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> out;
    out.reserve(std::size(structural::kFeatureNames));
    for (const auto& feature : structural::kFeatureNames) out.emplace_back(feature.name);
    return out;
  }();
  return names;
}

}  // namespace repoctx
