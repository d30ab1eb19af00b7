// The procedural pipeline's driver: the offline stage (offline.cpp), the target's decomposition, then up
// to 5 rounds of initial seeds (seeds.cpp), agentic seed finding (agentic_seeds.cpp), seed expansion and
// verification (expansion.cpp) and plan confirmation (plan_confirmation.cpp) for the open target steps.
#include "retrieve/procedural/pipeline.h"

#include <algorithm>
#include <chrono>

#include "retrieve/procedural/stages.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/log.h"

namespace repoctx {

using nlohmann::json;

struct ProceduralPipeline::Impl {
  const Engine& e;
  // Every call is metered by purpose (GenerateRequest::purpose); the meters wrap the callers' backends.
  MeteredBackend llm;
  std::unique_ptr<MeteredBackend> emb, hid;  // none when only the target is decomposed
  bool embedder_is_llm = false;
  std::string semantic_embedder;  // the embedder role's identity ("" when none was loaded)
  ProceduralParams p;
  std::shared_ptr<const TargetContext> ctx;
  std::unique_ptr<StepFactory> factory;
  StepPool steps;
  std::unordered_set<int> excluded;
  LlmUsage offline_usage;
  json trace = json::object();
  std::string stage;  // what is running (reported when interrupted)
  std::chrono::steady_clock::time_point t0;

  Impl(const Engine& e_, const Models& m, ProceduralParams p_) : e(e_), llm(m.need_llm("procedural retrieval")), p(p_) {
    if (p.retrieval) {
      LlmBackend& embedder = m.need_snippet_embedder("procedural retrieval (snippet validation, ProjAgent 4.1)");
      embedder_is_llm = &embedder == m.llm;
      semantic_embedder = m.embedder ? m.embedder->identity() : "";
      emb = std::make_unique<MeteredBackend>(embedder);
      hid = std::make_unique<MeteredBackend>(m.need_hidden("procedural retrieval"));
    }
  }

  Models models() { return Models{&llm, emb ? emb.get() : nullptr, hid.get()}; }

  LlmUsage usage() const {
    LlmUsage u = llm.usage();
    if (emb) u.add(emb->usage());
    if (hid) u.add(hid->usage());
    return u;
  }

  std::string name(int f) const { return e.target_name(f); }

  json models_trace() const {
    json j = {{"llm", llm.identity()}};
    // Which model served which role: the snippet embedder validates snippets (4.1); the embedder, when one
    // was loaded, serves eq. 6 (the generator's semantic contexts).
    if (emb) j["snippet_embedder"] = emb->identity(), j["snippet_embedder_is_llm"] = embedder_is_llm;
    if (!semantic_embedder.empty()) j["embedder"] = semantic_embedder;
    if (hid) j["hidden_states"] = hid->identity();
    return j;
  }

  // Target decomposition: signature and docstring only; each step's projection (none: the step is reported
  // without context).
  std::vector<TargetStepState> decompose_target(const TargetRef& target, bool project) {
    stage = "target decomposition";
    FunctionDecomposition td = factory->decompose_target(target.entity);
    json tdj = {{"steps", json::array()}};
    if (!td.error.empty()) tdj["error"] = td.error;
    std::vector<TargetStepState> states;
    for (const auto& s : td.steps) {
      TargetStepState st;
      st.id = static_cast<int>(states.size());
      st.description = s.description;
      tdj["steps"].push_back({{"id", st.id}, {"description", s.description}});
      if (project) {
        auto proj = factory->project_text(s.description, "");
        if (proj.empty()) {
          st.stuck = true;
          tdj["steps"].back()["error"] = "no projection: the model gave no response to the reasoning prompt";
        } else {
          st.debiased = debias(proj, steps.mp);
        }
      }
      states.push_back(std::move(st));
    }
    trace["target_decomposition"] = tdj;
    return states;
  }

