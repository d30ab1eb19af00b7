#include "retrieve/procedural/pipeline.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <set>
#include <unordered_set>

#include "llm/prompts.h"
#include "llm/structured.h"
#include "projection/debias.h"
#include "retrieve/function_selection.h"
#include "retrieve/procedural/agent.h"
#include "retrieve/procedural/agent_tools.h"
#include "retrieve/procedural/decompose.h"
#include "util/error.h"
#include "util/log.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;

namespace {

struct TargetStepState {
  int id = 0;
  std::string description, query;
  std::vector<float> debiased;
  bool confirmed = false;
  int rounds = 0;
  bool stuck = false;                       // no refined query: another round would repeat the same work
  std::vector<ProceduralContext> contexts;  // seeds first, then verified expansions
  std::vector<const Step*> seeds;
  std::set<std::string> judged;  // step keys already verified for this target step
};

std::string short_text(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(0, n) + "...";
}

}  // namespace

struct ProceduralPipeline::Impl {
  const Engine& e;
  // Every call is metered by stage (GenerateRequest::purpose); the meters wrap the callers' backends.
  MeteredBackend llm, emb;
  std::unique_ptr<MeteredBackend> hid;  // the white-box model; none when only the target is decomposed
  ProceduralParams p;
  std::shared_ptr<const TargetContext> ctx;
  std::unique_ptr<StepFactory> factory;
  std::map<int, FunctionDecomposition> decomposed;
  std::vector<Step*> pool;  // grounded, projected context steps
  MuPc1 mp;
  std::unordered_set<int> excluded;  // targets and what the hidden body defines
  json trace = json::object();

  Impl(const Engine& e_, LlmBackend& l, LlmBackend& m, LlmBackend* h, ProceduralParams p_)
      : e(e_), llm(l), emb(m), hid(h ? std::make_unique<MeteredBackend>(*h) : nullptr), p(p_) {}

  LlmUsage usage() const {
    LlmUsage u = llm.usage();
    u.add(emb.usage());
    if (hid) u.add(hid->usage());
    return u;
  }

  std::string name(int f) const { return e.target_name(f); }

  std::vector<int> context_functions(const std::vector<int>& files) const {
    std::vector<int> out;
    const auto& ents = e.view().entities();
    for (int f : files) {
      const FileRec& fr = e.view().files()[f];
      for (int i = fr.first_entity; i < fr.first_entity + fr.n_entities; ++i) {
        const auto& en = ents[i];
        if (!is_callable(en.kind) || en.body_start_line <= 0) continue;
        if (en.qualname.find("<locals>") != std::string::npos) continue;
        if (excluded.count(i) || (ctx && ctx->is_hidden_entity(i)) || decomposed.count(i)) continue;
        if (p.max_context_functions > 0 && static_cast<int>(decomposed.size() + out.size()) >= p.max_context_functions)
          return out;
        out.push_back(i);
      }
    }
    return out;
  }

  // Decomposes, validates and projects functions; returns the raw projections of their grounded steps.
  std::vector<std::vector<float>> process(const std::vector<int>& functions) {
    std::vector<std::vector<float>> out;
    const size_t chunk = 16;  // requests sent together (concurrently on an OpenAI-compatible fleet)
    for (size_t a = 0; a < functions.size(); a += chunk) {
      std::vector<int> part(functions.begin() + static_cast<long>(a),
                            functions.begin() + static_cast<long>(std::min(functions.size(), a + chunk)));
      auto ds = factory->decompose_context(part);
      for (auto& d : ds) {
        int f = d.function;
        decomposed[f] = std::move(d);
        auto& dec = decomposed[f];
        std::vector<Step*> grounded;
        for (auto& s : dec.steps)
          if (s.grounded) grounded.push_back(&s);
        if (!grounded.empty()) factory->project(grounded);
        for (Step* s : grounded) {
          if (s->projection.empty()) {
            s->grounded = false;
            s->validation.rejection = "no projection: the model gave no response to the reasoning prompt";
            continue;
          }
          pool.push_back(s);
          out.push_back(s->projection);
        }
        json tj = {{"function", name(f)}, {"steps", json::array()}};
        if (!dec.error.empty()) tj["error"] = dec.error;
        for (const auto& s : dec.steps)
          tj["steps"].push_back({{"description", s.description},
                                 {"snippet", short_text(s.snippet, 400)},
                                 {"grounded", s.grounded},
                                 {"validation", s.validation.to_json()}});
        trace["decompositions"].push_back(tj);
      }
    }
    return out;
  }

