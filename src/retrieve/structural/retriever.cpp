// The `structural` retriever: builds a target's candidates and features (candidates.h), ranks them with the
// model file's ranker and keeps the top k. Also the engine-wide facts it shares between requests, their
// warming, and the StructuralFeatures interface the trainer uses.
#include <algorithm>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "retrieve/retriever.h"
#include "retrieve/structural/candidates.h"
#include "retrieve/structural/features.h"
#include "retrieve/structural/file_facts.h"
#include "retrieve/structural/structural.h"
#include "util/error.h"

namespace repoctx {

namespace {

using structural::RepositoryFacts;

// The repository facts (per-file usage, per-function references, repository-wide popularity) are facts of
// the engine's index, not of one query: kept with the engine so that a warm server builds them once. A
// retriever is made per request (api::Index::retrieve), and rebuilding the popularity of every function for
// each request was most of a structural request's time on sympy (docs/BENCHMARKS.md).
struct SharedRepositoryFacts {
  std::once_flag once;
  std::unique_ptr<RepositoryFacts> facts;

  RepositoryFacts& of(const Engine& engine) {
    std::call_once(once, [&] { facts = std::make_unique<RepositoryFacts>(engine); });
    return *facts;
  }
};

// The indices of the first `top_k` candidates (all when top_k <= 0) in rank_entity_hits' order: score,
// then path, line, name.
std::vector<size_t> ranked_order(const RepoView& view, const StructuralCandidates& candidates,
                                 const std::vector<double>& scores, int top_k) {
  std::vector<size_t> order(candidates.entities.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  auto better = [&](size_t a, size_t b) {
    if (scores[a] != scores[b]) return scores[a] > scores[b];
    return entity_before(view, candidates.entities[a], candidates.entities[b]);
  };
  if (top_k > 0 && order.size() > static_cast<size_t>(top_k)) {
    std::partial_sort(order.begin(), order.begin() + top_k, order.end(), better);
    order.resize(static_cast<size_t>(top_k));
  } else {
    std::sort(order.begin(), order.end(), better);
  }
  return order;
}

class StructuralRetriever : public Retriever {
 public:
  StructuralRetriever(const Engine& engine, const RetrieverOptions& options)
      // The ranker is parsed once per process and model file, at the first ranking (structural_ranker_future).
      : engine_(engine),
        facts_(engine.derived<SharedRepositoryFacts>().of(engine)),
        model_(structural_ranker_future(options.model_path)) {
    params_.neighbours = options.neighbours;
    params_.bm25 = options.bm25;
    params_.cascade.keep = options.cascade_keep;
  }
  std::string name() const override { return "structural"; }

  std::vector<Hit> retrieve(const RetrievalQuery& query) override {
    if (!query.target)
      throw Error(ExitCode::usage,
                  "the structural strategy needs --target (it ranks what a function's scope can reach)");
    auto context_ptr = context_of(engine_, query);
    const TargetContext& context = *context_ptr;
    auto candidates = structural::build_candidates(facts_, context, query_text(engine_, query, &context), params_);
    const auto& entities = engine_.view().entities();
    // The pool in one batch.
    std::vector<double> scores = rank_pool(*model_.get(), candidates.features, params_.cascade);
    // The order reads only scores and entities: hits are made for the kept candidates alone (a Hit for each
    // of ~1,000 candidates, with its named features, would be ~13,000 map insertions a request, most of them
    // cut at top k).
    const std::vector<size_t> order = ranked_order(engine_.view(), candidates, scores, query.top_k);
    std::vector<Hit> hits(order.size());
    for (size_t i = 0; i < order.size(); ++i) {
      Hit& hit = hits[i];
      hit.entity = candidates.entities[order[i]];
      hit.file = entities[hit.entity].file;
      hit.start_line = entities[hit.entity].decorated_start_line;
      hit.end_line = entities[hit.entity].end_line;
      hit.score = scores[order[i]];
      const auto& x = candidates.features[order[i]];
      for (size_t f = 0; f < x.size(); ++f)
        if (x[f] != 0) hit.features[std::string(structural::feature_name(f))] = x[f];
    }
    return hits;
  }

 private:
  const Engine& engine_;
  RepositoryFacts& facts_;
  RankerFuture model_;
  StructuralParams params_;
};

}  // namespace

bool warm_structural(const Engine& engine, const std::function<bool()>& stop) {
  shared_structural_ranker("");  // the shipped model, parsed once per process
  return engine.derived<SharedRepositoryFacts>().of(engine).warm(stop);
}

struct StructuralFeatures::Impl : RepositoryFacts {
  using RepositoryFacts::RepositoryFacts;
};
StructuralFeatures::StructuralFeatures(const Engine& engine) : impl_(std::make_unique<Impl>(engine)) {}
StructuralFeatures::~StructuralFeatures() = default;
StructuralCandidates StructuralFeatures::build(const TargetContext& context, const std::string& query,
                                               const StructuralParams& params) {
  return structural::build_candidates(*impl_, context, query, params);
}

std::unique_ptr<Retriever> make_structural(const Engine& engine, const Models&, const RetrieverOptions& options) {
  return std::make_unique<StructuralRetriever>(engine, options);
}

}  // namespace repoctx
