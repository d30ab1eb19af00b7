// ProjAgent 4.4's prompt assembly within a token budget: per target step, its best procedural context
// (a confirmed one when there is one) and its best semantic context; then the rest of the budget with
// confirmed contexts, procedural before semantic, round-robin over the steps so that no step takes it all.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace repoctx {

struct PromptContext {
  std::string kind;  // "procedural" | "semantic"
  int step = 0;      // target step id
  bool confirmed = false;
  int entity = -1;     // the context's function or symbol
  double score = 0;    // projection similarity (procedural) or eq. 6's v (semantic)
  std::string title;   // "path::qualname"
  std::string text;    // formatted body of the context
  int tokens() const;  // estimated (~4 characters a token, as every budget check here)
  nlohmann::json to_json() const;
};

// `by_step[s]`: the step's contexts of one kind, best first. Returns the selection in prompt order;
// a context (same kind, entity and text) is taken once even when several steps retrieved it.
std::vector<PromptContext> assemble_contexts(const std::vector<std::vector<PromptContext>>& procedural_by_step,
                                             const std::vector<std::vector<PromptContext>>& semantic_by_step,
                                             int budget_tokens);

// The prompt budget and the output tokens fitted to a model's context of `context_length` tokens (0 =
// unknown: nothing changes). The defaults (12,000 estimated tokens of contexts, 4,096 output tokens) do not
// fit a 2,048-token server, which rejects such a prompt. The context holds the prompt's fixed text
// (`fixed_chars`: the longest prompt without its contexts), the contexts, the answer and, in a refinement
// round, the previous answer once more: output is capped at a quarter of the context and the contexts get
// what is left, counted at a low estimate of characters per token.
struct ContextFit {
  int budget_tokens = 0;  // estimated as PromptContext::tokens() does
  int max_tokens = 0;
  bool clamped = false;  // either was lowered
};
ContextFit fit_to_context(int context_length, int budget_tokens, int max_tokens, size_t fixed_chars);

// The selection as the prompt shows it, each context labelled with its kind, step and confirmation.
std::string format_contexts(const std::vector<PromptContext>& selected);

}  // namespace repoctx