  // One round for one open target step: initial seeds, the agent, expansion and verification.
  void search_step(OnlineRun& run, TargetStepState& st, int r, json& rj) {
    if (r > 1) {
      auto proj = factory->project_text(st.text(), "");
      if (proj.empty())  // keep the previous round's projection: the refined query adds nothing usable
        rj["projection_errors"].push_back({{"step", st.id}, {"query", st.query}});
      else
        st.debiased = debias(proj, steps.mp);
    }
    st.rounds = r;
    json tj = {{"step", st.id}, {"description", st.text()}};
    find_initial_seeds(run, st, tj);
    if (p.agent && !p.full_search) find_agent_seeds(run, st, tj);
    expand_seeds(run, st, tj);
    log_info("procedural: round {} step {}: {} seed(s), {} expansion candidate(s), {} context(s)", r, st.id,
             st.seeds.size(), tj["expansion"]["candidates"].get<size_t>(), st.contexts.size());
    rj["target_steps"].push_back(tj);
  }

  void rounds(std::vector<TargetStepState>& states) {
    trace["rounds"] = json::array();
    OnlineRun run{e, llm, p, ctx, *factory, steps, excluded, trace["online_decompositions"]};
    for (int r = 1; r <= p.max_rounds; ++r) {
      std::vector<TargetStepState*> open;
      for (auto& st : states)
        if (!st.confirmed && !st.stuck) open.push_back(&st);
      if (open.empty() || steps.pool.empty()) break;
      stage = "round " + std::to_string(r);
      // Per open step: up to seed_top verifications, the agent's budget (each proposal may add a
      // decomposition), about 2 verification batches; then one plan confirmation.
      int per_step = p.seed_top + (p.agent && !p.full_search ? p.agent_budget : 0) + 2;
      log_info("procedural: round {}/{}: {} open target step(s), up to ~{} LLM calls ahead in this round", r,
               p.max_rounds, open.size(), per_step * static_cast<int>(open.size()) + 1);
      json rj = {{"round", r}, {"target_steps", json::array()}};
      for (auto* st : open) search_step(run, *st, r, rj);
      confirm_plan(run, open, rj);
      trace["rounds"].push_back(rj);
    }
  }

  std::string empty_reason(const std::vector<TargetStepState>& states) const {
    for (const auto& st : states)
      if (!st.contexts.empty()) return "";
    const json& td = trace["target_decomposition"];
    if (td.contains("error")) return "the target could not be decomposed: " + td["error"].get<std::string>();
    if (states.empty()) return "the model listed no step for the target";
    if (!p.retrieval) return "procedural retrieval is off (retrieval=false): the target is only decomposed";
    if (steps.pool.empty())
      return "no grounded context step: none of the " + std::to_string(steps.decomposed.size()) +
             " decomposed context functions has a step that passed validation (the trace's "
             "offline.decompositions says why for each)";
    double best = -2;
    bool projected = false;
    for (const auto& st : states) {
      best = std::max(best, st.best_similarity);
      projected |= !st.debiased.empty();
    }
    if (!projected) return "no target step has a projection (the model gave no response to the reasoning prompt)";
    if (best < p.seed_threshold)
      return "no context step reached projection similarity " + std::to_string(p.seed_threshold).substr(0, 4) +
             " with a target step (best " + std::to_string(best).substr(0, 5) + ")";
    return "every candidate context was rejected by the LLM's verification (the trace's rounds say why)";
  }

  ProceduralOutcome finish(ProceduralOutcome out) {
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.usage = usage();
    trace["seconds"] = secs;
    trace["llm_seconds"] = out.usage.total().seconds;
    trace["non_llm_seconds"] = secs - out.usage.total().seconds;
    trace["llm_usage"] = out.usage.to_json();
    trace["llm_usage_by_stage"] = {{"offline", offline_usage.to_json()},
                                   {"online", out.usage.since(offline_usage).to_json()}};
    if (!out.empty_reason.empty()) trace["empty_reason"] = out.empty_reason;
    out.trace = trace;
    return out;
  }

