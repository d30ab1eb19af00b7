// ProjAgent's procedural retrieval, sections 4.1 and 4.2, for one target function:
//   offline   function selection -> decomposition -> validation -> projections -> stable mu/PC1
//             (Algorithm 1, batches of 5 more files) -> debiased projections of grounded context steps;
//             computed once per repository state, models, parameters and benchmark targets, and stored in
//             the index (reused by every later target and run);
//   online    target decomposition (signature + docstring) -> for each target step, up to 5 rounds of:
//             initial seeds (similarity >= 0.75, top 20, LLM-verified) -> agentic seed finding
//             (four-stage filter) -> seed expansion (> 0.65 to >= 2 seeds) -> verification of the top 30
//             (batched, seeds as calibration) -> plan confirmation (sufficient? else a refined query is
//             prepended to the step and its projection recomputed).
// Every stage is recorded in a JSON trace a person can read to see why each context was chosen; each stage
// prints its counts and an estimate of the LLM calls ahead on stderr (log_info). The stages live one per
// file (stages.h).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/backend.h"
#include "llm/metered.h"
#include "llm/models.h"
#include "retrieve/engine.h"
#include "retrieve/procedural/types.h"
#include "retrieve/retriever.h"

namespace repoctx {

struct ProceduralOutcome {
  std::vector<TargetStepResult> steps;
  nlohmann::json trace;
  LlmUsage usage;  // this run's LLM work by purpose (also in trace["llm_usage"])
  // Why no target step has a context ("no grounded context step: ..."); empty when some step has one.
  std::string empty_reason;
};

class ProceduralPipeline {
 public:
  // models.llm decomposes, judges and drives the agent; models.embedder validates snippets (required: the
  // fallback to the LLM is decided, and warned about, where models are loaded, LlmSession::models); the
  // white-box model (models.need_hidden) gives the hidden states and unembedding matrix of the projections.
  // They may be one backend.
  ProceduralPipeline(const Engine& e, const Models& models, ProceduralParams p = {});
  ~ProceduralPipeline();
  // `withheld`: functions withheld from context, e.g. the other target functions of a benchmark (never context: not
  // decomposed, not accepted from the agent, not expanded; and they rank their files first in function selection). The
  // target itself always counts as one.
  // `context`: the target's hidden-body context when the caller has built it (else built here).
  // On Ctrl-C (util/cancel.h) throws Error(interrupted) after keeping the trace so far (partial_trace()).
  ProceduralOutcome run(const TargetRef& target, std::shared_ptr<const TargetContext> context = nullptr,
                        const std::vector<int>& withheld = {});
  // The trace of an interrupted run(), with "interrupted": true and the stage it stopped in.
  const nlohmann::json& partial_trace() const { return partial_; }
  // RQ2 support: after run(), every (target step, grounded context step) pair with its similarities to
  // the target step's seeds, the seeds themselves left out.
  const std::vector<Rq2Pair>& rq2_pairs() const { return rq2_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<Rq2Pair> rq2_;
  nlohmann::json partial_;
};

// The RQ2 pairs of the last target a `procedural` retriever (make_retriever) ran; empty for other strategies.
// What becomes of them (RQ2's pairs file, eval/rq2.h) is the caller's.
const std::vector<Rq2Pair>& last_rq2_pairs(const Retriever& r);

}  // namespace repoctx