  double sim(const std::vector<float>& a, const Step* b) const { return cosine(a, b->debiased); }

  // LLM verification of candidate steps for a target step (initial seeds, agent proposals).
  std::vector<std::pair<bool, std::string>> verify(const std::string& target_step,
                                                   const std::vector<const Step*>& cands) {
    static const PromptTemplate t = load_prompt("verify_seed");
    json schema = {{"type", "object"},
                   {"properties",
                    {{"same_operation", {{"type", "boolean"}}}, {"reason", {{"type", "string"}, {"maxLength", 200}}}}},
                   {"required", {"same_operation", "reason"}}};
    std::vector<StructuredCall> calls;
    for (const Step* c : cands)
      calls.push_back({"verify_seed",
                       render_prompt(t, {{"target_step", target_step},
                                         {"candidate_description", c->description},
                                         {"candidate_snippet", c->snippet},
                                         {"candidate_function", name(c->function)}}),
                       schema, p.judge_tokens});
    std::vector<std::pair<bool, std::string>> out;
    for (const auto& a : ask_json_many(llm, calls)) {
      auto same = a.boolean("same_operation");
      if (!same)
        out.emplace_back(false, "unusable verdict: " + a.missing("same_operation field"));
      else
        out.emplace_back(*same, a.string("reason"));
    }
    return out;
  }

  void add_to_pool(int f) {
    if (decomposed.count(f)) return;
    auto before = pool.size();
    process({f});
    for (size_t i = before; i < pool.size(); ++i) pool[i]->debiased = debias(pool[i]->projection, mp);
  }

  // The agent's four-stage filter on a proposed function.
  AgentVerdict judge_proposal(TargetStepState& st, const std::string& text, int f, json& tj) {
    AgentVerdict v;
    if (excluded.count(f) || (ctx && ctx->is_hidden_entity(f))) {
      v.feedback = "that is the function being implemented (or part of it); propose other functions";
      return v;
    }
    add_to_pool(f);
    std::vector<std::pair<double, const Step*>> cands;
    double best = -1;
    for (const auto& s : decomposed[f].steps) {
      if (!s.grounded || s.debiased.empty()) continue;
      double c = sim(st.debiased, &s);
      best = std::max(best, c);
      if (c >= p.seed_threshold) cands.emplace_back(c, &s);  // stage 1
    }
    json fj = {{"function", name(f)}, {"best_similarity", best}};
    if (cands.empty()) {
      v.feedback = decomposed[f].steps.empty() || best < -1.5
                       ? "none of its steps could be grounded in its code"
                       : "no step reaches projection similarity " + std::to_string(p.seed_threshold).substr(0, 4) +
                             " with the target step (best " + std::to_string(best).substr(0, 5) + ")";
      fj["outcome"] = v.feedback;
      tj["proposals"].push_back(fj);
      return v;
    }
    std::vector<std::pair<double, const Step*>> distinct;  // stage 2: not redundant with existing seeds
    for (const auto& [c, s] : cands) {
      bool redundant = false;
      for (const Step* seed : st.seeds)
        if (cosine(s->debiased, seed->debiased) > p.redundancy) redundant = true;
      if (!redundant && !st.judged.count(s->key)) distinct.emplace_back(c, s);
    }
    if (distinct.empty()) {
      v.feedback = "its similar steps duplicate seeds already found (similarity > " +
                   std::to_string(p.redundancy).substr(0, 4) + ")";
      fj["outcome"] = v.feedback;
      tj["proposals"].push_back(fj);
      return v;
    }
    std::vector<const Step*> to_verify;
    for (const auto& [c, s] : distinct) to_verify.push_back(s);
    auto verdicts = verify(text, to_verify);  // stage 3
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
    if (!chosen) {
      v.feedback = "its candidate steps were judged not procedurally similar: " + short_text(join(reasons, "; "), 400);
      fj["outcome"] = "rejected by verification";
      tj["proposals"].push_back(fj);
      return v;
    }
    st.seeds.push_back(chosen);
    st.contexts.push_back({chosen->function, chosen->description, chosen->snippet, chosen_sim, "agent"});
    fj["outcome"] = "accepted";
    tj["proposals"].push_back(fj);
    v.accepted = true;
    return v;
  }

