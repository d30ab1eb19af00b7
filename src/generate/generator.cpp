#include "generate/generator.h"

#include <algorithm>
#include <atomic>

#include <fmt/format.h>

#include "generate/python_syntax.h"
#include "generate/splice.h"
#include "llm/prompts.h"
#include "retrieve/retriever.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/log.h"
#include "util/param_table.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;

namespace {

// The constants of generation that only `params` reaches (method, budgets and rounds are request fields).
const ParamTable<GenerationParams>& generation_rows() {
  static const ParamTable<GenerationParams> t = {
      REPOCTX_PARAM(GenerationParams, "semantic_top", semantic_top,
                    .meaning = "semantic contexts per target step (eq. 6's top k)", .min = 0, .max = 100000,
                    .source = "ProjAgent 4.3"),
      REPOCTX_PARAM(GenerationParams, "baseline_top", baseline_top,
                    .meaning = "REPOCOD's sparse and dense baselines: retrieved functions offered to the prompt",
                    .min = 1, .max = 100000, .source = "repoctx"),
      REPOCTX_PARAM(GenerationParams, "context_cut_chars", context_chars,
                    .meaning = "one context's text is cut at this many characters", .min = 1, .max = 10000000,
                    .source = "repoctx"),
  };
  return t;
}

}  // namespace

json GenerationParams::to_json() const {
  json j = {{"method", method},         {"prompt_budget_tokens", prompt_budget_tokens},
            {"max_tokens", max_tokens}, {"max_rounds", max_rounds},
            {"python", python},         {"procedural", procedural.to_json()}};
  j.update(params_to_json(*this, generation_rows()));
  return j;
}

void GenerationParams::apply(const json& j) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    json one = {{it.key(), it.value()}};
    if (has_param(generation_rows(), it.key()))
      apply_params(*this, one, generation_rows(), "generation parameter");
    else if (ProceduralParams::has(it.key()))
      procedural.apply(one);
    else {
      std::vector<std::string> names;
      for (const auto& r : generation_rows()) names.emplace_back(r.name);
      for (const auto& r : ProceduralParams::catalogue()) names.push_back(r["name"]);
      throw_unknown_param(it.key(), "generation parameter", names);
    }
  }
}

json GenerationParams::catalogue() {
  return params_catalogue(generation_rows(), "generation");
}

void check_not_unreproducible(const std::string& method) {
  if (method == "specagent")
    throw Error(ExitCode::usage,
                "specagent (ProjAgent 5.2's strongest baseline) cannot be reproduced here: the ProjAgent paper "
                "describes it in one sentence (specialized agents for context retrieval, planning and "
                "implementation) and reimplemented it from SpecAgent's own paper and appendix prompts (Ma et al., "
                "2026), which are not available; docs/DEVIATIONS.md lists what is missing");
}

namespace {

struct MethodInfo {
  const char* name;
  bool procedural;  // runs procedural retrieval (needs a white-box model)
  bool semantic;    // ProjAgent: semantic contexts per step
  bool feedback;    // static-check feedback rounds
  bool baseline;    // REPOCOD: retrieved context + one generation, no plan
};

const std::vector<MethodInfo>& method_table() {
  static const std::vector<MethodInfo> m = {
      {"projagent", true, true, true, false},
      {"projagent-no-procedural", false, true, true, false},
      {"projagent-no-semantic", true, false, true, false},
      {"projagent-no-feedback", true, true, false, false},
      {"sparse", false, false, false, true},
      {"dense", false, false, false, true},
      {"same-file", false, false, false, true},
  };
  return m;
}

const MethodInfo& method_info(const std::string& method) {
  for (const auto& m : method_table())
    if (method == m.name) return m;
  check_not_unreproducible(method);
  std::string all;
  for (const auto& m : method_table()) all += (all.empty() ? "" : ", ") + std::string(m.name);
  throw Error(ExitCode::usage, "unknown generation method '" + method + "'; methods: " + all);
}

}  // namespace

const std::vector<std::string>& generation_methods() {
  static const std::vector<std::string> names = [] {
    std::vector<std::string> v;
    for (const auto& m : method_table()) v.push_back(m.name);
    return v;
  }();
  return names;
}

bool method_uses_procedural(const std::string& m) {
  return method_info(m).procedural;
}

void check_generation_method(const std::string& method) {
  method_info(method);
}

ModelNeeds generation_method_needs(const std::string& method) {
  const MethodInfo& m = method_info(method);
  ModelNeeds n;
  n.llm = true;
  n.hidden = m.procedural;
  n.embedder = method == "dense";
  n.embedder_optional = !m.baseline;  // eq. 6's dense half when configured
  n.snippet_embedder = m.procedural;  // snippet validation
  return n;
}

