#include "retrieve/procedural/decompose.h"

#include <algorithm>
#include <cmath>
#include <unordered_set>

#include "index/embedding_store.h"
#include "llm/prompts.h"
#include "llm/structured.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/param_table.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;

namespace {

// Every parameter by its name in traces and --param: one table serves to_json and apply.
// 4.1: offline preprocessing, the subspace and step validation.
ParamTable<ProceduralParams> offline_rows() {
  return {
      REPOCTX_PARAM(ProceduralParams, "retrieval", retrieval,
                    .meaning = "false: decompose the target only (the no-procedural ablation)",
                    .source = "ProjAgent 5.4"),
      REPOCTX_PARAM(ProceduralParams, "selected_files", selected_files,
                    .meaning = "function selection: the top files decomposed offline", .min = 1, .max = 100000,
                    .source = "ProjAgent 4.1"),
      REPOCTX_PARAM(ProceduralParams, "batch_files", batch_files, .meaning = "Algorithm 1: files added per iteration",
                    .min = 1, .max = 100000, .source = "ProjAgent 4.1"),
      REPOCTX_PARAM(ProceduralParams, "tau_mu", tau_mu,
                    .meaning = "Algorithm 1 stops adding files once the debiasing mean moves less than this (eq. 4)",
                    .min = 0, .max = 1, .source = "ProjAgent 4.1"),
      REPOCTX_PARAM(
          ProceduralParams, "tau_pc1", tau_pc1,
          .meaning = "... and the first principal component's cosine to the previous one exceeds this (eq. 5)",
          .min = 0, .max = 1, .source = "ProjAgent 4.1"),
      REPOCTX_PARAM(ProceduralParams, "energy_threshold", energy_threshold,
                    .meaning = "reasoning subspace: the semantic directions are the fewest whose squared singular "
                               "values hold this share of the unembedding's energy; the rest span V_R",
                    .min = 0, .max = 1, .source = "ProjAgent 3"),
      REPOCTX_PARAM(ProceduralParams, "rouge_threshold", rouge_threshold,
                    .meaning = "step validation, stage 2: ROUGE-L of the description against the docstring", .min = 0,
                    .max = 1, .source = "ProjAgent 4.1"),
      REPOCTX_PARAM(ProceduralParams, "snippet_cosine", snippet_cosine,
                    .meaning = "snippet validation: cosine of description and snippet embeddings", .min = -1, .max = 1,
                    .source = "ProjAgent 4.1"),
      REPOCTX_PARAM(ProceduralParams, "full_search", full_search,
                    .meaning = "RQ1 coverage: decompose every context function offline", .source = "ProjAgent 5.2"),
      REPOCTX_PARAM(ProceduralParams, "max_context_functions", max_context_functions,
                    .meaning = "cost cap on functions decomposed offline (0: none, the paper's setting)", .min = 0,
                    .max = 100000000, .source = "repoctx"),
      REPOCTX_PARAM(ProceduralParams, "reuse_offline", reuse_offline,
                    .meaning = "load the stored offline artifact when one matches (false: compute it again)",
                    .source = "repoctx"),
  };
}

// 4.2: procedural retrieval, and the generation budgets.
ParamTable<ProceduralParams> online_rows() {
  return {
      REPOCTX_PARAM(ProceduralParams, "seed_threshold", seed_threshold,
                    .meaning = "initial seeds: projection similarity at least this", .min = -1, .max = 1,
                    .source = "ProjAgent 4.2"),
      REPOCTX_PARAM(ProceduralParams, "seed_top", seed_top, .meaning = "initial seeds: the top N verified by the LLM",
                    .min = 0, .max = 100000, .source = "ProjAgent 4.2"),
      REPOCTX_PARAM(ProceduralParams, "redundancy", redundancy,
                    .meaning = "agent proposals: drop candidates more similar than this to an existing seed", .min = -1,
                    .max = 1, .source = "ProjAgent 4.2"),
      REPOCTX_PARAM(ProceduralParams, "expand_tau", expand_tau, .meaning = "seed expansion: similarity above this ...",
                    .min = -1, .max = 1, .source = "ProjAgent 4.2"),
      REPOCTX_PARAM(ProceduralParams, "expand_k", expand_k, .meaning = "seed expansion: ... to at least k seeds",
                    .min = 1, .max = 100000, .source = "ProjAgent 4.2"),
      REPOCTX_PARAM(ProceduralParams, "verify_top", verify_top, .meaning = "verification of the top N expanded steps",
                    .min = 0, .max = 100000, .source = "ProjAgent 4.2"),
      REPOCTX_PARAM(ProceduralParams, "verify_batch_tokens", verify_batch_tokens,
                    .meaning = "verification batches within this prompt budget (estimated tokens)", .min = 1,
                    .max = 10000000, .source = "repoctx"),
      REPOCTX_PARAM(ProceduralParams, "max_rounds", max_rounds, .meaning = "plan confirmation rounds", .min = 1,
                    .max = 1000, .source = "ProjAgent 4.2"),
      REPOCTX_PARAM(ProceduralParams, "agent", agent, .meaning = "agentic seed finding", .source = "ProjAgent 4.2"),
      REPOCTX_PARAM(ProceduralParams, "agent_budget", agent_budget,
                    .meaning = "agent: tool calls per target step (the paper: a fixed budget, no number)", .min = 0,
                    .max = 10000, .source = "repoctx"),
      REPOCTX_PARAM(ProceduralParams, "agent_context_tokens", agent_context_tokens,
                    .meaning = "agent: compaction past this many estimated tokens of the conversation (0: 3/4 of "
                               "the model's context length less an answer; 6000 when the model reports none)",
                    .min = 0, .max = 10000000, .source = "repoctx"),
      REPOCTX_PARAM(ProceduralParams, "max_steps", max_steps, .meaning = "schema bound: steps per function (0: none)",
                    .min = 0, .max = 10000, .source = "repoctx"),
      REPOCTX_PARAM(ProceduralParams, "description_chars", description_chars,
                    .meaning = "schema bound: characters of a step's description (0: none)", .min = 0, .max = 10000000,
                    .source = "repoctx"),
      REPOCTX_PARAM(ProceduralParams, "snippet_chars", snippet_chars,
                    .meaning = "schema bound: characters of a step's snippet (0: none)", .min = 0, .max = 10000000,
                    .source = "repoctx"),
      REPOCTX_PARAM(ProceduralParams, "decompose_tokens", decompose_tokens,
                    .meaning = "generation budget of a decomposition", .min = 1, .max = 10000000,
                    .source = "ProjAgent 5.1"),
      REPOCTX_PARAM(ProceduralParams, "judge_tokens", judge_tokens, .meaning = "generation budget of a judgement",
                    .min = 1, .max = 10000000, .source = "repoctx"),
      REPOCTX_PARAM(ProceduralParams, "agent_tokens", agent_tokens, .meaning = "generation budget of an agent turn",
                    .min = 1, .max = 10000000, .source = "repoctx"),
      REPOCTX_PARAM(ProceduralParams, "projection_tokens", projection_tokens,
                    .meaning = "response tokens whose hidden states are pooled (0: all, as the paper)", .min = 0,
                    .max = 10000000, .source = "ProjAgent 4.1"),
  };
}

const ParamTable<ProceduralParams>& param_fields() {
  static const ParamTable<ProceduralParams> f = [] {
    ParamTable<ProceduralParams> t = offline_rows(), online = online_rows();
    t.insert(t.end(), online.begin(), online.end());
    return t;
  }();
  return f;
}

}  // namespace

