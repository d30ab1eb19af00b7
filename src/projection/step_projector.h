// Projection of a functional step (ProjAgent 4.1 "Step Projection Construction"): the model is prompted
// (prompts/step_reasoning.txt) to reason about the step's implementation, greedy decoding; the last-layer
// pre-norm hidden states of all response tokens are projected onto the reasoning subspace and
// mean-pooled. Mean pooling commutes with the projection, so the backend returns the mean state and
// the cache holds d floats per step instead of one row per token.
#pragma once

#include <string>
#include <vector>

#include "llm/backend.h"
#include "projection/subspace.h"

namespace repoctx {

struct StepProjectionOptions {
  // Response tokens whose states are pooled; 0 = all of them, until the model ends its answer (the paper),
  // bounded only by the context window.
  int max_tokens = 0;
};

class StepProjector {
 public:
  StepProjector(LlmBackend& model, const ReasoningSubspace& subspace, StepProjectionOptions o = {});
  // Empty when the model gave no response token (so no hidden state) for the step.
  std::vector<float> project(const std::string& description, const std::string& snippet);
  // Many steps (the openai-free llama backend runs them one by one; each is cached as it completes).
  std::vector<std::vector<float>> project_many(const std::vector<std::pair<std::string, std::string>>& steps);
  const ReasoningSubspace& subspace() const { return s_; }

 private:
  GenerateRequest request(const std::string& description, const std::string& snippet) const;
  LlmBackend& m_;
  const ReasoningSubspace& s_;
  StepProjectionOptions o_;
};

}  // namespace repoctx
