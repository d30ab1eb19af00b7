// Repository-level code completion, end to end (AlignCoder IV): for each task and method, retrieve for the
// cursor (the text after it absent), build the prompt (prompts/complete_code.txt), generate greedily, score
// EM/ES (eval/completion_metrics.h). Results are appended per (task, method) to <out>/results.jsonl, so a
// re-run resumes (and the LLM cache makes repeated calls free); --shard i/n splits the tasks; a task that
// cannot be read or no longer matches its file is recorded with its error and the run goes on. The table is
// shaped like the paper's Table I: EM and ES per benchmark (columns) per method (rows); with ks (RQ2) each
// k of AlignCoder's sampling number is a row of its own ("aligncoder@k=3").
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/completion_tasks.h"
#include "llm/metered.h"
#include "retrieve/retriever.h"

namespace repoctx {

struct CompletionRunOptions {
  std::vector<std::string> methods = {"aligncoder"};  // registry names
  std::vector<int> ks;                                // RQ2: aligncoder's sampling numbers (empty: completion.samples)
  std::string out_dir;
  int shard = 0, shards = 1;
  RetrieverOptions retriever;  // completion parameters, the model file, BM25
  int top_k = 10;              // snippets retrieved for the prompt
  int max_tokens = 64;         // generated tokens (function tasks: 4 times as many)
  bool quiet = false;
};

// "aligncoder@k=3" -> ("aligncoder", 3); a plain name -> (name, -1).
std::pair<std::string, int> parse_method_label(const std::string& label);
// The rows a run makes: each method, aligncoder once per k.
std::vector<std::string> method_labels(const CompletionRunOptions& o);
// The roles the methods need (generation always needs the LLM).
ModelNeeds completion_needs(const CompletionRunOptions& o);

struct CompletionOutcome {
  std::vector<Hit> hits;
  std::string prompt;
  std::string generated;
  nlohmann::json trace;
  LlmUsage usage;
  double retrieval_seconds = 0, seconds = 0;
};

// One completion at a cursor with a retriever (made by make_method).
CompletionOutcome complete_at(const Engine& e, const Models& models, Retriever& retriever,
                              const std::shared_ptr<const CursorContext>& ctx, const CompletionRunOptions& o,
                              const std::string& kind);
std::unique_ptr<Retriever> make_method(const std::string& label, const Engine& e, const Models& models,
                                       const CompletionRunOptions& o);

// Runs every (task, method) of the shard not yet in <out>/results.jsonl; returns the records written.
int run_completion_eval(const std::vector<CompletionTask>& tasks, const CompletionRunOptions& o, const Models& models,
                        const std::function<Engine&(const std::string& repo)>& engine_for);

// Table I: EM / ES (percent) per benchmark and method over the results of the given folders (shards).
std::string completion_table(const std::vector<std::string>& out_dirs, bool csv);

}  // namespace repoctx
