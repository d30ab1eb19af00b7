#include "generate/prompt_assembly.h"

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

std::string format_contexts(const std::vector<PromptContext>& sel) {
  std::string s;
  for (const auto& c : sel)
    s += fmt::format("### {} context for step {} ({}): {}\n{}\n\n", c.kind, c.step,
                     c.confirmed ? "confirmed" : "unconfirmed", c.title, c.text);
  return s.empty() ? "(none)\n" : s;
}

}  // namespace repoctx
