// ProjAgent 4.3-4.4 for one target function: semantic retrieval per target step (eq. 6 over the import
// closure's symbol pool), budgeted prompt assembly, greedy generation, and the conservative static-analysis
// feedback loop (at most 10 refinement rounds); the result is spliced into the file in place of the hidden
// body. The same entry point runs the ablations and REPOCOD's retrieval baselines, selected by name:
//
//   projagent                full pipeline
//   projagent-no-procedural  no procedural contexts (target steps still decomposed; semantic per step)
//   projagent-no-semantic    no semantic contexts
//   projagent-no-feedback    no refinement rounds
//   sparse | dense | same-file   REPOCOD: retrieved context (BM25 / embeddings / the file itself) + generation
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "generate/prompt_assembly.h"
#include "generate/static_checks.h"
#include "llm/backend.h"
#include "llm/metered.h"
#include "llm/models.h"
#include "retrieve/engine.h"
#include "retrieve/procedural/types.h"

namespace repoctx {

struct GenerationParams {
  std::string method = "projagent";
  int prompt_budget_tokens = 12000;  // contexts' share of the prompt (the paper gives no number; docs/DEVIATIONS.md)
  int max_tokens = 4096;             // greedy decoding, 4096 output tokens (ProjAgent 5.1)
  int max_rounds = 10;               // refinement rounds of the feedback loop
  // In the parameter table (generator.cpp), settable by name like the procedural parameters:
  int semantic_top = 20;     // semantic contexts per target step (4.3)
  int baseline_top = 10;     // sparse/dense baselines: retrieved functions
  int context_chars = 3000;  // one context's text is cut here (parameter context_cut_chars)
  ProceduralParams procedural;
  // The python3 whose compile() is the syntax check: "" = $REPOCTX_PYTHON, else python3 on PATH
  // (tree-sitter with a warning when none); "none" = tree-sitter.
  std::string python;
  // Entity indices (in the engine generate_function gets) of functions withheld from context: never context
  // of the ProjAgent methods (RetrievalQuery::withheld); `evaluate` passes every other task of the
  // repository. Not part of to_json(): the trace names them.
  std::vector<int> withheld;
  nlohmann::json to_json() const;
  // NAME -> VALUE of the generation table (semantic_top, baseline_top, context_cut_chars) or, for any other
  // name, of the procedural one; type- and range-checked, Error(usage) naming the parameter otherwise.
  void apply(const nlohmann::json& j);
  // The generation table's rows (group "generation"; util/param_table.h), without the procedural ones.
  static nlohmann::json catalogue();
};

struct GenerationOutcome {
  std::string method;
  std::string body;           // the generated body (dedented), as spliced
  std::string function_text;  // the function as it reads in the patched file
  std::string patched_file, diff;
  std::vector<StaticFinding> findings;  // left after the last round
  int rounds = 0;                       // refinement rounds made
  nlohmann::json trace;
  LlmUsage usage;
};

const std::vector<std::string>& generation_methods();
// Does the method run procedural retrieval (and so need a white-box model for hidden states)?
bool method_uses_procedural(const std::string& method);
// Throws Error(usage) listing the methods when `method` is unknown.
void check_generation_method(const std::string& method);
// Throws Error(usage) saying why when `method` names a method of the papers that cannot be reproduced
// (specagent: docs/DEVIATIONS.md); returns otherwise.
void check_not_unreproducible(const std::string& method);

// The model roles `method` uses (so that callers load only those).
ModelNeeds generation_method_needs(const std::string& method);

// models.llm writes; models.embedder (may be null: semantic ranking is then BM25 alone, and `dense` fails);
// the white-box model of the projections (models.need_hidden) for the procedural methods.
GenerationOutcome generate_function(const Engine& e, const Models& models, const TargetRef& target,
                                    const GenerationParams& p);

}  // namespace repoctx
