// Neighbour votes: functions whose signature and docstring are like the target's vote for the entities
// they reference, weighted by that similarity relative to the most similar one.
#include <vector>

#include "retrieve/structural/candidates.h"
#include "retrieve/structural/features.h"
#include "retrieve/structural/ranked_docs.h"

namespace repoctx::structural {

// What `function` references, as this request may see it: a function around the hidden target must not
// see its body, so it is resolved with the body hidden.
std::vector<int> CandidatePool::refs_seen_from(int function) const {
  return view.is_within(target, function) ? graph.referenced_entities(function, &context.hidden)
                                          : facts.refs_of(function);
}

// Neighbours: the functions whose signature and docstring are most like the target's vote for what
// they reference.
void CandidatePool::neighbour_votes(const Bm25Index& visible, const QueryTerms& query_terms) {
  Bm25Overrides overrides;
  overrides.removed = context.removed_entities;
  const auto keep = [&](int doc) { return !is_hidden_doc(doc); };
  const auto wanted = static_cast<size_t>(params.neighbours);
  std::vector<Ranked> neighbours =
      top_docs(view, visible.top_k(query_terms, params.bm25, &overrides, wanted, keep), wanted, keep);
  n_neighbours = static_cast<int>(neighbours.size());
  double top = neighbours.empty() ? 1.0 : neighbours.front().score;
  for (size_t i = 0; i < neighbours.size(); ++i) {
    int neighbour = neighbours[i].doc;
    const std::vector<int> refs = refs_seen_from(neighbour);
    double weight = top > 0 ? neighbours[i].score / top : 0;
    bool same_file = entities[neighbour].file == target_file,
         same_class = target_class >= 0 && graph.enclosing_class(neighbour) == target_class;
    for (int referenced : refs) {
      if (referenced == target) continue;
      auto& vote = scratch->vote[referenced];
      if (scratch->vote_stamp[referenced] != stamp) {
        scratch->vote_stamp[referenced] = stamp;
        vote = {};
      }
      vote.all += weight;
      if (same_file) vote.same_file += weight;
      if (same_class) vote.same_class += weight;
      vote.voters += 1;
      if (i < 5) vote.top5 += weight;
      if (auto* row = row_of(referenced)) (*row)[f_neighbour] = 1;
    }
  }
}

// Same-file neighbours: the callables of the target's file, weighted by how like the target's signature
// and docstring theirs are (BM25 under the same statistics as the global neighbours, relative to the
// most similar one), the 10 most similar vote for what they reference. Their votes only describe
// candidates the other families found (the pool stays as it is).
void CandidatePool::local_votes(const Bm25Index& visible, const QueryTerms& query_terms) {
  Bm25Overrides overrides;
  overrides.removed = context.removed_entities;
  const auto prepared = visible.prepare(query_terms, params.bm25, &overrides);
  const FileRec& file = view.files()[target_file];
  std::vector<Ranked> similar;
  for (int i = file.first_entity; i < file.first_entity + file.n_entities; ++i) {
    if (i == target || context.is_hidden_entity(i) || !is_callable(entities[i].kind) || !visible.has_doc(i)) continue;
    double score = Bm25Index::score_prepared(prepared, visible.doc_terms(i));
    if (score > 0) similar.push_back({i, score});
  }
  sort_docs(view, similar, 10);
  const double top = similar.empty() ? 1.0 : similar.front().score;
  for (const auto& neighbour : similar) {
    for (int referenced : refs_seen_from(neighbour.doc))
      if (referenced != target) {
        if (scratch->local_stamp[referenced] != stamp) {
          scratch->local_stamp[referenced] = stamp;
          scratch->local_vote[referenced] = 0;
        }
        scratch->local_vote[referenced] += neighbour.score / top;
      }
  }
}

}  // namespace repoctx::structural
