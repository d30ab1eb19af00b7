// One interface for every retrieval strategy, selected by name (like FAISS's index factory):
//   make_retriever("sparse", engine, models, opts)->retrieve(query)
// Strategies live one per file in this folder; retriever_registry() lists them with the model roles each
// needs (llm/models.h), so that callers load only those.
#pragma once

#include <functional>
#include <future>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/metered.h"
#include "llm/models.h"
#include "retrieve/aligncoder/params.h"
#include "retrieve/engine.h"
#include "retrieve/procedural/types.h"
#include "retrieve/study/params.h"

namespace repoctx {

struct CursorContext;  // retrieve/aligncoder/codebase.h

struct RetrievalQuery {
  std::optional<TargetRef> target;  // retrieval for this function, its body hidden
  std::string text;                 // free text; empty = the target's visible signature and docstring
  int top_k = 20;
  // The target's hidden-body context, built once by the caller when it sends several queries for one
  // target (generation: one per step); null = built by the strategy when it needs it.
  std::shared_ptr<const TargetContext> context;
  // Entity indices of functions withheld from context: functions that are not written yet, beside the target
  // (an assistant writing several stubs of a plan; a benchmark's other targets, which `evaluate` passes for
  // every task of the repository). ProjAgent's pools never hold them: procedural (ProjAgent 4.1: not
  // decomposed, not accepted from the agent, so never expanded; they also rank their files first in function
  // selection) and semantic (`imports`). The REPOCOD baselines ignore them: REPOCOD hides only the task's own
  // body.
  std::vector<int> withheld;
  // A completion cursor (AlignCoder and the IV-B baselines): the unfinished code is the file before it,
  // and the text after it is absent (make_cursor_context).
  std::shared_ptr<const CursorContext> cursor;
  // Completions the caller already has for the cursor (its own model's drafts; in an evaluation, the ground
  // truth as an LLM-free upper bound): an enhanced query (AlignCoder III-B) uses them instead of sampling.
  std::vector<std::string> drafts;
};

// The context of q's target: q.context when set, else built now; null without a target.
std::shared_ptr<const TargetContext> context_of(const Engine& e, const RetrievalQuery& q);

struct Hit {
  enum class Type { entity, snippet, file };
  Type type = Type::entity;
  int file = -1;
  std::string path;  // a hit in a repository file the index does not hold (file = -1): its path
  int entity = -1;   // Type::entity
  int snippet = -1;  // Type::snippet (-1 for snippets made at query time, e.g. dependency snippets)
  int start_line = 0, end_line = 0;
  double score = 0;
  std::string label;        // e.g. "dependency" for AlignCoder dependency snippets
  std::string text;         // filled when the strategy produces text that is not a span of an indexed file
  std::string description;  // what the strategy says the hit does (procedural: the context step's description)
  std::map<std::string, double> features;  // why it ranked (strategy specific)
};

struct RetrieverOptions {
  Bm25Params bm25;
  std::string corpus = "entities";  // sparse: "entities" or "snippets"
  bool pool_methods = false;        // imports: also rank methods of pool classes (the paper's pool has none)
  bool bm25_only = false;           // imports: ignore the embedder even when one is set
  // how `imports` orders its pool for a target (--param imports_order=): "structural" (the
  // structural ranker's order, then the pool's other symbols in the paper's order) or "bm25" (the paper's:
  // BM25, eq. 6 with an embedder). The pool is the same either way.
  std::string imports_order = "structural";
  // how `hybrid` ranks for a target (--param hybrid_fusion=): "structural-first" (the structural
  // ranking, then eq. 6's extras), "rrf" (reciprocal rank fusion of the two rankings, k = 60) or "none"
  // (eq. 6 alone, ProjAgent's). Without a target hybrid is eq. 6 whatever this says.
  std::string hybrid_fusion = "structural-first";
  std::string model_path;       // structural: feature weights (JSON); empty = the shipped default
  std::string locate_model;     // locate: model file (JSON); empty = the built-in models/locate.json
  int neighbours = 20;          // structural: similar functions whose references vote
  int cascade_keep = 150;       // structural: RankCascade::keep (param structural_cascade_keep; 0 = none)
  ProceduralParams procedural;  // procedural: every threshold and budget (paper defaults)
  std::string trace_path;       // procedural: write the JSON trace of every stage here
  StudyParams study;            // the context-retrieval study's strategies: every constant
  CompletionParams completion;  // aligncoder, reacc, rlcoder, repocoder, in-file
};

// Sets one strategy parameter by name: imports_order and hybrid_fusion, the study's constants, then
// completion's and procedural's (the CLI's --param NAME=VALUE and the API's params both come here, so every
// entry point accepts the same names). VALUE is read as JSON when it parses (numbers, booleans), else as a
// string. Throws Error(usage) naming the valid values, or the valid parameters for an unknown name.
void apply_retriever_param(RetrieverOptions& o, const std::string& name, const std::string& value);
// Every strategy parameter apply_retriever_param takes, as catalogue entries (util/param_table.h: name,
// group, type, default, meaning, minimum/maximum or choices, source); the names are unique across groups.
nlohmann::json strategy_parameters();

// A step of the plan a strategy made for the target (procedural: the target's decomposition), with the
// hits that serve it (indices into RetrievalResult::hits).
struct PlanStep {
  int id = 0;
  std::string description;
  bool confirmed = false;  // plan confirmation judged its contexts sufficient
  std::vector<size_t> hits;
};

// Everything a strategy returns: the ranked hits and, for strategies that plan or call models, the plan,
// a trace a person can read, and the LLM work done by stage.
struct RetrievalResult {
  std::vector<Hit> hits;
  std::vector<PlanStep> plan;
  nlohmann::json trace;  // null when the strategy keeps none
  LlmUsage usage;
  std::string empty_reason;  // why there is no hit, when the strategy can say ("no grounded context step: ...")
};

class Retriever {
 public:
  virtual ~Retriever() = default;
  virtual std::string name() const = 0;
  virtual std::vector<Hit> retrieve(const RetrievalQuery& q) = 0;
  // The full result; strategies with a plan or a trace override it (the default wraps retrieve()).
  virtual RetrievalResult run(const RetrievalQuery& q);
};

using RetrieverFactory =
    std::function<std::unique_ptr<Retriever>(const Engine&, const Models&, const RetrieverOptions&)>;
struct RetrieverInfo {
  std::string name;
  std::string description;
  ModelNeeds needs;
  RetrieverFactory make;
  std::string score;       // what a hit's score means (scores of different strategies are not comparable)
  bool localizes = false;  // a context-retrieval study strategy (`repoctx localize`, the API's localize)
};

// Throws Error(usage) listing the valid names when `name` is unknown, and naming the missing model when
// the strategy needs one `models` lacks.
std::unique_ptr<Retriever> make_retriever(const std::string& name, const Engine& engine, const Models& models = {},
                                          const RetrieverOptions& opt = {});
const RetrieverInfo& retriever_info(const std::string& name);  // throws like make_retriever

// Runs `q` and drops the hits `drop` rejects, fetching more than top_k so that top_k remain when the
// strategy had them (e.g. `retrieve --exclude-tests`).
RetrievalResult run_filtered(Retriever& r, RetrievalQuery q, const std::function<bool(const Hit&)>& drop);
// The roles a strategy needs with these options (aligncoder needs no LLM when its candidates are given).
ModelNeeds retriever_needs(const std::string& name, const RetrieverOptions& opt);
// Starts loading the structural ranker that `name` ranks with (structural; imports and hybrid ordered by it)
// on another thread, so that a cold process parses and checks the model while it opens the index and builds
// the candidates; an invalid future when `name` does not use it. Keep the future until the retrieval is done:
// its destructor waits for the load (a process must not exit while XGBoost loads). A failed load is reported
// by the retriever.
std::future<void> preload_ranker(const std::string& name, const RetrieverOptions& opt);
const std::vector<RetrieverInfo>& retriever_registry();

// Shared by strategies: the text a query stands for, and a deterministic ranking of scored entities
// (score, then path, line, qualified name: ties never depend on internal ids).
std::string query_text(const Engine& e, const RetrievalQuery& q, const TargetContext* ctx);
void rank_entity_hits(const Engine& e, std::vector<Hit>& hits, int top_k);
// The best k scored entities in that same order, selecting on (doc, score) pairs before any Hit exists
// (a BM25 query scores tens of thousands of documents). `skip` drops documents (hidden ones).
std::vector<ScoredDoc> top_entities(const Engine& e, std::vector<ScoredDoc> scored, int top_k,
                                    const std::function<bool(int)>& skip = {});
// The best k of `scored` by score, ties ordered by `before(doc_a, doc_b)` (top_k <= 0: all, in that order).
std::vector<ScoredDoc> best_scored(std::vector<ScoredDoc> scored, int top_k,
                                   const std::function<bool(int, int)>& before);
Hit entity_hit(const Engine& e, int entity, double score);
// The repository path a hit is in: its indexed file's, else its own (a text file's); "" for text made at
// query time.
const std::string& hit_path(const RepoView& v, const Hit& h);
// two entity rankings made one. "structural-first": the hits of `first` in its order, then those of
// `second` it lacks, in theirs; score 1 / position. "rrf": reciprocal rank fusion, score sum of 1 / (60 + rank)
// over the rankings that hold the entity (Cormack et al. 2009), ties by entity_before. A hit keeps the
// features of both rankings, plus first_rank / second_rank where it has them. top_k <= 0: all.
std::vector<Hit> fuse_rankings(const Engine& e, const std::vector<Hit>& first, const std::vector<Hit>& second,
                               const std::string& how, int top_k);

// Strategy factories (one file each).
std::unique_ptr<Retriever> make_sparse(const Engine&, const Models&, const RetrieverOptions&);
std::unique_ptr<Retriever> make_same_file(const Engine&, const Models&, const RetrieverOptions&);
std::unique_ptr<Retriever> make_imports(const Engine&, const Models&, const RetrieverOptions&);
std::unique_ptr<Retriever> make_structural(const Engine&, const Models&, const RetrieverOptions&);
std::unique_ptr<Retriever> make_aligncoder_snippets(const Engine&, const Models&, const RetrieverOptions&);
std::unique_ptr<Retriever> make_cursor_deps(const Engine&, const Models&, const RetrieverOptions&);
std::unique_ptr<Retriever> make_imports_recency(const Engine&, const Models&, const RetrieverOptions&);
std::unique_ptr<Retriever> make_dense(const Engine&, const Models&, const RetrieverOptions&);
std::unique_ptr<Retriever> make_hybrid(const Engine&, const Models&, const RetrieverOptions&);
std::unique_ptr<Retriever> make_procedural(const Engine&, const Models&, const RetrieverOptions&);
// Completion methods (retrieve/aligncoder/retrievers.cpp): they need RetrievalQuery::cursor.
std::unique_ptr<Retriever> make_aligncoder(const Engine&, const Models&, const RetrieverOptions&);
std::unique_ptr<Retriever> make_reacc(const Engine&, const Models&, const RetrieverOptions&);
std::unique_ptr<Retriever> make_rlcoder(const Engine&, const Models&, const RetrieverOptions&);
std::unique_ptr<Retriever> make_repocoder(const Engine&, const Models&, const RetrieverOptions&);
std::unique_ptr<Retriever> make_in_file(const Engine&, const Models&, const RetrieverOptions&);
std::unique_ptr<Retriever> make_no_retrieval(const Engine&, const Models&, const RetrieverOptions&);

}  // namespace repoctx
