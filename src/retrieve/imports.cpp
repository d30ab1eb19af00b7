// `imports`: ProjAgent 4.3's semantic pool. From the target file, imports are followed transitively to
// every accessible repository file; the pool holds their functions, classes and module-level constants
// (the target file's own included), ranked by BM25 for the query. With a dense scorer the hybrid
// v = 0.5 * norm(BM25) + 0.5 * norm(dense) of eq. 6 applies (see retrieve/bm25.h hybrid_scores).
#include <unordered_set>

#include "retrieve/dense.h"
#include "retrieve/retriever.h"
#include "util/error.h"

namespace repoctx {
namespace {

class ImportsRetriever : public Retriever {
 public:
  ImportsRetriever(const Engine& e, const Models& m, const RetrieverOptions& o)
      : e_(e), embedder_(o.bm25_only ? nullptr : m.embedder), o_(o) {}
  std::string name() const override { return "imports"; }

  std::vector<Hit> retrieve(const RetrievalQuery& q) override {
    if (!q.target)
      throw Error(ExitCode::usage, "the imports strategy needs --target (its file's imports are the start)");
    auto ctxp = context_of(e_, q);
    const TargetContext& ctx = *ctxp;
    auto files = e_.graph().accessible_files(q.target->file, &ctx.hidden);
    const auto& ents = e_.view().entities();
    std::vector<char> allowed(ents.size(), 0);
    std::vector<char> benchmark(ents.size(), 0);  // the benchmark's other targets: out of the pool
    for (int t : q.benchmark_targets)
      if (t >= 0 && static_cast<size_t>(t) < ents.size()) benchmark[t] = 1;
    size_t pool = 0;
    for (int f : files) {
      const FileRec& fr = e_.view().files()[f];
      for (int i = fr.first_entity; i < fr.first_entity + fr.n_entities; ++i) {
        const EntityRec& e = ents[i];
        bool in_pool =
            e.parent_index < 0 && (e.kind == EntityKind::function || is_type(e.kind) || e.kind == EntityKind::variable);
        if (o_.pool_methods && e.kind == EntityKind::method && e.parent_index >= 0 &&
            ents[e.parent_index].parent_index < 0)
          in_pool = true;
        if (in_pool && !ctx.is_hidden_entity(i) && !benchmark[i]) {
          allowed[i] = 1;
          ++pool;
        }
      }
    }
    std::string text = query_text(e_, q, &ctx);
    auto terms = query_terms(text);
    Bm25Overrides ov = ctx.entity_overrides();
    auto scored = e_.entity_bm25().score_all(terms, o_.bm25, &ov, &allowed);
    if (embedder_) {
      // Eq. 6 over the pool: both scores min-max normalised over the pool's symbols.
      auto dense = dense_scores(e_, *embedder_, e_.embed_query(*embedder_, text), &ctx, &allowed);
      std::vector<double> bm(ents.size(), 0.0);
      for (const auto& sd : scored) bm[sd.doc] = sd.score;
      std::vector<int> ids;
      std::vector<double> b, d;
      for (size_t i = 0; i < ents.size(); ++i) {
        if (!allowed[i] || dense[i] <= -2.0) continue;
        ids.push_back(static_cast<int>(i));
        b.push_back(bm[i]);
        d.push_back(dense[i]);
      }
      auto v = hybrid_scores(b, d, 0.5);
      scored.clear();
      for (size_t k = 0; k < ids.size(); ++k) scored.push_back({ids[k], v[k]});
    }
    std::vector<Hit> hits;
    for (const auto& sd : top_entities(e_, std::move(scored), q.top_k)) {
      Hit h = entity_hit(e_, sd.doc, sd.score);
      h.features["pool_size"] = static_cast<double>(pool);
      h.features["accessible_files"] = static_cast<double>(files.size());
      hits.push_back(std::move(h));
    }
    return hits;
  }

 private:
  const Engine& e_;
  LlmBackend* embedder_;  // null: BM25 alone
  RetrieverOptions o_;
};

}  // namespace

std::unique_ptr<Retriever> make_imports(const Engine& e, const Models& m, const RetrieverOptions& o) {
  return std::make_unique<ImportsRetriever>(e, m, o);
}

}  // namespace repoctx