json ProceduralParams::to_json() const {
  return params_to_json(*this, param_fields());
}

bool ProceduralParams::has(const std::string& name) {
  return has_param(param_fields(), name);
}

json ProceduralParams::catalogue() {
  return params_catalogue(param_fields(), "procedural");
}

void ProceduralParams::apply(const json& j) {
  apply_params(*this, j, param_fields(), "procedural parameter");
}

std::string Rq2Pair::to_jsonl() const {
  json j = {{"target_step", target_step},
            {"context_step", context_step},
            {"target_description", target_description},
            {"context_description", context_description},
            {"context_snippet", context_snippet},
            {"seed_similarities", seed_similarities}};
  return j.dump(-1, ' ', false, json::error_handler_t::replace);
}

json StepValidation::to_json() const {
  json j = {{"description", description_stage}, {"snippet", snippet_stage}};
  if (rouge > 0) j["rouge_l"] = rouge;
  if (!judge_reason.empty()) j["judge_reason"] = judge_reason;
  if (snippet_cosine > -2) j["snippet_cosine"] = snippet_cosine;
  if (!rejection.empty()) j["rejected"] = rejection;
  return j;
}

StepFactory::StepFactory(const Engine& e, const Models& m, const ProceduralParams& p, const TargetContext* hidden)
    : e_(e), llm_(m.need_llm("step decomposition")), models_(m), p_(p), hidden_(hidden) {}

