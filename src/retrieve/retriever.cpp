#include "retrieve/retriever.h"

#include <algorithm>
#include <unordered_map>

#include "retrieve/locate/locate.h"
#include "retrieve/structural/structural.h"
#include "retrieve/study/strategies.h"
#include "util/error.h"
#include "util/param_table.h"

namespace repoctx {

namespace {

// The context-retrieval study's grid: ReAct agents (BM25 tool or ACR's APIs x CL/TC/SR), and ACR itself.
void add_study_strategies(std::vector<RetrieverInfo>& r) {
  ModelNeeds llm;
  llm.llm = true;
  for (std::string tools : {"bm25", "acr"})
    for (std::string crit : {"cl", "tc", "sr"}) {
      std::string what = tools == "bm25" ? "a BM25 search tool" : "AutoCodeRover's search APIs";
      std::string stop = crit == "cl"   ? "until the context holds 500 tokens (CL)"
                         : crit == "tc" ? "until its first answer without a tool call (TC)"
                                        : "until an answer that a self-reflection call judges sufficient (SR)";
      r.push_back({"react-" + tools + "-" + crit,
                   "context-retrieval study: ReAct agent with " + what + " and add_to_context, " + stop, llm,
                   [tools, crit](const Engine& e, const Models& m, const RetrieverOptions& o) {
                     return make_react_study(e, m, o, tools, crit);
                   },
                   "1 for every line range in the context the agent gathered (listed by file and line)", true});
    }
  r.push_back({"acr",
               "context-retrieval study: AutoCodeRover's two-stage context retrieval (search APIs, bug locations)", llm,
               make_acr, "1 for every line range in the context ACR gathered (listed by file and line)", true});
}

// Retrieval for a target function or a query: REPOCOD's baselines, ProjAgent's strategies, AlignCoder's
// snippets.
std::vector<RetrieverInfo> target_strategies() {
  ModelNeeds none, embedder, optional_embedder, procedural;
  embedder.embedder = true;
  optional_embedder.embedder_optional = true;
  procedural.llm = procedural.hidden = true;
  procedural.embedder_optional = true;  // eq. 6's dense half when configured
  procedural.snippet_embedder = true;
  return {
      {"sparse", "Okapi BM25 over entities (or --corpus snippets); REPOCOD's SPARSE baseline", none, make_sparse,
       "BM25 score"},
      {"same-file", "the target's own file, body hidden; REPOCOD's SAME_FILE baseline", none, make_same_file,
       "scope tier (2 class, 1 module) minus relative line distance; an order, not a similarity"},
      {"dense", "cosine of embeddings (needs an embedding model); REPOCOD's DENSE baseline", embedder, make_dense,
       "cosine similarity of the embeddings"},
      {"hybrid",
       "0.5 norm(BM25) + 0.5 norm(dense) over all entities; ProjAgent eq. 6; with a target, after the structural "
       "ranking (--param hybrid_fusion=structural-first|rrf|none)",
       embedder, make_hybrid,
       "eq. 6: 0.5 min-max(BM25) + 0.5 min-max(cosine), in [0, 1]; fused: 1 / position (structural-first) or "
       "the reciprocal rank fusion score (rrf)"},
      {"imports",
       "symbol pool of the transitively imported files; ProjAgent 4.3; ordered by the structural ranker "
       "(default), or by 0.5 BM25 + 0.5 dense, BM25 alone without an embedder (--param imports_order=bm25)",
       optional_embedder, make_imports,
       "structural order: 1 / position; bm25 order: BM25 within the pool, with an embedder eq. 6 in [0, 1]"},
      {"structural",
       "scope priors + neighbour votes + BM25 ranked by a learned ranker: gradient-boosted trees (shipped) or a "
       "linear model (repoctx)",
       none, make_structural,
       "ranking score of the model (gbdt: sum of the trees' outputs, for candidates past the cascade's 150 the "
       "first 20 trees' sum shifted below those; linear: log-odds); only the order counts"},
      {"procedural",
       "ProjAgent 4.1-4.2: steps, reasoning-subspace projections, seeds, agent, expansion, verification, plan "
       "confirmation (needs an LLM with hidden states)",
       procedural, make_procedural, "debiased projection cosine of the context step to the target step"},
      {"aligncoder-snippets",
       "BM25 over split-aggregate base snippets and dependency snippets; AlignCoder III-A (the coarse retrieval of "
       "III-B for a cursor)",
       none, make_aligncoder_snippets, "BM25 score"},
  };
}

// Completion methods (AlignCoder and its IV-B baselines): they retrieve for a cursor.
std::vector<RetrieverInfo> completion_strategies() {
  ModelNeeds none, optional_embedder, sampler, llm;
  sampler.llm = sampler.embedder_optional = true;
  llm.llm = true;
  optional_embedder.embedder_optional = true;
  return {
      {"cursor-deps",
       "for a cursor: the repository definitions the code before it reaches (imports, module members, an "
       "imported class's methods, the enclosing class's bases, what its references resolve to), ranked by a "
       "logistic score of how recently and where that code mentions them; then aligncoder-snippets' BM25 hits",
       none, make_cursor_deps,
       "definitions: the logistic score (log-odds); the BM25 hits after them: their BM25 score"},
      {"imports-recency",
       "for a cursor: the definitions imported by name before it, the most recently mentioned first; then "
       "aligncoder-snippets' BM25 hits (the plain heuristic cursor-deps is measured against)",
       none, make_imports_recency,
       "definitions: 1 + 1 / (1 + lines since the last mention), 0 when unmentioned; then BM25 scores"},
      {"aligncoder",
       "AlignCoder: enhanced query (unfinished code + sampled candidates) re-ranked by the trained AlignRetriever "
       "over base + dependency snippets (needs an LLM to sample; candidates=none|oracle do not)",
       sampler, make_aligncoder, "the AlignRetriever encoder's similarity of the enhanced query to the snippet"},
      {"rlcoder", "RLCoder: BM25 candidates of the unfinished code re-ranked by a trained retriever", optional_embedder,
       make_rlcoder, "the trained retriever's similarity of the unfinished code to the snippet"},
      {"reacc",
       "ReACC: hybrid 0.5 norm(BM25) + 0.5 norm(dense) for the unfinished code; without an embedding model its "
       "BM25 half only (the trace says so)",
       optional_embedder, make_reacc,
       "0.5 min-max(BM25) + 0.5 min-max(cosine), in [0, 1]; BM25's score without an embedding model"},
      {"repocoder",
       "RepoCoder: iterative retrieval and generation over sliding windows of the other files (Jaccard index of "
       "token sets), the completion appended to the query (needs an LLM)",
       llm, make_repocoder, "Jaccard index of the last round's query and the window's token sets"},
      {"in-file", "BM25 over the completed file's own snippets above what the prompt shows", none, make_in_file,
       "BM25 score"},
      {"no-retrieval", "no context: the unfinished code alone", none, make_no_retrieval, "(no hits)"},
  };
}

// The context-retrieval study's BM25 baseline, and the localization of a request.
std::vector<RetrieverInfo> request_strategies() {
  ModelNeeds none;
  return {
      {"study-bm25",
       "context-retrieval study baseline: one BM25 request over 512-character chunks, taken until the context "
       "holds 500 tokens (--query: the request)",
       none, make_study_bm25, "BM25 score of the chunk", true},
      // Localization of a request: a file ranking, then an entity ranking.
      {"files-bm25",
       "BM25 over whole files (path + content) for a request; entities: entity BM25 within the 5 best files", none,
       make_files_bm25, "BM25 score of the file / of the entity", true},
      {"locate",
       "request localization without a model: paths, module and identifier names, stack-trace frames, string "
       "literals and BM25, combined by trained logistic models (models/locate.json); test files ranked last",
       none, make_locate, "logit of the file model / of the entity model", true},
  };
}

}  // namespace

const std::vector<RetrieverInfo>& retriever_registry() {
  static const std::vector<RetrieverInfo> reg = [] {
    std::vector<RetrieverInfo> r = target_strategies();
    for (auto& more : {completion_strategies(), request_strategies()}) r.insert(r.end(), more.begin(), more.end());
    add_study_strategies(r);
    return r;
  }();
  return reg;
}

const RetrieverInfo& retriever_info(const std::string& name) {
  for (const auto& r : retriever_registry())
    if (r.name == name) return r;
  std::string names;
  for (const auto& r : retriever_registry()) names += (names.empty() ? "" : ", ") + r.name;
  throw Error(ExitCode::usage, "unknown strategy '" + name + "' (available: " + names + ")");
}

namespace {
// The retriever's own parameters (the strategies' groups keep their tables beside their structs).
const ParamTable<RetrieverOptions>& retriever_param_fields() {
  static const ParamTable<RetrieverOptions> f = {
      REPOCTX_PARAM(RetrieverOptions, "imports_order", imports_order,
                    .meaning = "how `imports` orders its pool for a target: structural (the structural ranker's "
                               "order, then the pool's other symbols in the paper's order) or bm25 (the paper's: "
                               "BM25, eq. 6 with an embedder)",
                    .choices = "structural|bm25", .source = "repoctx (ProjAgent 4.3: bm25)"),
      REPOCTX_PARAM(RetrieverOptions, "hybrid_fusion", hybrid_fusion,
                    .meaning = "how `hybrid` ranks for a target: structural-first, rrf (reciprocal rank fusion, "
                               "k = 60) or none (eq. 6 alone, ProjAgent's)",
                    .choices = "structural-first|rrf|none", .source = "repoctx (ProjAgent 4.3: none)"),
      REPOCTX_PARAM(RetrieverOptions, "structural_cascade_keep", cascade_keep,
                    .meaning = "structural: candidates the cascade's first trees keep for the full model (0: no "
                               "cascade)",
                    .min = 0, .max = 1000000, .source = "repoctx"),
  };
  return f;
}
}  // namespace

void apply_retriever_param(RetrieverOptions& o, const std::string& name, const std::string& value) {
  nlohmann::json v = nlohmann::json::parse(value, nullptr, false);
  if (v.is_discarded()) v = value;
  if (has_param(retriever_param_fields(), name))
    apply_params(o, nlohmann::json{{name, v}}, retriever_param_fields(), "parameter");
  else if (StudyParams::has(name))
    o.study.apply(nlohmann::json{{name, v}});
  else if (CompletionParams::has(name))
    o.completion.apply(nlohmann::json{{name, v}});
  else if (ProceduralParams::has(name))
    o.procedural.apply(nlohmann::json{{name, v}});
  else {
    std::vector<std::string> names;
    for (const auto& p : strategy_parameters()) names.push_back(p["name"]);
    throw_unknown_param(name, "parameter", names);
  }
}

nlohmann::json strategy_parameters() {
  nlohmann::json all = params_catalogue(retriever_param_fields(), "retriever");
  for (const nlohmann::json& group :
       {StudyParams::catalogue(), CompletionParams::catalogue(), ProceduralParams::catalogue()})
    for (const auto& p : group) all.push_back(p);
  return all;
}

ModelNeeds retriever_needs(const std::string& name, const RetrieverOptions& opt) {
  ModelNeeds n = retriever_info(name).needs;
  // AlignCoder samples its candidates with the LLM only when they are not given (oracle) or not wanted.
  if (name == "aligncoder" && opt.completion.candidates != "sample") n.llm = false;
  return n;
}

std::future<void> preload_ranker(const std::string& name, const RetrieverOptions& opt) {
  const bool ranks = name == "structural" || (name == "imports" && opt.imports_order == "structural") ||
                     (name == "hybrid" && opt.hybrid_fusion != "none");
  if (!ranks) return {};
  return std::async(std::launch::async, [ranker = structural_ranker_future(opt.model_path)] {
    ranker.wait();  // a load error stays in the future for the retriever to report
  });
}

std::unique_ptr<Retriever> make_retriever(const std::string& name, const Engine& engine, const Models& models,
                                          const RetrieverOptions& opt) {
  const RetrieverInfo& info = retriever_info(name);
  ModelNeeds needs = retriever_needs(name, opt);
  std::string who = "the " + name + " strategy";
  if (needs.llm) models.need_llm(who);
  if (needs.embedder) models.need_embedder(who);
  if (needs.hidden) models.need_hidden(who);
  return info.make(engine, models, opt);
}

RetrievalResult run_filtered(Retriever& r, RetrievalQuery q, const std::function<bool(const Hit&)>& drop) {
  const int want = q.top_k;
  for (int fetch = want > 0 ? want * 4 + 50 : 0;; fetch *= 4) {
    q.top_k = fetch;
    RetrievalResult res = r.run(q);
    size_t got = res.hits.size();
    std::vector<Hit> kept;
    std::vector<size_t> new_index(got, static_cast<size_t>(-1));
    for (size_t i = 0; i < got && (want <= 0 || static_cast<int>(kept.size()) < want); ++i)
      if (!drop(res.hits[i])) {
        new_index[i] = kept.size();
        kept.push_back(std::move(res.hits[i]));
      }
    // Enough kept, everything fetched, or the strategy has no more to give.
    if (want <= 0 || static_cast<int>(kept.size()) >= want || static_cast<int>(got) < fetch || fetch == 0) {
      for (auto& st : res.plan) {
        std::vector<size_t> h;
        for (size_t i : st.hits)
          if (i < got && new_index[i] != static_cast<size_t>(-1)) h.push_back(new_index[i]);
        st.hits = std::move(h);
      }
      res.hits = std::move(kept);
      return res;
    }
  }
}

RetrievalResult Retriever::run(const RetrievalQuery& q) {
  RetrievalResult r;
  r.hits = retrieve(q);
  return r;
}

std::shared_ptr<const TargetContext> context_of(const Engine& e, const RetrievalQuery& q) {
  if (q.context) return q.context;
  if (!q.target) return nullptr;
  return std::make_shared<const TargetContext>(e.make_context(*q.target));
}

std::string query_text(const Engine& e, const RetrievalQuery& q, const TargetContext* ctx) {
  if (!q.text.empty()) return q.text;
  if (ctx) return ctx->visible_text;
  (void)e;
  throw Error(ExitCode::usage, "a query needs --target or --query text");
}

std::vector<Hit> fuse_rankings(const Engine& e, const std::vector<Hit>& first, const std::vector<Hit>& second,
                               const std::string& how, int top_k) {
  if (how != "structural-first" && how != "rrf")
    throw Error(ExitCode::usage, "unknown rank fusion '" + how + "' (structural-first or rrf)");
  std::vector<Hit> out;
  std::unordered_map<int, size_t> at;  // entity -> index in out
  for (const auto* ranking : {&first, &second}) {
    const char* rank_name = ranking == &first ? "first_rank" : "second_rank";
    for (size_t r = 0; r < ranking->size(); ++r) {
      const Hit& h = (*ranking)[r];
      auto [it, fresh] = at.emplace(h.entity, out.size());
      if (fresh) {
        out.push_back(h);
        out.back().score = 0;
      } else {
        for (const auto& [k, v] : h.features) out[it->second].features.emplace(k, v);
      }
      Hit& o = out[it->second];
      o.features[rank_name] = static_cast<double>(r + 1);
      if (how == "rrf") o.score += 1.0 / (60.0 + static_cast<double>(r + 1));
    }
  }
  if (how == "structural-first") {
    // `out` is already first's order followed by second's extras.
    for (size_t i = 0; i < out.size(); ++i) out[i].score = 1.0 / static_cast<double>(i + 1);
    if (top_k > 0 && out.size() > static_cast<size_t>(top_k)) out.resize(static_cast<size_t>(top_k));
    return out;
  }
  rank_entity_hits(e, out, top_k);
  return out;
}

void rank_entity_hits(const Engine& e, std::vector<Hit>& hits, int top_k) {
  auto better = [&](const Hit& a, const Hit& b) {
    if (a.score != b.score) return a.score > b.score;
    return entity_before(e.view(), a.entity, b.entity);
  };
  if (top_k > 0 && hits.size() > static_cast<size_t>(top_k)) {
    std::partial_sort(hits.begin(), hits.begin() + top_k, hits.end(), better);
    hits.resize(static_cast<size_t>(top_k));
  } else {
    std::sort(hits.begin(), hits.end(), better);
  }
}

std::vector<ScoredDoc> best_scored(std::vector<ScoredDoc> scored, int top_k,
                                   const std::function<bool(int, int)>& before) {
  auto better = [&](const ScoredDoc& a, const ScoredDoc& b) {
    if (a.score != b.score) return a.score > b.score;
    return before(a.doc, b.doc);
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

std::vector<ScoredDoc> top_entities(const Engine& e, std::vector<ScoredDoc> scored, int top_k,
                                    const std::function<bool(int)>& skip) {
  if (skip)
    scored.erase(std::remove_if(scored.begin(), scored.end(), [&](const ScoredDoc& d) { return skip(d.doc); }),
                 scored.end());
  return best_scored(std::move(scored), top_k, [&](int a, int b) { return entity_before(e.view(), a, b); });
}

const std::string& hit_path(const RepoView& v, const Hit& h) {
  return h.file >= 0 ? v.files()[static_cast<size_t>(h.file)].path : h.path;
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
