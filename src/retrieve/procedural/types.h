// Data of ProjAgent's procedural retrieval (sections 4.1-4.2): steps of functions, their validation,
// and the parameters of every stage with the paper's defaults.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "projection/debias.h"

namespace repoctx {

struct ProceduralParams {
  bool retrieval = true;  // false: decompose the target only (ProjAgent's no-procedural ablation)
  // 4.1 offline preprocessing
  int selected_files = 20;         // function selection: top files
  int batch_files = 5;             // Algorithm 1: files added per iteration
  double tau_mu = 1e-3;            // eq. 4
  double tau_pc1 = 0.99;           // eq. 5
  double energy_threshold = 0.98;  // section 3: energy of the semantic directions (squared singular values)
  double rouge_threshold = 0.7;    // step validation, stage 2
  double snippet_cosine = 0.75;    // snippet validation: cosine(description, snippet) embeddings
  bool full_search = false;        // RQ1 coverage experiment: decompose every context function offline
  int max_context_functions = 0;   // cost cap on functions decomposed offline (0 = none, the paper's setting)
  bool reuse_offline = true;       // load the stored offline artifact when one matches (false: compute it again)
  // 4.2 procedural retrieval
  double seed_threshold = 0.75;    // initial seeds: projection similarity >= 0.75
  int seed_top = 20;               //   top 20 verified by the LLM
  double redundancy = 0.95;        // agent proposals: drop candidates > 0.95 similar to an existing seed
  double expand_tau = 0.65;        // seed expansion: similarity > 0.65 ...
  int expand_k = 2;                //   ... to at least 2 seeds
  int verify_top = 30;             // verification of the top 30 expanded steps
  int verify_batch_tokens = 3000;  //   batched within this prompt budget (estimated tokens; the paper: none given)
  int max_rounds = 5;              // plan confirmation rounds
  bool agent = true;               // agentic seed finding
  int agent_budget = 15;           // tool calls per target step (the paper: "a fixed search budget", no number)
  int agent_context_tokens = 0;    // compaction threshold (estimated tokens; 0: from the model's context length)
  // Generation budgets (per call kind) and JSON-schema bounds; 0 = no bound (the paper's setting). The
  // numbers the paper does not give are in docs/DEVIATIONS.md with their reasons.
  int max_steps = 0;  // steps per function
  int description_chars = 0;
  int snippet_chars = 0;
  int decompose_tokens = 4096;  // the paper's generation budget (5.1)
  int judge_tokens = 256;
  int agent_tokens = 512;
  int projection_tokens = 0;  // response tokens whose hidden states are pooled (0: all, as the paper)
  nlohmann::json to_json() const;
  // Sets the fields named in `j` (the names of to_json()); throws Error(usage) on an unknown name.
  void apply(const nlohmann::json& j);
  // Every parameter: name, type, default, meaning, valid values, source (util/param_table.h).
  static nlohmann::json catalogue();
  static bool has(const std::string& name);
};

struct StepValidation {
  std::string description_stage;  // "docstring" | "rouge" | "judge" | "rejected"
  double rouge = 0;
  std::string judge_reason;
  std::string snippet_stage;   // "verbatim" | "reidentified" | "rejected"
  double snippet_cosine = -2;  // -2: not computed
  std::string rejection;       // why the step is not grounded ("" when grounded)
  nlohmann::json to_json() const;
};

struct Step {
  int function = -1;  // entity index
  int ord = 0;
  std::string description, snippet;
  bool grounded = false;
  StepValidation validation;
  std::string key;                // content hash of (function, description, snippet)
  std::vector<float> projection;  // raw proj_R, mean-pooled (empty until projected)
  std::vector<float> debiased;    // eq. 3
};

struct FunctionDecomposition {
  int function = -1;
  bool is_target = false;
  std::vector<Step> steps;  // grounded and rejected, in order
  std::string error;        // the LLM's output could not be used (and why)
};

// One context of a target step, as reported.
struct ProceduralContext {
  int function = -1;
  std::string description, snippet;
  double similarity = 0;  // projection cosine (debiased) to the target step
  std::string source;     // "seed" | "agent" | "expansion"
};

// One record of RQ2's dataset (ProjAgent 5.3, Table 3), as the pipeline writes it to a pairs file (JSONL):
// a (target step, context step) pair and its projection similarity to each seed of the target step. Only
// the two ids and the similarities enter the metrics (eval/rq2.h); the texts are what a labeller reads.
struct Rq2Pair {
  std::string target_step, context_step;
  std::string target_description, context_description, context_snippet;
  std::vector<double> seed_similarities;
  // The pairs-file line (what the procedural pipeline writes; eval/rq2.h reads it), without the newline.
  std::string to_jsonl() const;
};

struct TargetStepResult {
  int id = 0;
  std::string description;  // as first decomposed
  std::string query;        // the refined query prepended in later rounds ("" if none)
  bool confirmed = false;
  int rounds = 0;
  std::vector<ProceduralContext> contexts;
};

}  // namespace repoctx