  // The outcome, and RQ2's pairs: every grounded context step against the seeds of each target step.
  ProceduralOutcome outcome(const TargetRef& target, const std::vector<TargetStepState>& states,
                            std::vector<Rq2Pair>& rq2) {
    ProceduralOutcome out;
    rq2.clear();
    for (const auto& st : states) {
      TargetStepResult res;
      res.id = st.id;
      res.description = st.description;
      res.query = st.query;
      res.confirmed = st.confirmed;
      res.rounds = st.rounds;
      res.contexts = st.contexts;
      std::stable_sort(res.contexts.begin(), res.contexts.end(),
                       [](const auto& a, const auto& b) { return a.similarity > b.similarity; });
      out.steps.push_back(std::move(res));
      if (st.seeds.empty()) continue;
      for (const Step* c : steps.pool) {
        // A seed against the seeds is no pair: its similarity to itself is 1 by definition.
        if (std::find(st.seeds.begin(), st.seeds.end(), c) != st.seeds.end()) continue;
        Rq2Pair pr;
        pr.target_step = name(target.entity) + "#" + std::to_string(st.id);
        pr.context_step = name(c->function) + "#" + std::to_string(c->ord);
        pr.target_description = st.description;
        pr.context_description = c->description;
        pr.context_snippet = c->snippet;
        for (const Step* s : st.seeds) pr.seed_similarities.push_back(cosine(c->debiased, s->debiased));
        rq2.push_back(std::move(pr));
      }
    }
    out.empty_reason = empty_reason(states);
    if (!out.empty_reason.empty()) log_warn("procedural: no context: {}", out.empty_reason);
    return out;
  }

  // The target and the benchmark's other targets, the target first.
  std::vector<int> all_targets(const TargetRef& target, const std::vector<int>& bench_targets) {
    std::vector<int> targets{target.entity};
    for (int t : bench_targets)
      if (std::find(targets.begin(), targets.end(), t) == targets.end()) targets.push_back(t);
    json names = json::array();
    for (size_t i = 1; i < targets.size(); ++i) names.push_back(name(targets[i]));
    trace["withheld"] = names;
    return targets;
  }

  ProceduralOutcome run_stages(const TargetRef& target, const std::vector<int>& bench_targets,
                               std::vector<Rq2Pair>& rq2) {
    auto targets = all_targets(target, bench_targets);
    excluded = excluded_functions(e, targets);
    if (!p.retrieval) return finish(outcome(target, decompose_target(target, false), rq2));
    stage = "offline";
    trace["offline"] = json::object();
    LlmUsage before = usage();
    run_offline_stage({e, models(), p, *factory, targets, excluded, [this] { return usage(); }}, steps,
                      trace["offline"]);
    offline_usage = usage().since(before);
    auto states = decompose_target(target, true);
    log_info("procedural: target decomposed into {} step(s); {} grounded context steps in the pool", states.size(),
             steps.pool.size());
    rounds(states);
    return finish(outcome(target, states, rq2));
  }

  ProceduralOutcome run(const TargetRef& target, std::shared_ptr<const TargetContext> context,
                        const std::vector<int>& bench_targets, std::vector<Rq2Pair>& rq2, json& partial) {
    t0 = std::chrono::steady_clock::now();
    ctx = context ? std::move(context) : std::make_shared<const TargetContext>(e.make_context(target));
    factory = std::make_unique<StepFactory>(e, models(), p, ctx.get());
    steps = StepPool{};
    offline_usage = {};
    trace = {{"target", name(target.entity)},
             {"params", p.to_json()},
             {"models", models_trace()},
             {"online_decompositions", json::array()}};
    try {
      return run_stages(target, bench_targets, rq2);
    } catch (const Error& err) {
      if (err.code() != ExitCode::interrupted) throw;
      trace["interrupted"] = true;
      trace["interrupted_in"] = stage;
      partial = finish(ProceduralOutcome{}).trace;
      throw;
    }
  }
};

ProceduralPipeline::ProceduralPipeline(const Engine& e, const Models& m, ProceduralParams p)
    : impl_(std::make_unique<Impl>(e, m, p)) {}
ProceduralPipeline::~ProceduralPipeline() = default;

ProceduralOutcome ProceduralPipeline::run(const TargetRef& target, std::shared_ptr<const TargetContext> context,
                                          const std::vector<int>& withheld) {
  partial_ = nullptr;
  return impl_->run(target, std::move(context), withheld, rq2_, partial_);
}

}  // namespace repoctx