  std::string problem_text() const {
    const auto& te = e.view().entities()[ctx->target.entity];
    return entity_signature_block(te);
  }

  void round(TargetStepState& st, int r, json& rj) {
    std::string text = st.query.empty() ? st.description : st.query + " " + st.description;
    json tj = {{"step", st.id}, {"description", text}};
    // Initial seeds: projection similarity >= 0.75, top 20, verified.
    std::vector<std::pair<double, const Step*>> cands;
    for (const Step* c : pool) {
      if (st.judged.count(c->key)) continue;
      double s = sim(st.debiased, c);
      if (s >= p.seed_threshold) cands.emplace_back(s, c);
    }
    std::sort(cands.begin(), cands.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    if (static_cast<int>(cands.size()) > p.seed_top) cands.resize(static_cast<size_t>(p.seed_top));
    std::vector<const Step*> to_verify;
    for (const auto& [s, c] : cands) to_verify.push_back(c);
    auto verdicts = verify(text, to_verify);
    tj["initial_seeds"] = json::array();
    for (size_t i = 0; i < to_verify.size(); ++i) {
      st.judged.insert(to_verify[i]->key);
      tj["initial_seeds"].push_back({{"function", name(to_verify[i]->function)},
                                     {"step", to_verify[i]->description},
                                     {"similarity", cands[i].first},
                                     {"same_operation", verdicts[i].first},
                                     {"reason", verdicts[i].second}});
      if (verdicts[i].first) {
        st.seeds.push_back(to_verify[i]);
        st.contexts.push_back(
            {to_verify[i]->function, to_verify[i]->description, to_verify[i]->snippet, cands[i].first, "seed"});
      }
    }
    // Agentic seed finding.
    if (p.agent && !p.full_search) {
      RepoTools tools(e, ctx.get());
      SeedAgent agent(llm, tools, p);
      std::vector<std::string> seeds;
      for (const Step* s : st.seeds) seeds.push_back(s->description + " (" + name(s->function) + ")");
      tj["proposals"] = json::array();
      auto run = agent.run(text, e.view().files()[ctx->target.file].path, tools.structure(), seeds,
                           [&](int f) { return judge_proposal(st, text, f, tj); });
      tj["agent"] = {{"tool_calls", run.tool_calls},
                     {"compactions", run.compactions},
                     {"invalid_turns", run.invalid_turns},
                     {"stop", run.stop_reason},
                     {"turns", run.trace}};
    }
    // Seed expansion: > 0.65 to at least 2 seeds; then the top 30 (by similarity to the target step)
    // are verified in batches with the seeds as calibration examples.
    std::vector<std::pair<double, const Step*>> expand;
    std::set<std::string> seed_keys;
    for (const Step* s : st.seeds) seed_keys.insert(s->key);
    if (static_cast<int>(st.seeds.size()) >= p.expand_k) {
      for (const Step* c : pool) {
        if (seed_keys.count(c->key) || st.judged.count(c->key)) continue;
        int agree = 0;
        for (const Step* s : st.seeds)
          if (cosine(c->debiased, s->debiased) > p.expand_tau) ++agree;
        if (agree >= p.expand_k) expand.emplace_back(sim(st.debiased, c), c);
      }
    }
    std::sort(expand.begin(), expand.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    tj["expansion"] = {{"candidates", expand.size()}};
    if (static_cast<int>(expand.size()) > p.verify_top) expand.resize(static_cast<size_t>(p.verify_top));
    verify_expansion(st, text, expand, tj);
    rj["target_steps"].push_back(tj);
    (void)r;
  }

  void verify_expansion(TargetStepState& st, const std::string& text,
                        const std::vector<std::pair<double, const Step*>>& expand, json& tj) {
    tj["verification"] = json::array();
    if (expand.empty()) return;
    static const PromptTemplate t = load_prompt("verify_batch");
    std::string examples;
    for (const Step* s : st.seeds)
      examples += "- " + s->description + "\n```python\n" + short_text(s->snippet, 400) + "\n```\n";
    // Batches within the token budget (about 4 characters per token).
    std::vector<std::vector<size_t>> batches(1);
    size_t chars = examples.size() + text.size() + 600;
    for (size_t i = 0; i < expand.size(); ++i) {
      size_t c = expand[i].second->description.size() + std::min<size_t>(expand[i].second->snippet.size(), 400) + 40;
      if (!batches.back().empty() && (chars + c) / 4 > static_cast<size_t>(p.verify_batch_tokens)) {
        batches.emplace_back();
        chars = examples.size() + text.size() + 600;
      }
      batches.back().push_back(i);
      chars += c;
    }
    std::vector<StructuredCall> calls;
    for (const auto& b : batches) {
      std::string cands;
      for (size_t i : b)
        cands += "[" + std::to_string(i) + "] " + expand[i].second->description + "\n```python\n" +
                 short_text(expand[i].second->snippet, 400) + "\n```\n";
      json schema = {{"type", "object"},
                     {"properties",
                      {{"verdicts",
                        {{"type", "array"},
                         {"maxItems", b.size()},
                         {"items",
                          {{"type", "object"},
                           {"properties",
                            {{"id", {{"type", "integer"}, {"minimum", 0}, {"maximum", expand.size()}}},
                             {"similar", {{"type", "boolean"}}}}},
                           {"required", {"id", "similar"}}}}}}}},
                     {"required", {"verdicts"}}};
      calls.push_back({"verify_expansion",
                       render_prompt(t, {{"problem", problem_text()},
                                         {"target_step", text},
                                         {"examples", examples.empty() ? "(none)" : examples},
                                         {"candidates", cands}}),
                       schema, p.judge_tokens + 16 * static_cast<int>(b.size())});
    }
    auto answers = ask_json_many(llm, calls);
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
        size_t id = v["id"].get<size_t>();
        if (!in_batch.count(id) || verdict.count(id)) continue;  // verdicts about other batches' ids are ignored
        verdict[id] = v["similar"].is_boolean() && v["similar"].get<bool>();
      }
    }
    for (size_t i = 0; i < expand.size(); ++i) {
      const Step* c = expand[i].second;
      st.judged.insert(c->key);
      bool ok = verdict.count(i) && verdict[i];
      tj["verification"].push_back({{"function", name(c->function)},
                                    {"step", c->description},
                                    {"similarity", expand[i].first},
                                    {"similar", ok},
                                    {"judged", verdict.count(i) > 0}});
      if (ok) st.contexts.push_back({c->function, c->description, c->snippet, expand[i].first, "expansion"});
    }
  }

