#include "generate/prompt_assembly.h"

#include <algorithm>
#include <set>
#include <tuple>

#include <fmt/format.h>

namespace repoctx {

int PromptContext::tokens() const {
  return static_cast<int>((text.size() + title.size() + 48) / 4);
}

nlohmann::json PromptContext::to_json() const {
  return {{"kind", kind},   {"step", step},   {"confirmed", confirmed},
          {"title", title}, {"score", score}, {"tokens", tokens()}};
}

std::vector<PromptContext> assemble_contexts(const std::vector<std::vector<PromptContext>>& proc,
                                             const std::vector<std::vector<PromptContext>>& sem, int budget) {
  std::vector<PromptContext> out;
  std::set<std::tuple<std::string, int, std::string>> taken;
  int used = 0;
  auto take = [&](const PromptContext& c) {
    auto key = std::make_tuple(c.kind, c.entity, c.text);
    if (taken.count(key)) return true;  // already in the prompt: the step is covered
    if (used + c.tokens() > budget) return false;
    taken.insert(key);
    used += c.tokens();
    out.push_back(c);
    return true;
  };
  // 1. Coverage: one context of each kind per step, confirmed first, else the best unconfirmed.
  auto cover = [&](const std::vector<std::vector<PromptContext>>& by_step) {
    for (const auto& list : by_step) {
      const PromptContext* pick = nullptr;
      for (const auto& c : list)
        if (c.confirmed) {
          pick = &c;
          break;
        }
      if (!pick && !list.empty()) pick = &list.front();
      if (pick) take(*pick);
    }
  };
  cover(proc);
  cover(sem);
  // 2. The rest of the budget: confirmed contexts, procedural before semantic, a rank at a time.
  auto fill = [&](const std::vector<std::vector<PromptContext>>& by_step) {
    size_t depth = 0;
    for (const auto& l : by_step) depth = std::max(depth, l.size());
    for (size_t r = 0; r < depth; ++r)
      for (const auto& l : by_step)
        if (r < l.size() && l[r].confirmed) take(l[r]);
  };
  fill(proc);
  fill(sem);
  return out;
}

namespace {
// Characters a token spans, at the low end: indented Python with qwen2's BPE tokenizer runs about 2.5
// (4,200 characters are 1,650 tokens), where PromptContext::tokens() counts 4.
constexpr double kCharsPerTokenLow = 2.5;
constexpr int kPromptOverheadTokens = 64;  // chat template and role markers
}  // namespace

ContextFit fit_to_context(int context_length, int budget_tokens, int max_tokens, size_t fixed_chars) {
  ContextFit f{budget_tokens, max_tokens, false};
  if (context_length <= 0) return f;
  f.max_tokens = std::min(max_tokens, std::max(16, context_length / 4));
  double free_tokens = context_length - 2.0 * f.max_tokens - kPromptOverheadTokens -
                       static_cast<double>(fixed_chars) / kCharsPerTokenLow;
  int cap = free_tokens > 0 ? static_cast<int>(free_tokens * kCharsPerTokenLow / 4.0) : 0;
  f.budget_tokens = std::max(0, std::min(budget_tokens, cap));
  f.clamped = f.budget_tokens != budget_tokens || f.max_tokens != max_tokens;
  return f;
}

std::string format_contexts(const std::vector<PromptContext>& sel) {
  std::string s;
  for (const auto& c : sel)
    s += fmt::format("### {} context for step {} ({}): {}\n{}\n\n", c.kind, c.step,
                     c.confirmed ? "confirmed" : "unconfirmed", c.title, c.text);
  return s.empty() ? "(none)\n" : s;
}

}  // namespace repoctx