const ReasoningSubspace& StepFactory::subspace() {
  if (!subspace_) {
    LlmBackend& hidden_states = models_.need_hidden("step projection");
    SubspaceOptions so;
    so.energy_threshold = p_.energy_threshold;
    subspace_ = std::make_unique<ReasoningSubspace>(ReasoningSubspace::compute(hidden_states, so));
    StepProjectionOptions po;
    po.max_tokens = p_.projection_tokens;  // 0: every response token (the paper's pooling)
    projector_ = std::make_unique<StepProjector>(hidden_states, *subspace_, po);
  }
  return *subspace_;
}

static const std::string& file_text(const Engine& e, const TargetContext* hidden, int file) {
  if (hidden && hidden->target.file == file) return hidden->masked_content;
  return e.view().content(file);
}

std::string StepFactory::function_body(int function) const {
  const auto& en = e_.view().entities()[function];
  if (en.body_start_line <= 0) return "";
  const std::string& src = file_text(e_, hidden_, en.file);
  auto starts = line_starts(src);
  return std::string(line_range(src, starts, en.body_start_line, en.end_line));
}

std::string StepFactory::function_source(int function) const {
  const auto& en = e_.view().entities()[function];
  const std::string& src = file_text(e_, hidden_, en.file);
  auto starts = line_starts(src);
  return std::string(line_range(src, starts, en.decorated_start_line, en.end_line));
}

namespace {

// A string property, bounded when `max_chars` > 0.
json string_schema(int max_chars) {
  json j = {{"type", "string"}};
  if (max_chars > 0) j["maxLength"] = max_chars;
  return j;
}

// {"steps": [item, ...]} with at least one step, at most `max_steps` when > 0. The paper bounds neither
// the steps nor their texts; bounds keep a random test model's constrained decoding short.
json steps_schema(json item_properties, json required, int max_steps) {
  json steps = {{"type", "array"},
                {"minItems", 1},
                {"items", {{"type", "object"}, {"properties", std::move(item_properties)}, {"required", required}}}};
  if (max_steps > 0) steps["maxItems"] = max_steps;
  return {{"type", "object"}, {"properties", {{"steps", steps}}}, {"required", {"steps"}}};
}

}  // namespace

json StepFactory::schema_context() const {
  return steps_schema(
      {{"description", string_schema(p_.description_chars)}, {"snippet", string_schema(p_.snippet_chars)}},
      {"description", "snippet"}, p_.max_steps);
}

json StepFactory::schema_target() const {
  return steps_schema({{"description", string_schema(p_.description_chars)}}, {"description"}, p_.max_steps);
}

static std::string step_key(const Engine& e, int function, const std::string& d, const std::string& s) {
  return content_hash(e.target_name(function) + "\x1f" + d + "\x1f" + s);
}

std::vector<FunctionDecomposition> StepFactory::decompose_context(const std::vector<int>& functions,
                                                                  const std::string& purpose) {
  static const PromptTemplate t = load_prompt("decompose_function");
  const auto& ents = e_.view().entities();
  std::vector<StructuredCall> calls;
  for (int f : functions) {
    const auto& en = ents[f];
    calls.push_back({purpose,
                     render_prompt(t, {{"path", e_.view().files()[en.file].path},
                                       {"qualname", en.qualname},
                                       {"signature", en.signature},
                                       {"docstring", en.docstring},
                                       {"body", function_body(f)}}),
                     schema_context(), p_.decompose_tokens});
  }
  auto answers = ask_json_many(llm_, calls);
  std::vector<FunctionDecomposition> out;
  for (size_t i = 0; i < functions.size(); ++i) {
    FunctionDecomposition d;
    d.function = functions[i];
    const json* steps = answers[i].array("steps");
    if (!steps) {
      d.error = answers[i].missing("\"steps\" array");
    } else {
      int ord = 0;
      for (const auto& s : *steps) {
        if (!s.is_object()) continue;
        Step st;
        st.function = d.function;
        st.ord = ord++;
        st.description = json_string(s, "description");
        st.snippet = json_string(s, "snippet");
        st.key = step_key(e_, d.function, st.description, st.snippet);
        d.steps.push_back(std::move(st));
      }
    }
    out.push_back(std::move(d));
  }
  for (auto& d : out) validate(d);
  return out;
}

// Lines of a snippet that are not lines of the body (whitespace-insensitive at the ends).
static std::vector<std::string> missing_lines(const std::string& snippet, const std::string& body) {
  std::unordered_set<std::string> have;
  for (auto l : split_lines(body)) have.emplace(trim(l));
  std::vector<std::string> missing;
  for (auto l : split_lines(snippet)) {
    auto t = trim(l);
    if (t.empty()) continue;
    if (!have.count(std::string(t))) missing.emplace_back(t);
  }
  return missing;
}

