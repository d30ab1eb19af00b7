#include "retrieve/retriever.h"

#include <algorithm>

#include "util/error.h"

namespace repoctx {

const std::vector<RetrieverInfo>& retriever_registry() {
  static const std::vector<RetrieverInfo> reg = {
      {"sparse", "Okapi BM25 over entities (or --corpus snippets); REPOCOD's SPARSE baseline", make_sparse},
      {"same-file", "the target's own file, body hidden; REPOCOD's SAME_FILE baseline", make_same_file},
      {"dense", "cosine of embeddings (needs an embedding model); REPOCOD's DENSE baseline", make_dense},
      {"hybrid", "0.5 norm(BM25) + 0.5 norm(dense) over all entities; ProjAgent eq. 6", make_hybrid},
      {"imports",
       "symbol pool of the transitively imported files ranked by 0.5 BM25 + 0.5 dense (BM25 alone without an "
       "embedder); ProjAgent 4.3",
       make_imports},
      {"structural", "scope priors + neighbour votes + BM25 ranked by a logistic model (repoctx)", make_structural},
      {"procedural",
       "ProjAgent 4.1-4.2: steps, reasoning-subspace projections, seeds, agent, expansion, verification, plan "
       "confirmation (needs an LLM with hidden states)",
       make_procedural},
      {"aligncoder-snippets", "BM25 over split-aggregate base snippets and dependency snippets; AlignCoder III-A",
       make_aligncoder_snippets},
  };
  return reg;
}

std::unique_ptr<Retriever> make_retriever(const std::string& name, const Engine& engine, const RetrieverOptions& opt) {
  for (const auto& r : retriever_registry())
    if (r.name == name) return r.make(engine, opt);
  std::string names;
  for (const auto& r : retriever_registry()) names += (names.empty() ? "" : ", ") + r.name;
  throw Error(ExitCode::usage, "unknown strategy '" + name + "' (available: " + names + ")");
}

std::string query_text(const Engine& e, const RetrievalQuery& q, const TargetContext* ctx) {
  if (!q.text.empty()) return q.text;
  if (ctx) return ctx->visible_text;
  (void)e;
  throw Error(ExitCode::usage, "a query needs --target or --query text");
}

void rank_entity_hits(const Engine& e, std::vector<Hit>& hits, int top_k) {
  const auto& ents = e.view().entities();
  const auto& files = e.view().files();
  auto better = [&](const Hit& a, const Hit& b) {
    if (a.score != b.score) return a.score > b.score;
    const auto& ea = ents[a.entity];
    const auto& eb = ents[b.entity];
    if (ea.file != eb.file) return files[ea.file].path < files[eb.file].path;
    if (ea.start_line != eb.start_line) return ea.start_line < eb.start_line;
    return ea.qualname < eb.qualname;
  };
  if (top_k > 0 && hits.size() > static_cast<size_t>(top_k)) {
    std::partial_sort(hits.begin(), hits.begin() + top_k, hits.end(), better);
    hits.resize(static_cast<size_t>(top_k));
  } else {
    std::sort(hits.begin(), hits.end(), better);
  }
}

std::vector<ScoredDoc> top_entities(const Engine& e, std::vector<ScoredDoc> scored, int top_k,
                                    const std::function<bool(int)>& skip) {
  if (skip)
    scored.erase(std::remove_if(scored.begin(), scored.end(), [&](const ScoredDoc& d) { return skip(d.doc); }),
                 scored.end());
  const auto& ents = e.view().entities();
  const auto& files = e.view().files();
  auto better = [&](const ScoredDoc& a, const ScoredDoc& b) {
    if (a.score != b.score) return a.score > b.score;
    const auto& ea = ents[a.doc];
    const auto& eb = ents[b.doc];
    if (ea.file != eb.file) return files[ea.file].path < files[eb.file].path;
    if (ea.start_line != eb.start_line) return ea.start_line < eb.start_line;
    return ea.qualname < eb.qualname;
  };
  size_t k = top_k > 0 ? static_cast<size_t>(top_k) : scored.size();
  if (scored.size() > k) {
    // Everything scoring at least the k-th best score (ties at the boundary included), then the full order.
    std::nth_element(scored.begin(), scored.begin() + static_cast<long>(k - 1), scored.end(),
                     [](const ScoredDoc& a, const ScoredDoc& b) { return a.score > b.score; });
    double kth = scored[k - 1].score;
    auto mid = std::partition(scored.begin(), scored.end(), [&](const ScoredDoc& d) { return d.score >= kth; });
    scored.erase(mid, scored.end());
  }
  std::sort(scored.begin(), scored.end(), better);
  if (scored.size() > k) scored.resize(k);
  return scored;
}

Hit entity_hit(const Engine& e, int entity, double score) {
  const auto& en = e.view().entities()[entity];
  Hit h;
  h.entity = entity;
  h.file = en.file;
  h.start_line = en.decorated_start_line;
  h.end_line = en.end_line;
  h.score = score;
  return h;
}

}  // namespace repoctx
