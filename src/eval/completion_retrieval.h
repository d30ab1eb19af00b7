// LLM-free measure of completion retrieval (docs/EVAL.md): the share of tasks whose top-k
// retrieved context contains a definition the ground-truth line calls (tasks built with definitions: API
// tasks of build_completion_tasks). A base or in-file snippet contains a definition when the definition's
// first line lies inside it; a dependency snippet, when it lists the definition's signature. 95% confidence
// intervals by bootstrap over tasks, and paired bootstrap intervals of each method's difference to a
// baseline.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/completion_tasks.h"
#include "retrieve/retriever.h"

namespace repoctx {

// Methods (each on the same codebase: base + dependency snippets unless the options say otherwise):
//   bm25               BM25 on the unfinished code (AlignCoder's coarse retrieval)
//   bm25-oracle        BM25 on the unfinished code + the ground truth (an enhanced query with the oracle)
//   reacc              ReACC's hybrid on the unfinished code
//   rlcoder            the encoder of --model-file on the unfinished code (RLCoder's re-ranking)
//   aligncoder         the AlignRetriever on the unfinished code (no candidates: LLM-free)
//   aligncoder-oracle  the AlignRetriever on the enhanced query with the ground truth as its candidate
//   aligncoder@FILE, aligncoder-oracle@FILE   the same with the model file FILE (several models, one run)
//   untrained          the encoder before training on the unfinished code (ablation)
//   untrained-oracle   the same with the oracle candidate
//   in-file            BM25 over the completed file's own snippets above the cursor (IV-B's In-File)
//   cursor-deps        the definitions the code before the cursor reaches, ranked by how it mentions them
//   imports-recency    the definitions imported by name, the most recently mentioned first
const std::vector<std::string>& retrieval_eval_methods();

struct RetrievalEvalOptions {
  std::vector<std::string> methods = {"bm25", "reacc", "bm25-oracle", "aligncoder", "aligncoder-oracle"};
  std::string baseline = "bm25";
  int top_k = 10;
  int bootstrap = 2000;
  uint64_t seed = 0;
  RetrieverOptions retriever;  // dependency_snippets defaults to 1 here (one codebase for every method)
  // Non-empty: every hit with features, per task and method, as JSON lines (task, method, rank, label,
  // features, whether it contains a definition): the rows cursor-deps' weights are fitted on.
  std::string dump_hits;
};

struct MethodScore {
  std::string method;
  int tasks = 0, hits = 0;
  double share = 0, lo = 0, hi = 0;           // share of tasks and its 95% interval
  double diff = 0, diff_lo = 0, diff_hi = 0;  // share - baseline share, paired 95% interval
  double mrr = 0, mrr_lo = 0, mrr_hi = 0;     // mean reciprocal rank of the first hit with a definition (0 past k)
  double p50_ms = 0;                          // retrieval latency (median per query)
};

struct RetrievalEvalReport {
  std::vector<MethodScore> overall;
  std::map<std::string, std::vector<MethodScore>> by_benchmark;
  int tasks = 0, skipped = 0;      // tasks without definitions or with errors are skipped
  std::vector<std::string> notes;  // what a row measures when it is not what its name says (no embedder, ...)
  nlohmann::json to_json() const;
  std::string table() const;  // Markdown
};

// Whether a hit contains the entity (see above).
bool hit_contains(const Engine& e, const Hit& h, int entity);

RetrievalEvalReport run_completion_retrieval_eval(const std::vector<CompletionTask>& tasks,
                                                  const RetrievalEvalOptions& o, const Models& models,
                                                  const std::function<Engine&(const std::string&)>& engine_for);

}  // namespace repoctx
