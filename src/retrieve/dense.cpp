// `dense`: REPOCOD's DENSE baseline: entities ranked by the cosine of their document's embedding with
// the query's (sentence-transformers/all-mpnet-base-v2 in ProjAgent; any embedding model here).
// `hybrid`: ProjAgent eq. 6 over every entity: v = 0.5 * norm(BM25) + 0.5 * norm(dense). With a target it is
// fused with the structural ranking by default (hybrid_fusion; "none" = eq. 6 alone).
// Target hiding: the target and what its body defines are never candidates, BM25 statistics are those
// of the repository without the body, and documents of enclosing functions are embedded without it.
#include <unordered_map>

#include "retrieve/dense.h"
#include "retrieve/retriever.h"
#include "util/error.h"

namespace repoctx {

std::vector<double> dense_scores(const Engine& e, LlmBackend& embedder, const std::vector<float>& q,
                                 const TargetContext* ctx, const std::vector<char>* allowed) {
  const auto& vecs = e.entity_vectors(embedder);
  std::vector<double> out(vecs.size(), -2.0);  // -2 = no document (cosines are >= -1)
  std::unordered_map<int, std::vector<float>> masked;
  if (ctx)
    for (const auto& [a, doc] : ctx->ancestor_docs) masked[a] = e.embed_document(embedder, doc);
  for (size_t i = 0; i < vecs.size(); ++i) {
    if (allowed && !(*allowed)[i]) continue;
    if (ctx && ctx->is_hidden_entity(static_cast<int>(i))) continue;
    auto it = masked.find(static_cast<int>(i));
    const std::vector<float>& v = it != masked.end() ? it->second : vecs[i];
    if (v.size() != q.size()) continue;
    double dot = 0;
    for (size_t k = 0; k < v.size(); ++k) dot += static_cast<double>(v[k]) * q[k];
    out[i] = dot;
  }
  return out;
}

namespace {

class DenseRetriever : public Retriever {
 public:
  DenseRetriever(const Engine& e, LlmBackend& embedder, bool hybrid, const RetrieverOptions& o)
      : e_(e), embedder_(embedder), hybrid_(hybrid), o_(o) {}
  std::string name() const override { return hybrid_ ? "hybrid" : "dense"; }

  std::vector<Hit> retrieve(const RetrievalQuery& q) override {
    auto ctx = context_of(e_, q);
    std::string text = query_text(e_, q, ctx.get());
    auto dense = dense_scores(e_, embedder_, e_.embed_query(embedder_, text), ctx.get(), nullptr);
    std::vector<ScoredDoc> scored;
    if (!hybrid_) {
      for (size_t i = 0; i < dense.size(); ++i)
        if (dense[i] > -2.0) scored.push_back({static_cast<int>(i), dense[i]});
    } else {
      Bm25Overrides ov;
      if (ctx) ov = ctx->entity_overrides();
      std::vector<double> bm(dense.size(), 0.0);
      for (const auto& sd : e_.entity_bm25().score_all(query_terms(text), o_.bm25, ctx ? &ov : nullptr))
        bm[sd.doc] = sd.score;
      std::vector<int> ids;
      std::vector<double> b, d;
      for (size_t i = 0; i < dense.size(); ++i) {
        if (dense[i] <= -2.0) continue;
        ids.push_back(static_cast<int>(i));
        b.push_back(bm[i]);
        d.push_back(dense[i]);
      }
      auto v = hybrid_scores(b, d, 0.5);
      for (size_t k = 0; k < ids.size(); ++k) scored.push_back({ids[k], v[k]});
    }
    bool fuse = hybrid_ && q.target && o_.hybrid_fusion != "none";
    std::vector<Hit> hits;
    for (const auto& sd : top_entities(e_, std::move(scored), fuse ? 0 : q.top_k))
      hits.push_back(entity_hit(e_, sd.doc, sd.score));
    if (!fuse) return hits;
    // with a target, the structural ranking fused with eq. 6's (hybrid_fusion).
    RetrievalQuery all = q;
    all.context = ctx;
    all.top_k = 0;
    auto structural = make_structural(e_, {}, o_)->retrieve(all);
    for (auto& h : structural) {
      h.features = {{"structural_score", h.score}};
    }
    for (auto& h : hits) h.features["eq6_score"] = h.score;
    return fuse_rankings(e_, structural, hits, o_.hybrid_fusion, q.top_k);
  }

 private:
  const Engine& e_;
  LlmBackend& embedder_;
  bool hybrid_;
  RetrieverOptions o_;
};

}  // namespace

std::unique_ptr<Retriever> make_dense(const Engine& e, const Models& m, const RetrieverOptions& o) {
  return std::make_unique<DenseRetriever>(e, m.need_embedder("the dense strategy"), false, o);
}
std::unique_ptr<Retriever> make_hybrid(const Engine& e, const Models& m, const RetrieverOptions& o) {
  return std::make_unique<DenseRetriever>(e, m.need_embedder("the hybrid strategy"), true, o);
}

}  // namespace repoctx
