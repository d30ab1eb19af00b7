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
#include "llm/models.h"
#include "llm/structured.h"

#include "projection/step_projector.h"
#include "projection/subspace.h"
#include "retrieve/engine.h"
#include "retrieve/procedural/types.h"

namespace repoctx {

class StepFactory {
 public:
  // models.llm decomposes and judges, models.embedder validates snippets (asked for at the first
  // validation: Models::need_embedder), the white-box model (models.need_hidden) projects. `hidden`: the
  // target whose body no stage may see (or null).
  StepFactory(const Engine& e, const Models& models, const ProceduralParams& p, const TargetContext* hidden);

  // Context functions: decomposed with their bodies, then validated; several functions at once. `purpose`
  // names the stage in the usage table (offline "decompose_context", the agent's "decompose_proposal").
  std::vector<FunctionDecomposition> decompose_context(const std::vector<int>& functions,
                                                       const std::string& purpose = "decompose_context");
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
  // validate's stages: the descriptions the docstring supports (exactly or by ROUGE-L), those left to the
  // judge; the LLM judge; the snippets' lines checked against the body (re-identified when not all there);
  // the description and snippet embeddings compared.
  std::vector<Step*> screen_descriptions(FunctionDecomposition& d, const std::string& doc) const;
  void judge_descriptions(const std::vector<Step*>& need_judge, const std::string& source);
  void validate_snippets(FunctionDecomposition& d, const std::string& body);
  void compare_embeddings(FunctionDecomposition& d);
  const Engine& e_;
  LlmBackend& llm_;
  Models models_;  // embedder and white-box model are asked for when first used (the target needs neither)
  ProceduralParams p_;
  const TargetContext* hidden_;
  std::unique_ptr<ReasoningSubspace> subspace_;
  std::unique_ptr<StepProjector> projector_;
  std::map<std::string, std::vector<float>> projection_memo_;
};

}  // namespace repoctx