void StepFactory::validate(FunctionDecomposition& d) {
  const auto& en = e_.view().entities()[d.function];
  std::string doc = normalize_text(en.docstring);
  std::string body = function_body(d.function);
  std::string source = en.docstring.empty() ? body : "\"\"\"" + en.docstring + "\"\"\"\n" + body;
  // Stage 1 and 2 need no model.
  const std::vector<Step*> need_judge = screen_descriptions(d, doc);
  // Stage 3: the LLM judges whether the function supports the claim.
  judge_descriptions(need_judge, source);
  // Snippet validation: every line in the body, else the model re-identifies the snippet.
  validate_snippets(d, body);
  // Cross-modal check: the description (as a query) and the snippet (as a document) must agree.
  compare_embeddings(d);
}

std::vector<Step*> StepFactory::screen_descriptions(FunctionDecomposition& d, const std::string& doc) const {
  std::vector<Step*> need_judge;
  for (auto& s : d.steps) {
    std::string desc = normalize_text(s.description);
    if (desc.empty()) {
      s.validation.description_stage = "rejected";
      s.validation.rejection = "empty description";
      continue;
    }
    if (!doc.empty() && doc.find(desc) != std::string::npos) {
      s.validation.description_stage = "docstring";
      continue;
    }
    s.validation.rouge = doc.empty() ? 0 : rouge_l_f1(desc, doc);
    if (s.validation.rouge > p_.rouge_threshold) {
      s.validation.description_stage = "rouge";
      continue;
    }
    need_judge.push_back(&s);
  }
  return need_judge;
}

void StepFactory::judge_descriptions(const std::vector<Step*>& need_judge, const std::string& source) {
  if (!need_judge.empty()) {
    static const PromptTemplate t = load_prompt("judge_claim");
    json schema = {
        {"type", "object"},
        {"properties", {{"supported", {{"type", "boolean"}}}, {"reason", {{"type", "string"}, {"maxLength", 200}}}}},
        {"required", {"supported", "reason"}}};
    std::vector<StructuredCall> calls;
    for (Step* s : need_judge)
      calls.push_back({"validate_judge", render_prompt(t, {{"source", source}, {"claim", s->description}}), schema,
                       p_.judge_tokens});
    auto answers = ask_json_many(llm_, calls);
    for (size_t i = 0; i < need_judge.size(); ++i) {
      Step* s = need_judge[i];
      const StructuredAnswer& a = answers[i];
      bool ok = a.boolean("supported").value_or(false);
      s->validation.judge_reason = a.ok() ? a.string("reason") : a.error;
      s->validation.description_stage = ok ? "judge" : "rejected";
      if (!ok)
        s->validation.rejection =
            a.ok() ? "the judge found the description unsupported by the function" : "judge: " + a.error;
    }
  }
}

void StepFactory::validate_snippets(FunctionDecomposition& d, const std::string& body) {
  std::vector<Step*> reidentify;
  for (auto& s : d.steps) {
    if (s.validation.description_stage == "rejected") continue;
    if (!trim(s.snippet).empty() && missing_lines(s.snippet, body).empty())
      s.validation.snippet_stage = "verbatim";
    else
      reidentify.push_back(&s);
  }
  if (!reidentify.empty()) {
    static const PromptTemplate t = load_prompt("reidentify_snippet");
    json schema = {
        {"type", "object"}, {"properties", {{"snippet", string_schema(p_.snippet_chars)}}}, {"required", {"snippet"}}};
    std::vector<StructuredCall> calls;
    for (Step* s : reidentify)
      calls.push_back({"validate_reidentify", render_prompt(t, {{"body", body}, {"description", s->description}}),
                       schema, p_.decompose_tokens});
    auto answers = ask_json_many(llm_, calls);
    for (size_t i = 0; i < reidentify.size(); ++i) {
      Step* s = reidentify[i];
      std::string snip = answers[i].string("snippet");
      if (answers[i].ok() && !trim(snip).empty() && missing_lines(snip, body).empty()) {
        s->snippet = snip;
        s->key = step_key(e_, s->function, s->description, s->snippet);
        s->validation.snippet_stage = "reidentified";
      } else {
        s->validation.snippet_stage = "rejected";
        s->validation.rejection = answers[i].ok()
                                      ? "snippet lines are not in the function body, also after re-identification"
                                      : "re-identification: " + answers[i].error;
      }
    }
  }
}