namespace {

std::string cut(std::string s, size_t n) {
  if (s.size() > n) s = s.substr(0, n) + "\n# ... (cut)";
  return s;
}

struct StepPlan {
  int id = 0;
  std::string description;
  bool confirmed = false;
  std::vector<PromptContext> procedural, semantic;
};

std::string steps_text(const std::vector<StepPlan>& steps) {
  std::string s;
  for (size_t i = 0; i < steps.size(); ++i) s += fmt::format("{}. {}\n", i + 1, steps[i].description);
  return s.empty() ? "(no plan)\n" : s;
}

// What one generation run shares between its stages.
struct Run {
  const Engine& e;
  const Models& models;
  const TargetRef& t;
  const GenerationParams& p;
  std::shared_ptr<const TargetContext> ctx;
  LlmUsage& usage;  // retrieval's LLM work (generation's own is metered separately)
  json& trace;

  RetrievalQuery query(int top_k, std::string text = "") const {
    RetrievalQuery q;
    q.target = t;
    q.context = ctx;
    q.top_k = top_k;
    q.text = std::move(text);
    q.withheld = p.withheld;
    return q;
  }
};

// REPOCOD's baselines: the target's file (same-file) or the top retrieved functions in rank order, as many
// as the budget holds.
std::vector<PromptContext> baseline_contexts(const Run& r, std::string& contexts_text) {
  std::vector<PromptContext> selected;
  if (r.p.method == "same-file") {
    contexts_text = "### the target's file, its body hidden\n```python\n" +
                    cut(r.ctx->masked_content, static_cast<size_t>(r.p.prompt_budget_tokens) * 4) + "\n```\n";
    return selected;
  }
  auto retriever = make_retriever(r.p.method, r.e, r.models);
  int used = 0;
  for (const auto& h : retriever->retrieve(r.query(r.p.baseline_top))) {
    PromptContext c{"retrieved",
                    1,
                    true,
                    h.entity,
                    h.score,
                    r.e.target_name(h.entity),
                    "```python\n" + cut(r.e.entity_text(h.entity), static_cast<size_t>(r.p.context_chars)) + "\n```"};
    if (used + c.tokens() > r.p.prompt_budget_tokens) continue;
    used += c.tokens();
    selected.push_back(std::move(c));
  }
  contexts_text = format_contexts(selected);
  return selected;
}

// ProjAgent 4.1-4.2 through the procedural strategy: the target's steps and, unless the method is the
// no-procedural ablation, each step's procedural contexts.
std::vector<StepPlan> procedural_plan(const Run& r, bool with_contexts) {
  RetrieverOptions ro;
  ro.procedural = r.p.procedural;
  ro.procedural.retrieval = with_contexts;
  auto res = make_retriever("procedural", r.e, r.models, ro)->run(r.query(0));
  r.usage.add(res.usage);
  if (with_contexts)
    r.trace["procedural"] = res.trace;
  else
    r.trace["target_decomposition_error"] = res.trace["target_decomposition"].value("error", "");
  if (!res.empty_reason.empty()) r.trace["procedural_empty_reason"] = res.empty_reason;
  std::vector<StepPlan> steps;
  for (const auto& ps : res.plan) {
    StepPlan sp{ps.id, ps.description, ps.confirmed, {}, {}};
    for (size_t i : ps.hits) {
      const Hit& h = res.hits[i];  // text: the context step's snippet; description: what it does
      sp.procedural.push_back({"procedural", ps.id, ps.confirmed, h.entity, h.score, r.e.target_name(h.entity),
                               "# step: " + h.description + "\n```python\n" +
                                   cut(h.text, static_cast<size_t>(r.p.context_chars)) + "\n```"});
    }
    steps.push_back(std::move(sp));
  }
  return steps;
}

// Eq. 6 per target step: the step enriched by its procedural contexts' descriptions, over the pool of
// the files importable from the target's file (the `imports` strategy, in the paper's order: eq. 6 ranks
// each step's own text, which the structural order would not).
void add_semantic_contexts(const Run& r, std::vector<StepPlan>& steps) {
  RetrieverOptions paper;
  paper.imports_order = "bm25";
  auto pool = make_retriever("imports", r.e, r.models, paper);
  for (auto& st : steps) {
    std::string text = st.description;
    for (const auto& c : st.procedural) text += "\n" + c.text.substr(0, c.text.find('\n'));
    for (const auto& h : pool->retrieve(r.query(r.p.semantic_top, text)))
      st.semantic.push_back(
          {"semantic", st.id, st.confirmed, h.entity, h.score, r.e.target_name(h.entity),
           "```python\n" + cut(r.e.entity_document_text(h.entity), static_cast<size_t>(r.p.context_chars)) + "\n```"});
  }
}

// Greedy generation, then (when the method has feedback) up to max_rounds refinements, each prompted with
// the previous answer and the static checks' findings. The body is spliced under the original header.
void generate_with_feedback(const Engine& e, const TargetRef& t, const GenerationParams& p, LlmBackend& llm,
                            bool feedback, const PromptTemplate& gen_tpl,
                            const std::map<std::string, std::string>& vars, GenerationOutcome& out, json& trace) {
  const EntityRec& te = e.view().entities()[t.entity];
  const std::string& original = e.view().content(t.file);
  json rounds = json::array();
  std::string answer_code;
  auto attempt = [&](const std::vector<ChatMessage>& ms, const char* purpose) {
    throw_if_interrupted("LLM answers so far are cached; re-run to resume");
    GenerateRequest r;
    r.messages = ms;
    r.temperature = 0.0;
    r.max_tokens = p.max_tokens;
    r.purpose = purpose;
    auto g = llm.generate(r);
    std::string text = g.choices.empty() ? "" : g.choices[0].text;
    answer_code = extract_code_block(text);
    auto ex = extract_body(answer_code, te.name);
    std::vector<StaticFinding> fs;
    if (ex.found) {
      out.body = ex.body;
      out.patched_file = splice_body(original, te, ex.body);
      fs = check_function(e, t.entity, out.patched_file, nullptr, CheckOptions{p.python});
    } else {
      out.body.clear();
      fs.push_back({"syntax", 0, ex.problem});
    }
    json fj = json::array();
    for (const auto& f : fs) fj.push_back(f.to_json());
    rounds.push_back({{"purpose", purpose}, {"answer", sanitize_utf8(text)}, {"cached", g.cached}, {"findings", fj}});
    out.findings = std::move(fs);
  };
  attempt(render_prompt(gen_tpl, vars), "generate");
  PromptTemplate refine_tpl = load_prompt("refine_function");
  while (feedback && !out.findings.empty() && out.rounds < p.max_rounds) {
    ++out.rounds;
    std::string findings;
    for (const auto& f : out.findings)
      findings += f.line > 0 ? fmt::format("- line {}: {}\n", f.line, f.message) : "- " + f.message + "\n";
    auto v = vars;
    v["previous"] = answer_code;
    v["findings"] = findings;
    attempt(render_prompt(refine_tpl, v), "refine");
  }
  if (out.body.empty()) {
    // No usable answer: the file still gets a body, one that fails loudly when run.
    out.body = stub_body(Language::python, "repoctx: the model's answer contained no usable body");
    out.patched_file = splice_body(original, te, out.body);
  }
  trace["rounds"] = rounds;
}

// Which syntax check the feedback loop runs (python_syntax.h).
json syntax_checker(const std::string& python) {
  PythonCompiler* c = python == "none" ? nullptr : python_compiler(python);
  if (!c) return {{"checker", "tree-sitter"}};
  return {{"checker", "python"}, {"interpreter", c->interpreter()}, {"version", c->version()}};
}

// The benchmark's other targets, and the prompt contexts that are one of them or inside one: none for the
// ProjAgent methods (what `evaluate`'s trace shows); REPOCOD's baselines may show them, as REPOCOD does.
void trace_withheld(const Engine& e, const std::vector<int>& targets, const std::vector<PromptContext>& ctxs,
                    json& trace) {
  json names = json::array(), leaked = json::array();
  for (int t : targets) names.push_back(e.target_name(t));
  for (const auto& c : ctxs)
    for (int t : targets)
      if (c.entity >= 0 && e.view().is_within(c.entity, t)) leaked.push_back({{"context", c.title}, {"kind", c.kind}});
  trace["withheld"] = names;
  trace["withheld_in_context"] = leaked;
}

// Lowers `fp`'s prompt budget and output tokens to what the LLM's context holds (fit_to_context), with one
// warning per process; the trace records the fit.
void fit_params_to_context(LlmBackend& llm, const std::vector<PromptTemplate>& templates,
                           std::map<std::string, std::string> vars, GenerationParams& fp, json& trace) {
  int context = llm.context_length();
  if (context <= 0) return;
  vars["contexts"] = vars["previous"] = vars["findings"] = "";
  size_t fixed = 0;
  for (const auto& tpl : templates) {
    size_t chars = 0;
    for (const auto& m : render_prompt(tpl, vars)) chars += m.content.size();
    fixed = std::max(fixed, chars);
  }
  ContextFit f = fit_to_context(context, fp.prompt_budget_tokens, fp.max_tokens, fixed);
  trace["context_fit"] = {{"context_length", context},
                          {"fixed_chars", fixed},
                          {"prompt_budget_tokens", f.budget_tokens},
                          {"max_tokens", f.max_tokens}};
  static std::atomic<bool> warned{false};
  if (f.clamped && !warned.exchange(true))
    log_warn(
        "the LLM's context holds {} tokens: prompt budget {} -> {} estimated tokens, output {} -> {} tokens (give "
        "the server a larger context: llama-server -c N, vLLM --max-model-len N; docs/LLM.md)",
        context, fp.prompt_budget_tokens, f.budget_tokens, fp.max_tokens, f.max_tokens);
  fp.prompt_budget_tokens = f.budget_tokens;
  fp.max_tokens = f.max_tokens;
}

}  // namespace