  void confirm(std::vector<TargetStepState*>& open, json& rj) {
    static const PromptTemplate t = load_prompt("plan_confirmation");
    std::string steps;
    for (const auto* st : open) {
      steps += "[" + std::to_string(st->id) + "] " +
               (st->query.empty() ? st->description : st->query + " " + st->description) + "\n";
      if (st->contexts.empty()) steps += "    (no context retrieved)\n";
      for (const auto& c : st->contexts) steps += "    - " + c.description + " (" + name(c.function) + ")\n";
    }
    json schema = {{"type", "object"},
                   {"properties",
                    {{"steps",
                      {{"type", "array"},
                       {"maxItems", open.size()},
                       {"items",
                        {{"type", "object"},
                         {"properties",
                          {{"id", {{"type", "integer"}, {"minimum", 0}, {"maximum", 1000}}},
                           {"sufficient", {{"type", "boolean"}}},
                           {"query", {{"type", "string"}, {"maxLength", 200}}}}},
                         {"required", {"id", "sufficient", "query"}}}}}}}},
                   {"required", {"steps"}}};
    auto answer = ask_json(llm, {"plan_confirmation", render_prompt(t, {{"problem", problem_text()}, {"steps", steps}}),
                                 schema, p.judge_tokens + 96 * static_cast<int>(open.size())});
    json cj = json::array();
    std::map<int, TargetStepState*> by_id;
    for (auto* st : open) by_id[st->id] = st;
    std::set<int> answered;
    if (const json* answered_steps = answer.array("steps")) {
      for (const auto& v : *answered_steps) {
        if (!v.is_object() || !v.contains("id") || !v["id"].is_number_integer()) continue;
        int id = v["id"].get<int>();
        auto it = by_id.find(id);
        if (it == by_id.end() || answered.count(id)) continue;
        answered.insert(id);
        TargetStepState* st = it->second;
        bool ok = v.contains("sufficient") && v["sufficient"].is_boolean() && v["sufficient"].get<bool>();
        std::string q = std::string(trim(json_string(v, "query")));
        cj.push_back({{"step", id}, {"sufficient", ok}, {"query", q}});
        if (ok)
          st->confirmed = true;
        else if (q.empty() || q == st->query)
          st->stuck = true;
        else
          st->query = q;
      }
    } else {
      rj["plan_confirmation_error"] = answer.missing("steps array");
    }
    for (auto* st : open)
      if (!answered.count(st->id) && !st->confirmed) st->stuck = true;  // no verdict: nothing new to search for
    rj["plan_confirmation"] = cj;
  }

