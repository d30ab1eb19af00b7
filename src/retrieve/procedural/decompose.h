// ProjAgent 4.1: function decomposition into logical steps, step validation and snippet validation,
// and step projections. Every LLM call goes through the cached backend; calls that do not depend on each
// other are sent together (generate_many), which an OpenAI-compatible fleet serves concurrently.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "llm/backend.h"
#include "projection/step_projector.h"
#include "projection/subspace.h"
#include "retrieve/engine.h"
#include "retrieve/procedural/types.h"

namespace repoctx {

// Parses a model's JSON answer; nullopt (and a reason) for anything that is not the expected object.
std::optional<nlohmann::json> parse_model_json(const std::string& text, std::string* why);
// A string field of a model's JSON object; "" when absent or of another type (models write numbers and
// nulls where strings belong; that must cost the field, never the run).
std::string json_string(const nlohmann::json& o, const char* key);
// The text of a generation's first choice; "" when the backend returned none.
std::string first_text(const GenerateResult& g);

class StepFactory {
 public:
  // `hidden_states`: the white-box model of the projections (subspace and hidden states).
  StepFactory(const Engine& e, LlmBackend& llm, LlmBackend& embedder, LlmBackend& hidden_states,
              const ProceduralParams& p, const TargetContext* hidden);

  // Context functions: decomposed with their bodies, then validated; several functions at once.
  std::vector<FunctionDecomposition> decompose_context(const std::vector<int>& functions);
  // The target: from its signature and docstring only (its body is never shown to any stage).
  FunctionDecomposition decompose_target(int function);

  // Raw projections of steps (reasoning subspace, mean-pooled), stored in the index by content.
  void project(std::vector<Step*>& steps, const std::string& description_prefix = "");
  std::vector<float> project_text(const std::string& description, const std::string& snippet);
  const ReasoningSubspace& subspace();

  // The text a function shows (body hidden when it is, or contains, the hidden target).
  std::string function_body(int function) const;    // statements after the docstring
  std::string function_source(int function) const;  // decorators to end
  nlohmann::json schema_context() const;
  nlohmann::json schema_target() const;

 private:
  void validate(FunctionDecomposition& d);
  const Engine& e_;
  LlmBackend& llm_;
  LlmBackend& embedder_;
  LlmBackend& hidden_states_;
  ProceduralParams p_;
  const TargetContext* hidden_;
  std::unique_ptr<ReasoningSubspace> subspace_;
  std::unique_ptr<StepProjector> projector_;
  std::map<std::string, std::vector<float>> projection_memo_;
};

}  // namespace repoctx
