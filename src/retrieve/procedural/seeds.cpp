// ProjAgent 4.2, Initial Seed Finding: every grounded context step is ranked by the projection similarity
// of its debiased projection to the target step's; those at or above 0.75, at most the top 20, are
// verified by the LLM ("the same computational operation, regardless of the application domain"), and
// the confirmed ones are the initial seeds.
#include <algorithm>

#include "llm/prompts.h"
#include "llm/structured.h"
#include "retrieve/procedural/stages.h"
#include "util/cancel.h"

namespace repoctx {

using nlohmann::json;

std::string OnlineRun::problem_text() const {
  return entity_signature_block(e.view().entities()[ctx->target.entity]);
}

std::vector<std::pair<bool, std::string>> verify_candidates(OnlineRun& run, const std::string& target_step,
                                                            const std::vector<const Step*>& cands) {
  static const PromptTemplate t = load_prompt("verify_seed");
  json schema = {
      {"type", "object"},
      {"properties", {{"same_operation", {{"type", "boolean"}}}, {"reason", {{"type", "string"}, {"maxLength", 200}}}}},
      {"required", {"same_operation", "reason"}}};
  std::vector<StructuredCall> calls;
  for (const Step* c : cands)
    calls.push_back({"verify_seed",
                     render_prompt(t, {{"target_step", target_step},
                                       {"candidate_description", c->description},
                                       {"candidate_snippet", c->snippet},
                                       {"candidate_function", run.name(c->function)}}),
                     schema, run.p.judge_tokens});
  std::vector<std::pair<bool, std::string>> out;
  for (const auto& a : ask_json_many(run.llm, calls)) {
    auto same = a.boolean("same_operation");
    if (!same)
      out.emplace_back(false, "unusable verdict: " + a.missing("same_operation field"));
    else
      out.emplace_back(*same, a.string("reason"));
  }
  return out;
}

void find_initial_seeds(OnlineRun& run, TargetStepState& st, json& tj) {
  throw_if_interrupted("LLM answers so far are cached; re-run to resume");
  std::vector<std::pair<double, const Step*>> cands;
  for (const Step* c : run.steps.pool) {
    if (st.judged.count(c->key)) continue;
    double s = run.sim(st.debiased, c);
    st.best_similarity = std::max(st.best_similarity, s);
    if (s >= run.p.seed_threshold) cands.emplace_back(s, c);
  }
  std::stable_sort(cands.begin(), cands.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  tj["seed_candidates"] = cands.size();
  if (static_cast<int>(cands.size()) > run.p.seed_top) cands.resize(static_cast<size_t>(run.p.seed_top));
  std::vector<const Step*> to_verify;
  for (const auto& [s, c] : cands) to_verify.push_back(c);
  auto verdicts = verify_candidates(run, st.text(), to_verify);
  tj["initial_seeds"] = json::array();
  for (size_t i = 0; i < to_verify.size(); ++i) {
    const Step* c = to_verify[i];
    st.judged.insert(c->key);
    tj["initial_seeds"].push_back({{"function", run.name(c->function)},
                                   {"step", c->description},
                                   {"similarity", cands[i].first},
                                   {"same_operation", verdicts[i].first},
                                   {"reason", verdicts[i].second}});
    if (verdicts[i].first) {
      st.seeds.push_back(c);
      st.contexts.push_back({c->function, c->description, c->snippet, cands[i].first, "seed"});
    }
  }
}

}  // namespace repoctx