  // The target's steps without any retrieval (the no-procedural ablation): no projection, no context.
  ProceduralOutcome decompose_only(const TargetRef& target, std::chrono::steady_clock::time_point t0) {
    FunctionDecomposition td = factory->decompose_target(target.entity);
    json tdj = {{"steps", json::array()}};
    if (!td.error.empty()) tdj["error"] = td.error;
    ProceduralOutcome out;
    for (const auto& s : td.steps) {
      TargetStepResult res;
      res.id = static_cast<int>(out.steps.size());
      res.description = s.description;
      tdj["steps"].push_back({{"id", res.id}, {"description", s.description}});
      out.steps.push_back(std::move(res));
    }
    trace["target_decomposition"] = tdj;
    return finish(std::move(out), t0);
  }

  ProceduralOutcome finish(ProceduralOutcome out, std::chrono::steady_clock::time_point t0) {
    double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out.usage = usage();
    trace["seconds"] = secs;
    trace["llm_seconds"] = out.usage.total().seconds;
    trace["non_llm_seconds"] = secs - out.usage.total().seconds;
    trace["llm_usage"] = out.usage.to_json();
    out.trace = std::move(trace);
    return out;
  }

  ProceduralOutcome run(const TargetRef& target, std::shared_ptr<const TargetContext> context,
                        const std::vector<int>& bench_targets, std::vector<Rq2Pair>& rq2) {
    auto t0 = std::chrono::steady_clock::now();
    ctx = context ? std::move(context) : std::make_shared<const TargetContext>(e.make_context(target));
    factory = std::make_unique<StepFactory>(e, Models{&llm, &emb, hid.get()}, p, ctx.get());
    excluded.clear();
    excluded.insert(target.entity);
    for (int t : bench_targets) excluded.insert(t);
    trace = {{"target", name(target.entity)}, {"params", p.to_json()}, {"decompositions", json::array()}};
    if (!p.retrieval) return decompose_only(target, t0);
    // 4.1 function selection.
    std::vector<int> targets(excluded.begin(), excluded.end());
    auto sel = select_functions(e, targets, p.full_search ? 1 << 30 : p.selected_files);
    trace["function_selection"] = json::array();
    for (int f : sel.selected_files) trace["function_selection"].push_back(e.view().files()[f].path);
    const auto& sub = factory->subspace();
    trace["subspace"] = {{"d", sub.dim()},
                         {"k", sub.k()},
                         {"reasoning_dim", sub.reasoning_dim()},
                         {"reasoning_fraction", sub.reasoning_fraction()}};
    auto P = process(context_functions(sel.selected_files));
    // Algorithm 1: 5 more ranked files at a time until mu and PC1 are stable.
    size_t next_file = sel.selected_files.size();
    StabilityOptions so;
    so.tau_mu = p.tau_mu;
    so.tau_pc1 = p.tau_pc1;
    so.batch_files = p.batch_files;
    auto stab = estimate_stable_mu_pc1(
        P,
        [&]() -> std::optional<std::vector<std::vector<float>>> {
          if (next_file >= sel.ranked_files.size()) return std::nullopt;
          if (p.max_context_functions > 0 && static_cast<int>(decomposed.size()) >= p.max_context_functions)
            return std::nullopt;
          std::vector<int> files;
          for (int i = 0; i < p.batch_files && next_file < sel.ranked_files.size(); ++i, ++next_file)
            files.push_back(sel.ranked_files[next_file].file);
          return process(context_functions(files));
        },
        so);
    mp = stab.estimate;
    json hist = json::array();
    for (const auto& h : stab.history)
      hist.push_back(
          {{"projections", h.n}, {"mu_change", h.mu_change}, {"pc1_abs_cos", h.pc1_cos}, {"stable", h.stable}});
    trace["mu_pc1"] = {
        {"projections", mp.n}, {"converged", stab.converged}, {"pc1_explained", mp.explained}, {"history", hist}};
    for (Step* s : pool) s->debiased = debias(s->projection, mp);
    trace["grounded_context_steps"] = pool.size();
    // Target decomposition: signature and docstring only.
    FunctionDecomposition td = factory->decompose_target(target.entity);
    json tdj = {{"steps", json::array()}};
    if (!td.error.empty()) tdj["error"] = td.error;
    std::vector<TargetStepState> states;
    for (const auto& s : td.steps) {
      TargetStepState st;
      st.id = static_cast<int>(states.size());
      st.description = s.description;
      auto proj = factory->project_text(s.description, "");
      if (proj.empty())
        st.stuck = true;  // nothing to compare: the step is reported without context
      else
        st.debiased = debias(proj, mp);
      tdj["steps"].push_back({{"id", st.id}, {"description", s.description}});
      if (proj.empty())
        tdj["steps"].back()["error"] = "no projection: the model gave no response to the reasoning prompt";
      states.push_back(std::move(st));
    }
    trace["target_decomposition"] = tdj;
    trace["rounds"] = json::array();
    if (pool.empty()) trace["note"] = "no grounded context step: no procedural context can be retrieved";
    for (int r = 1; r <= p.max_rounds; ++r) {
      std::vector<TargetStepState*> open;
      for (auto& st : states)
        if (!st.confirmed && !st.stuck) open.push_back(&st);
      if (open.empty() || pool.empty()) break;
      json rj = {{"round", r}, {"target_steps", json::array()}};
      for (auto* st : open) {
        if (r > 1) {
          auto proj = factory->project_text(st->query + " " + st->description, "");
          if (proj.empty()) {  // keep the previous round's projection: the refined query adds nothing usable
            rj["projection_errors"].push_back({{"step", st->id}, {"query", st->query}});
          } else {
            st->debiased = debias(proj, mp);
          }
        }
        st->rounds = r;
        round(*st, r, rj);
      }
      confirm(open, rj);
      trace["rounds"].push_back(rj);
    }
    // Outcome, and RQ2's pairs: every grounded context step against the seeds of each target step.
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
      std::sort(res.contexts.begin(), res.contexts.end(),
                [](const auto& a, const auto& b) { return a.similarity > b.similarity; });
      out.steps.push_back(std::move(res));
      if (st.seeds.empty()) continue;
      for (const Step* c : pool) {
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
    return finish(std::move(out), t0);
  }
};

ProceduralPipeline::ProceduralPipeline(const Engine& e, const Models& m, ProceduralParams p)
    : impl_(std::make_unique<Impl>(e, m.need_llm("procedural retrieval"),
                                   m.embedder ? *m.embedder : m.need_llm("procedural retrieval"),
                                   p.retrieval ? &m.need_hidden("procedural retrieval") : nullptr, p)) {}
ProceduralPipeline::~ProceduralPipeline() = default;

ProceduralOutcome ProceduralPipeline::run(const TargetRef& target, std::shared_ptr<const TargetContext> context,
                                          const std::vector<int>& benchmark_targets) {
  return impl_->run(target, std::move(context), benchmark_targets, rq2_);
}

}  // namespace repoctx
