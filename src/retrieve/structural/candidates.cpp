#include "retrieve/structural/candidates.h"

#include <algorithm>

#include "retrieve/structural/features.h"
#include "retrieve/structural/ranked_docs.h"

namespace repoctx::structural {

CandidatePool::CandidatePool(RepositoryFacts& repository_facts, const TargetContext& target_context,
                             const StructuralParams& structural_params)
    : facts(repository_facts),
      view(repository_facts.engine().view()),
      graph(repository_facts.engine().graph()),
      context(target_context),
      params(structural_params),
      entities(view.entities()),
      target(target_context.target.entity),
      target_file(target_context.target.file),
      target_class(graph.enclosing_class(target_context.target.entity)),
      scratch(view.entities().size(), view.files().size()),
      stamp(scratch->stamp) {}

std::vector<double>* CandidatePool::row_of(int entity) {
  if (entity < 0 || context.is_hidden_entity(entity)) return nullptr;
  if (scratch->row_stamp[entity] == stamp) return &out.features[static_cast<size_t>(scratch->row[entity])];
  scratch->row_stamp[entity] = stamp;
  scratch->row[entity] = static_cast<int32_t>(out.entities.size());
  out.entities.push_back(entity);
  out.features.emplace_back(f_count, 0.0);
  return &out.features.back();
}

// The first max_class_members members of `cls` (through its MRO) join the pool with `feature` set; members
// inherited from a base get f_class_inherited instead of f_class_direct.
void CandidatePool::add_class_members(int cls, int feature) {
  int taken = 0;
  for (int member : facts.members_of(cls)) {
    if (taken++ >= params.max_class_members) break;
    if (auto* row = row_of(member))
      (*row)[feature == f_class_direct && entities[member].parent_index != cls ? f_class_inherited : feature] = 1;
  }
}

// The first binding to bring a candidate (which has a row) in is the one its import features read.
void CandidatePool::bind(int candidate, int32_t binding) {
  const auto row = static_cast<size_t>(scratch->row[candidate]);
  if (binding_of_row.size() <= row) binding_of_row.resize(row + 1, -1);
  if (binding_of_row[row] < 0) binding_of_row[row] = binding;
}

// Scope tiers: the target's class, its module, what the module imports, and members of visible classes.
void CandidatePool::scope_tiers() {
  const FileRec& file = view.files()[target_file];
  if (target_class >= 0) add_class_members(target_class, f_class_direct);
  for (int i = file.first_entity; i < file.first_entity + file.n_entities; ++i)
    if (entities[i].parent_index < 0)
      if (auto* row = row_of(i)) (*row)[f_module] = 1;
  std::vector<int> visible_classes;
  for (int i = file.first_entity; i < file.first_entity + file.n_entities; ++i)
    if (entities[i].parent_index < 0 && is_type(entities[i].kind)) visible_classes.push_back(i);
  const auto& bindings = facts.bindings(target_file);
  for (int32_t j = 0; j < static_cast<int32_t>(bindings.size()); ++j) {
    const auto& binding = bindings[static_cast<size_t>(j)];
    if (binding.kind == Resolution::Kind::entity) {
      if (auto* row = row_of(binding.entity)) {
        (*row)[f_import] = 1;
        bind(binding.entity, j);
        if (is_type(entities[binding.entity].kind)) visible_classes.push_back(binding.entity);
      }
    } else if (binding.kind == Resolution::Kind::module) {
      const FileRec& module = view.files()[binding.file];
      for (int i = module.first_entity; i < module.first_entity + module.n_entities; ++i) {
        if (entities[i].parent_index >= 0) continue;
        if (auto* row = row_of(i)) {
          (*row)[f_modattr] = 1;
          bind(i, j);
        }
      }
    }
  }
  for (int cls : visible_classes) add_class_members(cls, f_visible_member);
}

// How often each bound name and each entity is used in the target's file outside the hidden body.
void CandidatePool::count_file_usage() {
  file_usage = &facts.usage(target_file);
  // The file's summed uses less those in the hidden body: the pairs and units left with any use.
  const FileUsage& usage = *file_usage;
  bound_name_uses = usage.root_uses;
  std::vector<int> unit_left = usage.unit_uses, pair_left = usage.pair_uses;
  for (const auto& use : usage.uses) {
    if (!(use.scope >= 0 && view.is_within(use.scope, target))) continue;
    --bound_name_uses[static_cast<size_t>(use.root)];
    if (use.unit >= 0)
      --unit_left[static_cast<size_t>(std::lower_bound(usage.units.begin(), usage.units.end(), use.unit) -
                                      usage.units.begin())];
    for (int entity : use.along)
      --pair_left[static_cast<size_t>(
          std::lower_bound(usage.pairs.begin(), usage.pairs.end(), std::make_pair(entity, use.unit)) -
          usage.pairs.begin())];
  }
  n_units = static_cast<int>(std::count_if(unit_left.begin(), unit_left.end(), [](int n) { return n > 0; }));
  entity_units.reserve(usage.pairs.size());
  for (size_t i = 0; i < usage.pairs.size(); ++i)
    if (pair_left[i] > 0) entity_units.push_back(usage.pairs[i]);
  for (size_t i = 0; i < entity_units.size(); ++i) {
    int entity = entity_units[i].first;
    if (i == 0 || entity_units[i - 1].first != entity) {
      scratch->units_stamp[entity] = stamp;
      scratch->units_begin[entity] = static_cast<int32_t>(i);
      used_entities.push_back(entity);
    }
    scratch->units_end[entity] = static_cast<int32_t>(i + 1);
  }
}

// What the target's file uses outside the hidden body joins the pool: in C and C++ most of a function's
// dependencies reach it through headers that the file includes transitively, which no import binding names,
// and the file's other functions use the same API.
void CandidatePool::usage_tier() {
  for (int entity : used_entities) row_of(entity);
}

// BM25 over entities (statistics of the repository without the hidden body): the global top and the top
// among the transitively importable files' top-level entities.
void CandidatePool::bm25_tiers(const Bm25Index& entity_index, const QueryTerms& query_terms,
                               const Bm25Overrides& overrides) {
  // One pass for both tiers and for every candidate's score (candidate_features).
  entity_scores = entity_index.score_all(query_terms, params.bm25, &overrides);
  auto& accessible = scratch->file_stamp;
  for (int f : graph.accessible_files(target_file, &context.hidden)) accessible[f] = stamp;
  std::vector<Ranked> global = top_docs(view, entity_scores, static_cast<size_t>(params.bm25_candidates),
                                        [&](int doc) { return !is_hidden_doc(doc); });
  for (size_t i = 0; i < global.size(); ++i)
    if (auto* row = row_of(global[i].doc)) {
      (*row)[f_global_bm25] = 1;
      (*row)[f_bm25_rank] = 1.0 / (1.0 + static_cast<double>(i));
    }
  const std::vector<int32_t>& top_file = facts.top_level_file();
  for (const auto& ranked : top_docs(
           view, entity_scores, static_cast<size_t>(params.accessible_candidates),
           [&](int doc) { return top_file[doc] >= 0 && accessible[top_file[doc]] == stamp && !is_hidden_doc(doc); }))
    if (auto* row = row_of(ranked.doc)) (*row)[f_accessible] = 1;
}

StructuralCandidates build_candidates(RepositoryFacts& facts, const TargetContext& context, const std::string& query,
                                      const StructuralParams& params) {
  CandidatePool pool(facts, context, params);
  pool.scope_tiers();
  pool.count_file_usage();
  pool.usage_tier();
  auto terms = query_terms(query);
  Bm25Overrides overrides = context.entity_overrides();
  const Engine& engine = facts.engine();
  const Bm25Index& entity_index = engine.entity_bm25();
  pool.bm25_tiers(entity_index, terms, overrides);
  pool.neighbour_votes(engine.visible_bm25(), terms);
  pool.local_votes(engine.visible_bm25(), terms);
  pool.candidate_features(entity_index, terms, overrides, query);
  pool.module_couse_features();
  return std::move(pool.out);
}

}  // namespace repoctx::structural
