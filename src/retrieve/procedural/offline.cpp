// ProjAgent 4.1, the offline stage: function selection, decomposition and validation of the selected
// context functions, step projections, and Algorithm 1 (stable mu / PC1, 5 more ranked files at a time),
// computed once per (repository state, models, parameters, benchmark targets) and stored as an artifact
// in the index database (offline_store.h), so that every target of a benchmark and every later run reuses
// it without a single LLM call.
#include <algorithm>
#include <chrono>

#include "llm/prompts.h"
#include "retrieve/function_selection.h"
#include "retrieve/procedural/offline_store.h"
#include "retrieve/procedural/stages.h"
#include "util/cancel.h"
#include "util/hash.h"
#include "util/log.h"

namespace repoctx {

using nlohmann::json;

std::string short_text(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(0, n) + "...";
}

std::unordered_set<int> excluded_functions(const Engine& e, const std::vector<int>& targets) {
  const auto& ents = e.view().entities();
  std::unordered_set<int> out(targets.begin(), targets.end());
  for (int t : targets) {
    const FileRec& fr = e.view().files()[ents[t].file];
    for (int i = fr.first_entity; i < fr.first_entity + fr.n_entities; ++i)
      if (e.view().is_within(i, t) || e.view().is_within(t, i)) out.insert(i);  // inside it, or enclosing it
  }
  return out;
}

json decomposition_trace(const Engine& e, const FunctionDecomposition& d) {
  json tj = {{"function", e.target_name(d.function)}, {"steps", json::array()}};
  if (!d.error.empty()) tj["error"] = d.error;
  for (const auto& s : d.steps)
    tj["steps"].push_back({{"description", s.description},
                           {"snippet", short_text(s.snippet, 400)},
                           {"grounded", s.grounded},
                           {"validation", s.validation.to_json()}});
  return tj;
}

std::vector<std::vector<float>> process_functions(const Engine& e, StepFactory& factory,
                                                  const std::vector<int>& functions, StepPool& steps, json& trace,
                                                  const std::string& purpose, size_t chunk,
                                                  const std::function<void(size_t, size_t)>& on_chunk) {
  std::vector<std::vector<float>> out;
  chunk = std::max<size_t>(chunk, 1);
  for (size_t a = 0; a < functions.size(); a += chunk) {
    throw_if_interrupted("LLM answers so far are cached; re-run to resume");
    std::vector<int> part(functions.begin() + static_cast<long>(a),
                          functions.begin() + static_cast<long>(std::min(functions.size(), a + chunk)));
    for (auto& d : factory.decompose_context(part, purpose)) {
      int f = d.function;
      auto& dec = steps.decomposed[f] = std::move(d);
      std::vector<Step*> grounded;
      for (auto& s : dec.steps)
        if (s.grounded) grounded.push_back(&s);
      if (!grounded.empty()) factory.project(grounded);
      for (Step* s : grounded) {
        if (s->projection.empty()) {
          s->grounded = false;
          s->validation.rejection = "no projection: the model gave no response to the reasoning prompt";
          continue;
        }
        steps.pool.push_back(s);
        out.push_back(s->projection);
      }
      trace.push_back(decomposition_trace(e, dec));
    }
    if (on_chunk) on_chunk(std::min(functions.size(), a + chunk), functions.size());
  }
  return out;
}

namespace {

// Callable entities with a body in `files` that may be context and were not decomposed yet, up to the
// cost cap.
std::vector<int> context_functions(const OfflineInputs& in, const StepPool& steps, const std::vector<int>& files) {
  std::vector<int> out;
  const auto& ents = in.e.view().entities();
  for (int f : files) {
    const FileRec& fr = in.e.view().files()[f];
    for (int i = fr.first_entity; i < fr.first_entity + fr.n_entities; ++i) {
      const auto& en = ents[i];
      if (!is_callable(en.kind) || en.body_start_line <= 0) continue;
      if (en.qualname.find("<locals>") != std::string::npos) continue;
      if (in.excluded.count(i) || steps.decomposed.count(i)) continue;
      if (in.p.max_context_functions > 0 &&
          static_cast<int>(steps.decomposed.size() + out.size()) >= in.p.max_context_functions)
        return out;
      out.push_back(i);
    }
  }
  return out;
}

// What the artifact depends on: the indexed content of every file, the three models, the parameters the
// offline stage reads, the prompts it renders, and the benchmark's targets (they rank the files and are
// excluded).
std::string artifact_key(const OfflineInputs& in) {
  std::string files;
  for (const auto& fr : in.e.view().files()) files += fr.path + "\x1f" + fr.hash + "\x1e";
  json params = json::object();
  json all = in.p.to_json();
  for (const char* k : {"selected_files", "batch_files", "tau_mu", "tau_pc1", "rouge_threshold", "snippet_cosine",
                        "full_search", "max_context_functions", "max_steps", "description_chars", "snippet_chars",
                        "decompose_tokens", "judge_tokens", "projection_tokens"})
    params[k] = all[k];
  json prompts = json::object();
  for (const char* name : {"decompose_function", "judge_claim", "reidentify_snippet", "step_reasoning"}) {
    PromptTemplate t = load_prompt(name);
    prompts[name] = content_hash(t.system + "\x1f" + t.user);
  }
  std::vector<std::string> targets;
  for (int t : in.targets) targets.push_back(in.e.target_name(t));
  std::sort(targets.begin(), targets.end());
  json k = {{"format", kOfflineArtifactFormat},
            {"repository", content_hash(files)},
            {"llm", in.models.llm->identity()},
            {"embedder", in.models.embedder->identity()},
            {"hidden", in.models.hidden->identity()},
            {"params", params},
            {"prompts", prompts},
            {"targets", targets}};
  return content_hash(k.dump());
}

// Progress lines: what was done, and the LLM calls still ahead, estimated from the calls per function so
// far (before the first chunk, from a prior of one decomposition plus 2 validation/projection calls for
// each of about 4 steps).
struct OfflineProgress {
  const OfflineInputs& in;
  int64_t calls_at_start = 0;
  size_t functions_done = 0;
  explicit OfflineProgress(const OfflineInputs& i) : in(i), calls_at_start(calls()) {}
  int64_t calls() const { return in.usage ? in.usage().total().calls : 0; }
  double per_function() const {
    return functions_done ? static_cast<double>(calls() - calls_at_start) / static_cast<double>(functions_done) : 9.0;
  }
  void announce(const char* what, size_t n_files, size_t n_functions) const {
    log_info("procedural: offline stage: {} {} file(s), {} context function(s) to decompose (~{:.0f} LLM calls ahead)",
             what, n_files, n_functions, per_function() * static_cast<double>(n_functions));
  }
  std::chrono::steady_clock::time_point last_line{};
  void chunk(size_t done, size_t total, size_t base) {
    functions_done = base + done;
    auto now = std::chrono::steady_clock::now();
    if (done < total && now - last_line < std::chrono::seconds(2)) return;  // at most a line every 2 s
    last_line = now;
    log_info("procedural: offline stage: {}/{} functions decomposed, {} LLM calls so far (~{:.0f} ahead for these)",
             done, total, calls() - calls_at_start, per_function() * static_cast<double>(total - done));
  }
};

// Function selection, decomposition of the selected functions, then Algorithm 1; the trace record `oj` is
// filled as the work goes (an interrupted run keeps what was done).
void compute_offline(const OfflineInputs& in, StepPool& steps, json& oj) {
  oj["decompositions"] = json::array();
  auto sel = select_functions(in.e, in.targets, in.p.full_search ? 1 << 30 : in.p.selected_files);
  oj["function_selection"] = json::array();
  for (int f : sel.selected_files) oj["function_selection"].push_back(in.e.view().files()[f].path);
  OfflineProgress progress(in);
  auto process = [&](const std::vector<int>& functions) {
    size_t base = progress.functions_done;
    // Functions sent together: as many as the backend serves at once (a fleet's concurrency; one at a time
    // in process, so that progress and an interruption land function by function).
    size_t chunk = static_cast<size_t>(in.models.llm->capabilities().parallel);
    return process_functions(in.e, in.factory, functions, steps, oj["decompositions"], "decompose_context", chunk,
                             [&](size_t done, size_t total) { progress.chunk(done, total, base); });
  };
  auto first = context_functions(in, steps, sel.selected_files);
  progress.announce("function selection kept", sel.selected_files.size(), first.size());
  auto P = process(first);
  size_t next_file = sel.selected_files.size();
  StabilityOptions so;
  so.tau_mu = in.p.tau_mu;
  so.tau_pc1 = in.p.tau_pc1;
  so.batch_files = in.p.batch_files;
  auto stab = estimate_stable_mu_pc1(
      P,
      [&]() -> std::optional<std::vector<std::vector<float>>> {
        if (next_file >= sel.ranked_files.size()) return std::nullopt;
        if (in.p.max_context_functions > 0 && static_cast<int>(steps.decomposed.size()) >= in.p.max_context_functions)
          return std::nullopt;
        std::vector<int> files;
        for (int i = 0; i < in.p.batch_files && next_file < sel.ranked_files.size(); ++i, ++next_file)
          files.push_back(sel.ranked_files[next_file].file);
        auto more = context_functions(in, steps, files);
        progress.announce("Algorithm 1 adds", files.size(), more.size());
        return process(more);
      },
      so);
  steps.mp = stab.estimate;
  json hist = json::array();
  for (const auto& h : stab.history)
    hist.push_back(
        {{"projections", h.n}, {"mu_change", h.mu_change}, {"pc1_abs_cos", h.pc1_cos}, {"stable", h.stable}});
  oj["mu_pc1"] = {{"projections", steps.mp.n},
                  {"converged", stab.converged},
                  {"pc1_explained", steps.mp.explained},
                  {"history", hist}};
}

}  // namespace

void run_offline_stage(const OfflineInputs& in, StepPool& steps, json& oj) {
  const std::string key = artifact_key(in);
  const LlmUsage before = in.usage ? in.usage() : LlmUsage{};
  OfflineStore store(in.e.view().db_path());
  oj = {{"key", key}};
  std::string why_not;
  std::optional<json> stored;
  if (in.p.reuse_offline) stored = store.get(key);
  if (stored && artifact_to_pool(in.e, *stored, steps, &why_not)) {
    oj = (*stored)["trace"];
    oj["reused"] = true;
    oj["key"] = key;
    log_info("procedural: offline stage reused ({} grounded context steps; no LLM call)", steps.pool.size());
  } else {
    if (!why_not.empty()) log_warn("procedural: the stored offline stage cannot be used ({}); computing it", why_not);
    oj["reused"] = false;
    compute_offline(in, steps, oj);
  }
  steps.reindex();
  const auto& sub = in.factory.subspace();
  oj["subspace"] = {{"d", sub.dim()},
                    {"k", sub.k()},
                    {"energy_threshold", sub.threshold()},
                    {"reasoning_dim", sub.reasoning_dim()},
                    {"reasoning_fraction", sub.reasoning_fraction()}};
  for (Step* s : steps.pool) s->debiased = debias(s->projection, steps.mp);
  oj["withheld"] = in.targets.size();
  oj["context_functions"] = steps.decomposed.size();
  oj["grounded_context_steps"] = steps.pool.size();
  // This run's offline LLM work: none when the artifact was reused.
  oj["llm_usage"] = (in.usage ? in.usage().since(before) : LlmUsage{}).to_json();
  if (!oj["reused"].get<bool>()) {
    json stored_trace = oj;
    stored_trace.erase("reused");
    stored_trace.erase("key");
    stored_trace["llm_usage_when_computed"] = stored_trace["llm_usage"];
    stored_trace.erase("llm_usage");
    store.put(key, pool_to_artifact(in.e, steps, stored_trace));
  }
}

}  // namespace repoctx
