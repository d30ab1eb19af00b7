#include "projection/step_projector.h"

#include "llm/prompts.h"
#include "util/error.h"

namespace repoctx {

// A budget no context window reaches: the backend stops at the end of the answer or of its context.
constexpr int kUntilEndOfAnswer = 1 << 20;

StepProjector::StepProjector(LlmBackend& model, const ReasoningSubspace& subspace, StepProjectionOptions o)
    : m_(model), s_(subspace), o_(o) {
  if (!model.capabilities().hidden_states)
    throw Error(ExitCode::usage,
                "step projections need hidden states: use the llama backend with a local GGUF (--model path.gguf)");
  if (model.hidden_dim() != subspace.dim())
    throw Error(ExitCode::bad_input, "the reasoning subspace (d = " + std::to_string(subspace.dim()) +
                                         ") belongs to another model than the one generating (d = " +
                                         std::to_string(model.hidden_dim()) + ")");
}

GenerateRequest StepProjector::request(const std::string& description, const std::string& snippet) const {
  static const PromptTemplate t = load_prompt("step_reasoning");
  GenerateRequest r;
  r.purpose = "project_step";
  r.messages = render_prompt(t, {{"description", description}, {"snippet", snippet}});
  r.max_tokens = o_.max_tokens > 0 ? o_.max_tokens : kUntilEndOfAnswer;
  r.temperature = 0.0;
  r.hidden_states = true;
  r.hidden_pool = "mean";
  return r;
}

static std::vector<float> pooled(const GenerateResult& g, int d) {
  const auto& c = g.choices.at(0);
  // An empty response (end of text at once) has no response-token states: the step gets no projection
  // and the caller records why, instead of one step failing a whole run.
  if (c.hidden.size() < static_cast<size_t>(d)) return {};
  return std::vector<float>(c.hidden.begin(), c.hidden.begin() + d);
}

std::vector<float> StepProjector::project(const std::string& description, const std::string& snippet) {
  auto g = m_.generate(request(description, snippet));
  auto h = pooled(g, s_.dim());
  return h.empty() ? h : s_.project(h.data());
}

std::vector<std::vector<float>> StepProjector::project_many(
    const std::vector<std::pair<std::string, std::string>>& steps) {
  std::vector<GenerateRequest> rs;
  for (const auto& [d, s] : steps) rs.push_back(request(d, s));
  auto gs = m_.generate_many(rs);
  std::vector<std::vector<float>> out;
  for (const auto& g : gs) {
    auto h = pooled(g, s_.dim());
    out.push_back(h.empty() ? h : s_.project(h.data()));
  }
  return out;
}

}  // namespace repoctx
