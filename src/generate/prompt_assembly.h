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

// The selection as the prompt shows it, each context labelled with its kind, step and confirmation.
std::string format_contexts(const std::vector<PromptContext>& selected);

}  // namespace repoctx
