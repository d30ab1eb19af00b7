// ProjAgent 4.2, Agentic Seed Finding: the seed agent (agent.h) explores the repository and proposes
// functions; each proposal goes through the paper's four-stage filter here: (1) steps below projection
// similarity 0.75 are discarded, (2) steps above 0.95 to an existing seed are redundant, (3) the LLM
// verifies the rest, (4) of the accepted, the most similar becomes a seed. A rejection goes back to the
// agent with its reasons.
#include <algorithm>

#include "retrieve/procedural/agent.h"
#include "retrieve/procedural/agent_tools.h"
#include "retrieve/procedural/stages.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;

void OnlineRun::add_to_pool(int f) {
  if (steps.decomposed.count(f)) return;
  auto before = steps.pool.size();
  process_functions(e, factory, {f}, steps, online_decompositions, "decompose_proposal", 1);
  for (size_t i = before; i < steps.pool.size(); ++i)
    steps.pool[i]->debiased = debias(steps.pool[i]->projection, steps.mp);
}

namespace {

std::string num(double x, size_t chars) {
  return std::to_string(x).substr(0, chars);
}

AgentVerdict reject(json& fj, json& tj, std::string feedback, const std::string& outcome = "") {
  AgentVerdict v;
  v.feedback = std::move(feedback);
  fj["outcome"] = outcome.empty() ? v.feedback : outcome;
  tj["proposals"].push_back(fj);
  return v;
}

// The four-stage filter on a proposed function.
AgentVerdict judge_proposal(OnlineRun& run, TargetStepState& st, int f, json& tj) {
  if (f == run.ctx->target.entity || run.ctx->is_hidden_entity(f)) {
    AgentVerdict v;
    v.feedback = "that is the function being implemented (or part of it); propose other functions";
    return v;
  }
  json fj = {{"function", run.name(f)}};
  if (run.excluded.count(f))
    return reject(fj, tj, "that is another target function of the benchmark, never a context; propose other functions");
  run.add_to_pool(f);
  const ProceduralParams& p = run.p;
  std::vector<std::pair<double, const Step*>> cands;
  double best = -2;
  for (const auto& s : run.steps.decomposed[f].steps) {
    if (!s.grounded || s.debiased.empty()) continue;
    double c = run.sim(st.debiased, &s);
    best = std::max(best, c);
    if (c >= p.seed_threshold) cands.emplace_back(c, &s);  // stage 1
  }
  st.best_similarity = std::max(st.best_similarity, best);
  fj["best_similarity"] = best;
  if (cands.empty())
    return reject(fj, tj,
                  best < -1.5 ? "none of its steps could be grounded in its code"
                              : "no step reaches projection similarity " + num(p.seed_threshold, 4) +
                                    " with the target step (best " + num(best, 5) + ")");
  std::vector<std::pair<double, const Step*>> distinct;  // stage 2: not redundant with existing seeds
  for (const auto& [c, s] : cands) {
    bool redundant = false;
    for (const Step* seed : st.seeds)
      if (cosine(s->debiased, seed->debiased) > p.redundancy) redundant = true;
    if (!redundant && !st.judged.count(s->key)) distinct.emplace_back(c, s);
  }
  if (distinct.empty())
    return reject(fj, tj,
                  "its similar steps duplicate seeds already found (similarity > " + num(p.redundancy, 4) + ")");
  std::vector<const Step*> to_verify;
  for (const auto& [c, s] : distinct) to_verify.push_back(s);
  auto verdicts = verify_candidates(run, st.text(), to_verify);  // stage 3
  std::vector<std::string> reasons;
  const Step* chosen = nullptr;
  double chosen_sim = -2;
  for (size_t i = 0; i < to_verify.size(); ++i) {
    st.judged.insert(to_verify[i]->key);
    fj["verdicts"].push_back({{"step", to_verify[i]->description},
                              {"similarity", distinct[i].first},
                              {"same_operation", verdicts[i].first},
                              {"reason", verdicts[i].second}});
    if (verdicts[i].first && distinct[i].first > chosen_sim) {  // stage 4: most similar accepted
      chosen = to_verify[i];
      chosen_sim = distinct[i].first;
    }
    if (!verdicts[i].first) reasons.push_back(verdicts[i].second);
  }
  if (!chosen)
    return reject(fj, tj,
                  "its candidate steps were judged not procedurally similar: " + short_text(join(reasons, "; "), 400),
                  "rejected by verification");
  st.seeds.push_back(chosen);
  st.contexts.push_back({chosen->function, chosen->description, chosen->snippet, chosen_sim, "agent"});
  fj["outcome"] = "accepted";
  tj["proposals"].push_back(fj);
  AgentVerdict v;
  v.accepted = true;
  return v;
}

}  // namespace

void find_agent_seeds(OnlineRun& run, TargetStepState& st, json& tj) {
  RepoTools tools(run.e, run.ctx.get());
  SeedAgent agent(run.llm, tools, run.p);
  std::vector<std::string> seeds;
  for (const Step* s : st.seeds) seeds.push_back(s->description + " (" + run.name(s->function) + ")");
  tj["proposals"] = json::array();
  auto res = agent.run(st.text(), run.e.view().files()[run.ctx->target.file].path, tools.structure(), seeds,
                       [&](int f) { return judge_proposal(run, st, f, tj); });
  tj["agent"] = {{"tool_calls", res.tool_calls},
                 {"compactions", res.compactions},
                 {"compaction_trigger_tokens", res.compaction_trigger_tokens},
                 {"invalid_turns", res.invalid_turns},
                 {"stop", res.stop_reason},
                 {"turns", res.trace}};
}

}  // namespace repoctx
