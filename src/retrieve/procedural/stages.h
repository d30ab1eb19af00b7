// The stages of ProjAgent's procedural retrieval (sections 4.1-4.2), one file each, and the state they
// share. pipeline.cpp runs them in the paper's order:
//
//   offline.cpp            function selection, decomposition of context functions, Algorithm 1, debiasing;
//                          the result is a stored artifact reused across targets and runs (offline_store.cpp)
//   seeds.cpp              initial seeds: projection similarity >= 0.75, top 20, LLM-verified
//   agentic_seeds.cpp      the seed agent and the four-stage filter on its proposals
//   expansion.cpp          seed expansion (> 0.65 to >= 2 seeds) and batched verification of the top 30
//   plan_confirmation.cpp  sufficient? else a refined query for the next round
//
// This header is internal to retrieve/procedural; callers use pipeline.h.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <set>
#include <string>
#include <unordered_set>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/backend.h"
#include "llm/metered.h"
#include "llm/models.h"
#include "projection/debias.h"
#include "retrieve/engine.h"
#include "retrieve/procedural/decompose.h"
#include "retrieve/procedural/types.h"

namespace repoctx {

// Every function decomposed so far (offline, then the agent's proposals) and the grounded, projected
// steps among them.
struct StepPool {
  std::map<int, FunctionDecomposition> decomposed;  // std::map: the Step pointers below stay valid
  std::vector<Step*> pool;                          // grounded context steps with a projection
  MuPc1 mp;                                         // Algorithm 1's estimate: what debias() removes
  // The pool in a fixed order (function, then step), whether computed now or loaded from the store.
  void reindex() {
    pool.clear();
    for (auto& [f, d] : decomposed)
      for (auto& s : d.steps)
        if (s.grounded && !s.projection.empty()) pool.push_back(&s);
  }
};

// One target step across the rounds.
struct TargetStepState {
  int id = 0;
  std::string description, query;
  std::vector<float> debiased;
  bool confirmed = false;
  int rounds = 0;
  bool stuck = false;                       // no refined query: another round would repeat the same work
  std::vector<ProceduralContext> contexts;  // seeds first, then verified expansions
  std::vector<const Step*> seeds;
  std::set<std::string> judged;  // step keys already verified for this target step
  double best_similarity = -2;   // the best projection similarity any candidate reached (for the empty reason)
  // The text searched with: the refined query (if any) before the step's description (ProjAgent 4.2).
  std::string text() const { return query.empty() ? description : query + " " + description; }
};

// What every online stage reads and updates.
struct OnlineRun {
  const Engine& e;
  LlmBackend& llm;  // metered
  const ProceduralParams& p;
  std::shared_ptr<const TargetContext> ctx;
  StepFactory& factory;
  StepPool& steps;
  const std::unordered_set<int>& excluded;  // the target and the benchmark's other targets: never context
  nlohmann::json& online_decompositions;    // trace records of functions decomposed when proposed

  std::string name(int f) const { return e.target_name(f); }
  std::string problem_text() const;  // the target's signature block
  double sim(const std::vector<float>& target, const Step* s) const { return cosine(target, s->debiased); }
  // Decomposes, validates and projects a proposed function once; its grounded steps join the pool.
  void add_to_pool(int function);
};

std::string short_text(const std::string& s, size_t n);

// ---------------------------------------------------------------------------------------- offline.cpp
// Functions that may never be context: the targets, everything defined inside them, and every function
// enclosing one (its body contains a hidden body). Independent of which target is being served, so one
// offline artifact serves every target of a benchmark.
std::unordered_set<int> excluded_functions(const Engine& e, const std::vector<int>& targets);

// Decomposes, validates and projects `functions`, `chunk` at a time sent together; their decompositions
// join `steps.decomposed`, their grounded projected steps `steps.pool` (not yet debiased), one trace record
// each is appended to `trace` as each chunk finishes. `on_chunk(done, total)` reports progress. Returns the
// new steps' raw projections.
std::vector<std::vector<float>> process_functions(const Engine& e, StepFactory& factory,
                                                  const std::vector<int>& functions, StepPool& steps,
                                                  nlohmann::json& trace, const std::string& purpose, size_t chunk,
                                                  const std::function<void(size_t, size_t)>& on_chunk = {});
nlohmann::json decomposition_trace(const Engine& e, const FunctionDecomposition& d);

struct OfflineInputs {
  const Engine& e;
  const Models& models;  // metered by the caller
  const ProceduralParams& p;
  StepFactory& factory;
  std::vector<int> targets;  // the target and the benchmark's other targets
  const std::unordered_set<int>& excluded;
  std::function<LlmUsage()> usage;  // the run's LLM work so far (progress estimates, the stage's usage)
};
// ProjAgent 4.1 once per (repository state, models, parameters, benchmark targets): loaded from the store
// when it holds the artifact, else computed and stored. Fills `steps` (pool debiased) and the trace's
// "offline" record `oj` (as the work goes: an interrupted run keeps what was done).
void run_offline_stage(const OfflineInputs& in, StepPool& steps, nlohmann::json& oj);

// ---------------------------------------------------------------------------------------- seeds.cpp
// LLM verification of candidate steps for a target step (initial seeds, agent proposals):
// (same operation?, reason) per candidate.
std::vector<std::pair<bool, std::string>> verify_candidates(OnlineRun& run, const std::string& target_step,
                                                            const std::vector<const Step*>& candidates);
void find_initial_seeds(OnlineRun& run, TargetStepState& st, nlohmann::json& tj);

// -------------------------------------------------------------------------------- agentic_seeds.cpp
void find_agent_seeds(OnlineRun& run, TargetStepState& st, nlohmann::json& tj);

// ------------------------------------------------------------------------------------ expansion.cpp
// Seed expansion and the batched verification of its top candidates.
void expand_seeds(OnlineRun& run, TargetStepState& st, nlohmann::json& tj);
// The batches of candidate indices whose prompts fit `budget_tokens` (about 4 characters a token), each
// holding at least one candidate.
std::vector<std::vector<size_t>> verification_batches(const std::vector<size_t>& candidate_chars, size_t fixed_chars,
                                                      int budget_tokens);

// ---------------------------------------------------------------------------- plan_confirmation.cpp
void confirm_plan(OnlineRun& run, std::vector<TargetStepState*>& open, nlohmann::json& rj);

}  // namespace repoctx
