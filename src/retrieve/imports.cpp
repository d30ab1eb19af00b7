// `imports`: ProjAgent 4.3's semantic pool. From the target file, imports are followed transitively to
// every accessible repository file; the pool holds their functions, classes and module-level constants
// (the target file's own included), ranked by BM25 for the query. With a dense scorer the hybrid
// v = 0.5 * norm(BM25) + 0.5 * norm(dense) of eq. 6 applies (see retrieve/bm25.h hybrid_scores).
// By default the structural ranker orders the pool instead (imports_order=structural; the paper's
// order with imports_order=bm25): the pool, and so what the strategy can recall, stays the paper's.
#include <unordered_set>

#include "retrieve/dense.h"
#include "retrieve/retriever.h"
#include "util/error.h"

namespace repoctx {
namespace {

class ImportsRetriever : public Retriever {
 public:
  ImportsRetriever(const Engine& e, const Models& m, const RetrieverOptions& o)
      : e_(e), embedder_(o.bm25_only ? nullptr : m.embedder), o_(o) {
    if (o.imports_order == "structural") structural_ = make_structural(e, m, o);
  }
  std::string name() const override { return "imports"; }

  std::vector<Hit> retrieve(const RetrievalQuery& q) override {
    if (!q.target)
      throw Error(ExitCode::usage, "the imports strategy needs --target (its file's imports are the start)");
    auto ctxp = context_of(e_, q);
    const TargetContext& ctx = *ctxp;
    auto files = e_.graph().accessible_files(q.target->file, &ctx.hidden);
    const auto& ents = e_.view().entities();
    std::vector<char> allowed(ents.size(), 0);
    std::vector<char> withheld(ents.size(), 0);  // out of the pool (RetrievalQuery::withheld)
    for (int t : q.withheld)
      if (t >= 0 && static_cast<size_t>(t) < ents.size()) withheld[t] = 1;
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
        if (in_pool && !ctx.is_hidden_entity(i) && !withheld[i]) {
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
    for (const auto& sd : top_entities(e_, std::move(scored), structural_ ? 0 : q.top_k)) {
      Hit h = entity_hit(e_, sd.doc, sd.score);
      h.features["pool_size"] = static_cast<double>(pool);
      h.features["accessible_files"] = static_cast<double>(files.size());
      hits.push_back(std::move(h));
    }
    if (!structural_) return hits;
    // The structural order also ranks pool symbols BM25 scores 0, which the paper's order never ranks.
    hits = structural_order(q, ctxp, allowed, hits);
    for (auto& h : hits) {
      h.features["pool_size"] = static_cast<double>(pool);
      h.features["accessible_files"] = static_cast<double>(files.size());
    }
    return hits;
  }

 private:
  // imports_order=structural: the same pool, reordered: the pool symbols the structural ranker
  // scores, in its order, then the pool's other symbols in the paper's order (`paper`, the whole pool).
  std::vector<Hit> structural_order(const RetrievalQuery& q, const std::shared_ptr<const TargetContext>& ctx,
                                    const std::vector<char>& allowed, const std::vector<Hit>& paper) {
    RetrievalQuery all = q;
    all.context = ctx;
    all.top_k = 0;
    std::vector<Hit> ranked;
    for (auto& h : structural_->retrieve(all))
      if (h.entity >= 0 && allowed[h.entity]) {
        Hit r = entity_hit(e_, h.entity, h.score);
        r.features["structural_score"] = h.score;
        ranked.push_back(std::move(r));
      }
    return fuse_rankings(e_, ranked, paper, "structural-first", q.top_k);
  }

  const Engine& e_;
  LlmBackend* embedder_;  // null: BM25 alone
  RetrieverOptions o_;
  std::unique_ptr<Retriever> structural_;  // null: the paper's order
};

}  // namespace

std::unique_ptr<Retriever> make_imports(const Engine& e, const Models& m, const RetrieverOptions& o) {
  return std::make_unique<ImportsRetriever>(e, m, o);
}

}  // namespace repoctx