void StepFactory::compare_embeddings(FunctionDecomposition& d) {
  std::vector<Step*> embed;
  for (auto& s : d.steps)
    if (s.validation.description_stage != "rejected" && s.validation.snippet_stage != "rejected") embed.push_back(&s);
  if (!embed.empty()) {
    EmbedRequest qd, dd;
    qd.purpose = dd.purpose = "validate_snippet_embed";
    qd.task = EmbedTask::query;
    dd.task = EmbedTask::document;
    for (Step* s : embed) {
      qd.texts.push_back(s->description);
      dd.texts.push_back(s->snippet);
    }
    LlmBackend& embedder = models_.need_embedder("snippet validation (ProjAgent 4.1)");
    auto qv = embedder.embed(qd), dv = embedder.embed(dd);
    for (size_t i = 0; i < embed.size(); ++i) {
      double c = cosine(qv.vectors[i], dv.vectors[i]);
      embed[i]->validation.snippet_cosine = c;
      if (c > p_.snippet_cosine) {
        embed[i]->grounded = true;
      } else {
        embed[i]->validation.rejection = "description and snippet embeddings disagree (cosine " +
                                         std::to_string(c).substr(0, 5) +
                                         " <= " + std::to_string(p_.snippet_cosine).substr(0, 4) + ")";
      }
    }
  }
}

FunctionDecomposition StepFactory::decompose_target(int function) {
  static const PromptTemplate t = load_prompt("decompose_target");
  const auto& en = e_.view().entities()[function];
  auto answer = ask_json(llm_, {"decompose_target",
                                render_prompt(t, {{"path", e_.view().files()[en.file].path},
                                                  {"qualname", en.qualname},
                                                  {"signature", en.signature},
                                                  {"docstring", en.docstring}}),
                                schema_target(), p_.decompose_tokens});
  FunctionDecomposition d;
  d.function = function;
  d.is_target = true;
  const json* steps = answer.array("steps");
  if (!steps) {
    d.error = answer.missing("\"steps\" array");
    return d;
  }
  int ord = 0;
  for (const auto& s : *steps) {
    if (!s.is_object() || trim(json_string(s, "description")).empty()) continue;
    Step st;
    st.function = function;
    st.ord = ord++;
    st.description = json_string(s, "description");
    st.grounded = true;  // target steps are plans, not claims about code: nothing to validate
    st.validation.description_stage = "target";
    st.key = step_key(e_, function, st.description, "");
    d.steps.push_back(std::move(st));
  }
  if (d.steps.empty() && d.error.empty()) d.error = "the model listed no step";
  return d;
}

std::vector<float> StepFactory::project_text(const std::string& description, const std::string& snippet) {
  subspace();
  std::string key = content_hash(description + "\x1f" + snippet);
  if (auto it = projection_memo_.find(key); it != projection_memo_.end()) return it->second;
  EmbeddingStore store(e_.view().db_path(), "step_projections");
  auto have = store.get(subspace_->id(), {key});
  std::vector<float> v;
  if (auto it = have.find(key); it != have.end()) {
    v = it->second;
  } else {
    v = projector_->project(description, snippet.empty() ? "(not written yet)" : snippet);
    if (!v.empty()) store.put(subspace_->id(), {{key, v}});
  }
  projection_memo_[key] = v;
  return v;
}

void StepFactory::project(std::vector<Step*>& steps, const std::string& prefix) {
  subspace();
  EmbeddingStore store(e_.view().db_path(), "step_projections");
  std::vector<std::string> keys;
  for (Step* s : steps) keys.push_back(content_hash(prefix + s->description + "\x1f" + s->snippet));
  auto have = store.get(subspace_->id(), keys);
  std::vector<std::pair<std::string, std::string>> todo;
  std::vector<size_t> idx;
  for (size_t i = 0; i < steps.size(); ++i) {
    if (auto it = have.find(keys[i]); it != have.end()) {
      steps[i]->projection = it->second;
      continue;
    }
    todo.emplace_back(prefix + steps[i]->description,
                      steps[i]->snippet.empty() ? "(not written yet)" : steps[i]->snippet);
    idx.push_back(i);
  }
  if (todo.empty()) return;
  auto P = projector_->project_many(todo);
  std::vector<std::pair<std::string, std::vector<float>>> rows;
  for (size_t k = 0; k < idx.size(); ++k) {
    steps[idx[k]]->projection = P[k];
    if (!P[k].empty()) rows.emplace_back(keys[idx[k]], P[k]);
  }
  if (!rows.empty()) store.put(subspace_->id(), rows);
}

}  // namespace repoctx
