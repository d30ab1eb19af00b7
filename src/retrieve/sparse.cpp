// `sparse`: Okapi BM25 over entity documents (default) or split-aggregate snippets; REPOCOD's SPARSE
// baseline. For a target, the query is its visible signature and docstring and the index statistics are
// those of the repository without the target's body (TargetContext overrides).
#include "retrieve/retriever.h"

namespace repoctx {
namespace {

class SparseRetriever : public Retriever {
 public:
  SparseRetriever(const Engine& e, const RetrieverOptions& o) : e_(e), o_(o) {}
  std::string name() const override { return "sparse"; }

  std::vector<Hit> retrieve(const RetrievalQuery& q) override {
    auto ctx = context_of(e_, q);
    auto terms = query_terms(query_text(e_, q, ctx.get()));
    std::vector<Hit> hits;
    if (o_.corpus == "snippets") {
      Bm25Overrides ov;
      if (ctx) ov = ctx->snippet_overrides();
      auto scored = e_.snippet_bm25().score_all(terms, o_.bm25, ctx ? &ov : nullptr);
      const auto& sn = e_.view().snippets();
      const auto& files = e_.view().files();
      for (const auto& sd : scored) {
        Hit h;
        h.type = Hit::Type::snippet;
        h.snippet = sd.doc;
        h.file = sn[sd.doc].file;
        h.start_line = sn[sd.doc].start_line;
        h.end_line = sn[sd.doc].end_line;
        h.score = sd.score;
        hits.push_back(h);
      }
      auto better = [&](const Hit& a, const Hit& b) {
        if (a.score != b.score) return a.score > b.score;
        if (a.file != b.file) return files[a.file].path < files[b.file].path;
        return a.start_line < b.start_line;
      };
      size_t k = std::min<size_t>(hits.size(), static_cast<size_t>(std::max(q.top_k, 0)));
      std::partial_sort(hits.begin(), hits.begin() + static_cast<long>(k), hits.end(), better);
      hits.resize(k);
      return hits;
    }
    Bm25Overrides ov;
    if (ctx) ov = ctx->entity_overrides();
    auto scored = e_.entity_bm25().score_all(terms, o_.bm25, ctx ? &ov : nullptr);
    auto top = top_entities(e_, std::move(scored), q.top_k, [&](int d) { return ctx && ctx->is_hidden_entity(d); });
    for (const auto& sd : top) hits.push_back(entity_hit(e_, sd.doc, sd.score));
    return hits;
  }

 private:
  const Engine& e_;
  RetrieverOptions o_;
};

}  // namespace

std::unique_ptr<Retriever> make_sparse(const Engine& e, const Models&, const RetrieverOptions& o) {
  return std::make_unique<SparseRetriever>(e, o);
}

}  // namespace repoctx