GenerationOutcome generate_function(const Engine& e, const Models& models, const TargetRef& t,
                                    const GenerationParams& p) {
  const MethodInfo& method = method_info(p.method);
  MeteredBackend llm(models.need_llm("generation"));
  const auto& ents = e.view().entities();
  const EntityRec& te = ents[t.entity];
  if (!is_callable(te.kind) || te.body_start_line <= 0)
    throw Error(ExitCode::bad_input, "`" + e.target_name(t.entity) + "` has no body statements to generate");
  if (e.view().files()[t.file].language != Language::python)
    throw Error(ExitCode::bad_input,
                "`" + e.target_name(t.entity) + "` is " + language_name(e.view().files()[t.file].language) +
                    ": generation writes Python only (its prompts, answer extraction and static checks are "
                    "Python's; docs/DEVIATIONS.md). Retrieval works for it; `evaluate` runs gold and stub");
  const std::string path = e.view().files()[t.file].path;
  const std::string& original = e.view().content(t.file);
  GenerationOutcome out;
  out.method = p.method;
  json trace = {{"target", e.target_name(t.entity)}, {"params", p.to_json()}};
  LlmUsage retrieval_usage;
  GenerationParams fp = p;  // the budget fitted to the LLM's context below
  Run run{e, models, t, fp, std::make_shared<const TargetContext>(e.make_context(t)), retrieval_usage, trace};

  std::string location = "File `" + path + "`";
  if (te.parent_index >= 0 && is_type(ents[te.parent_index].kind))
    location += ", a method of class `" + ents[te.parent_index].qualname + "`:\n```python\n" +
                cut(e.entity_document_text(te.parent_index), static_cast<size_t>(p.context_chars)) + "\n```";
  std::map<std::string, std::string> vars = {{"problem", run.ctx->visible_text}, {"location", location}};
  std::vector<PromptContext> selected;
  PromptTemplate gen_tpl;
  if (method.baseline) {
    gen_tpl = load_prompt("generate_baseline");
    vars["steps"] = "(no plan)\n";
    fit_params_to_context(llm, {gen_tpl}, vars, fp, trace);
    selected = baseline_contexts(run, vars["contexts"]);
  } else {
    gen_tpl = load_prompt("generate_function");
    std::vector<StepPlan> steps = procedural_plan(run, method.procedural);
    if (method.semantic) add_semantic_contexts(run, steps);
    std::vector<std::vector<PromptContext>> proc, sem;
    for (const auto& st : steps) {
      proc.push_back(st.procedural);
      sem.push_back(st.semantic);
    }
    vars["steps"] = steps_text(steps);
    fit_params_to_context(llm, {gen_tpl, load_prompt("refine_function")}, vars, fp, trace);
    selected = assemble_contexts(proc, sem, fp.prompt_budget_tokens);
    vars["contexts"] = format_contexts(selected);
    json js = json::array();
    for (const auto& st : steps)
      js.push_back({{"id", st.id},
                    {"description", st.description},
                    {"confirmed", st.confirmed},
                    {"procedural", st.procedural.size()},
                    {"semantic", st.semantic.size()}});
    trace["steps"] = js;
  }
  json sel = json::array();
  for (const auto& c : selected) sel.push_back(c.to_json());
  trace["prompt_contexts"] = sel;
  trace_withheld(e, p.withheld, selected, trace);
  trace["syntax_check"] = syntax_checker(p.python);
  generate_with_feedback(e, t, fp, llm, method.feedback, gen_tpl, vars, out, trace);
  out.diff = unified_diff(path, original, out.patched_file);
  {
    auto starts = line_starts(out.patched_file);
    int end = te.end_line + static_cast<int>(std::count(out.patched_file.begin(), out.patched_file.end(), '\n') -
                                             std::count(original.begin(), original.end(), '\n'));
    out.function_text = std::string(line_range(out.patched_file, starts, te.decorated_start_line, end));
  }
  out.usage = llm.usage();
  out.usage.add(retrieval_usage);
  trace["llm_usage"] = out.usage.to_json();
  json fj = json::array();
  for (const auto& f : out.findings) fj.push_back(f.to_json());
  trace["remaining_findings"] = fj;
  out.trace = std::move(trace);
  return out;
}

}  // namespace repoctx
