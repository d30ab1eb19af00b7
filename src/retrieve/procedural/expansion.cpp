// ProjAgent 4.2, Seed Expansion and Verification: without any LLM call, the pool's steps whose debiased
// projection is more similar than 0.65 to at least 2 seeds of a target step are the expansion candidates;
// the top 30 (by similarity to the target step) are verified by the LLM in batches that fit a token
// budget, the seeds shown as calibration examples; the verified ones join the step's seeds and contexts.
#include <algorithm>
#include <map>

#include "llm/prompts.h"
#include "llm/structured.h"
#include "retrieve/procedural/stages.h"
#include "util/cancel.h"

namespace repoctx {

using nlohmann::json;

namespace {

// A candidate as the verification prompt shows it; its snippet is cut at this many characters so that a
// batch holds several candidates (docs/DEVIATIONS.md).
constexpr size_t kShownSnippetChars = 400;

std::string shown(const Step* s) {
  return s->description + "\n```python\n" + short_text(s->snippet, kShownSnippetChars) + "\n```\n";
}

json batch_schema(size_t batch_size, size_t n_candidates) {
  return {{"type", "object"},
          {"properties",
           {{"verdicts",
             {{"type", "array"},
              {"maxItems", batch_size},
              {"items",
               {{"type", "object"},
                {"properties",
                 {{"id", {{"type", "integer"}, {"minimum", 0}, {"maximum", n_candidates}}},
                  {"similar", {{"type", "boolean"}}}}},
                {"required", {"id", "similar"}}}}}}}},
          {"required", {"verdicts"}}};
}

void verify_expansion(OnlineRun& run, TargetStepState& st, const std::vector<std::pair<double, const Step*>>& expand,
                      json& tj) {
  tj["verification"] = json::array();
  if (expand.empty()) return;
  throw_if_interrupted("LLM answers so far are cached; re-run to resume");
  static const PromptTemplate t = load_prompt("verify_batch");
  const std::string text = st.text();
  std::string examples;
  for (const Step* s : st.seeds) examples += "- " + shown(s);
  std::vector<size_t> sizes;
  for (const auto& [sim, c] : expand) sizes.push_back(shown(c).size() + 8);
  auto batches = verification_batches(sizes, examples.size() + text.size() + t.user.size() + t.system.size(),
                                      run.p.verify_batch_tokens);
  std::vector<StructuredCall> calls;
  for (const auto& b : batches) {
    std::string cands;
    for (size_t i : b) cands += "[" + std::to_string(i) + "] " + shown(expand[i].second);
    calls.push_back({"verify_expansion",
                     render_prompt(t, {{"problem", run.problem_text()},
                                       {"target_step", text},
                                       {"examples", examples.empty() ? "(none)" : examples},
                                       {"candidates", cands}}),
                     batch_schema(b.size(), expand.size()), run.p.judge_tokens + 16 * static_cast<int>(b.size())});
  }
  tj["verification_batches"] = batches.size();
  auto answers = ask_json_many(run.llm, calls);
  std::map<size_t, bool> verdict;
  for (size_t bi = 0; bi < answers.size(); ++bi) {
    const json* verdicts = answers[bi].array("verdicts");
    if (!verdicts) {
      tj["verification"].push_back({{"batch", bi}, {"error", answers[bi].missing("verdicts array")}});
      continue;
    }
    std::set<size_t> in_batch(batches[bi].begin(), batches[bi].end());
    for (const auto& v : *verdicts) {
      if (!v.is_object() || !v.contains("id") || !v["id"].is_number_integer() || !v.contains("similar")) continue;
      if (v["id"].get<int64_t>() < 0) continue;
      size_t id = v["id"].get<size_t>();
      if (!in_batch.count(id) || verdict.count(id)) continue;  // verdicts about other batches' ids are ignored
      verdict[id] = v["similar"].is_boolean() && v["similar"].get<bool>();
    }
  }
  for (size_t i = 0; i < expand.size(); ++i) {
    const Step* c = expand[i].second;
    st.judged.insert(c->key);
    bool ok = verdict.count(i) && verdict[i];
    tj["verification"].push_back({{"function", run.name(c->function)},
                                  {"step", c->description},
                                  {"similarity", expand[i].first},
                                  {"similar", ok},
                                  {"judged", verdict.count(i) > 0}});
    if (!ok) continue;
    // "We add the verified context steps into the initial seeds" (4.2): later rounds' expansion and the
    // calibration examples count them, and RQ2 pairs carry their similarities.
    st.seeds.push_back(c);
    st.contexts.push_back({c->function, c->description, c->snippet, expand[i].first, "expansion"});
  }
}

}  // namespace

std::vector<std::vector<size_t>> verification_batches(const std::vector<size_t>& candidate_chars, size_t fixed_chars,
                                                      int budget_tokens) {
  std::vector<std::vector<size_t>> batches(1);
  size_t chars = fixed_chars;
  for (size_t i = 0; i < candidate_chars.size(); ++i) {
    size_t c = candidate_chars[i];
    if (!batches.back().empty() && (chars + c) / 4 > static_cast<size_t>(std::max(budget_tokens, 0))) {
      batches.emplace_back();
      chars = fixed_chars;
    }
    batches.back().push_back(i);
    chars += c;
  }
  if (batches.back().empty()) batches.pop_back();
  return batches;
}

void expand_seeds(OnlineRun& run, TargetStepState& st, json& tj) {
  std::vector<std::pair<double, const Step*>> expand;
  std::set<std::string> seed_keys;
  for (const Step* s : st.seeds) seed_keys.insert(s->key);
  if (static_cast<int>(st.seeds.size()) >= run.p.expand_k) {
    for (const Step* c : run.steps.pool) {
      if (seed_keys.count(c->key) || st.judged.count(c->key)) continue;
      int agree = 0;
      for (const Step* s : st.seeds)
        if (cosine(c->debiased, s->debiased) > run.p.expand_tau) ++agree;
      if (agree >= run.p.expand_k) expand.emplace_back(run.sim(st.debiased, c), c);
    }
  }
  std::stable_sort(expand.begin(), expand.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  tj["expansion"] = {{"seeds", st.seeds.size()}, {"candidates", expand.size()}};
  if (static_cast<int>(expand.size()) > run.p.verify_top) expand.resize(static_cast<size_t>(run.p.verify_top));
  verify_expansion(run, st, expand, tj);
}

}  // namespace repoctx
