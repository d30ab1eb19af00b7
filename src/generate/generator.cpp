#include "generate/generator.h"

#include <algorithm>

#include <fmt/format.h>

#include "generate/splice.h"
#include "llm/prompts.h"
#include "retrieve/procedural/decompose.h"
#include "retrieve/procedural/pipeline.h"
#include "retrieve/retriever.h"
#include "util/error.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;

json GenerationParams::to_json() const {
  return {{"method", method},
          {"prompt_budget_tokens", prompt_budget_tokens},
          {"max_tokens", max_tokens},
          {"max_rounds", max_rounds},
          {"semantic_top", semantic_top},
          {"baseline_top", baseline_top},
          {"context_chars", context_chars},
          {"procedural", procedural.to_json()}};
}

const std::vector<std::string>& generation_methods() {
  static const std::vector<std::string> m = {
      "projagent", "projagent-no-procedural", "projagent-no-semantic", "projagent-no-feedback", "sparse", "dense",
      "same-file"};
  return m;
}

bool method_uses_procedural(const std::string& m) {
  return m == "projagent" || m == "projagent-no-semantic" || m == "projagent-no-feedback";
}

void check_generation_method(const std::string& method) {
  const auto& m = generation_methods();
  if (std::find(m.begin(), m.end(), method) == m.end()) {
    std::string all;
    for (const auto& x : m) all += (all.empty() ? "" : ", ") + x;
    throw Error(ExitCode::usage, "unknown generation method '" + method + "'; methods: " + all);
  }
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
  for (const auto& st : steps) s += fmt::format("{}. {}\n", st.id, st.description);
  return s.empty() ? "(no plan)\n" : s;
}

}  // namespace

GenerationOutcome generate_function(const Engine& e, LlmBackend& llm_in, LlmBackend* embedder, LlmBackend* hidden,
                                    const TargetRef& t, const GenerationParams& p) {
  check_generation_method(p.method);
  MeteredBackend llm(llm_in);
  const auto& ents = e.view().entities();
  const EntityRec& te = ents[t.entity];
  if (!is_callable(te.kind) || te.body_start_line <= 0)
    throw Error(ExitCode::bad_input, "`" + e.target_name(t.entity) + "` has no body statements to generate");
  TargetContext ctx = e.make_context(t);
  const std::string path = e.view().files()[t.file].path;
  const std::string& original = e.view().content(t.file);
  GenerationOutcome out;
  out.method = p.method;
  json trace = {{"target", e.target_name(t.entity)}, {"params", p.to_json()}};

  std::string problem = ctx.visible_text;
  std::string location = "File `" + path + "`";
  if (te.parent_index >= 0 && is_type(ents[te.parent_index].kind))
    location += ", a method of class `" + ents[te.parent_index].qualname + "`:\n```python\n" +
                cut(e.entity_document_text(te.parent_index), static_cast<size_t>(p.context_chars)) + "\n```";

  bool baseline = p.method == "sparse" || p.method == "dense" || p.method == "same-file";
  std::vector<PromptContext> selected;
  std::vector<StepPlan> steps;
  PromptTemplate gen_tpl, refine_tpl = load_prompt("refine_function");
  std::map<std::string, std::string> vars = {{"problem", problem}, {"location", location}};
  if (baseline) {
    gen_tpl = load_prompt("generate_baseline");
    if (p.method == "same-file") {
      vars["contexts"] = "### the target's file, its body hidden\n```python\n" +
                         cut(ctx.masked_content, static_cast<size_t>(p.prompt_budget_tokens) * 4) + "\n```\n";
    } else {
      auto r = make_retriever(p.method, e);
      RetrievalQuery q;
      q.target = t;
      q.top_k = p.baseline_top;
      // REPOCOD: the top functions in rank order, as many as the budget holds.
      int used = 0;
      for (const auto& h : r->retrieve(q)) {
        PromptContext c{"retrieved",
                        1,
                        true,
                        h.entity,
                        h.score,
                        e.target_name(h.entity),
                        "```python\n" + cut(e.entity_text(h.entity), static_cast<size_t>(p.context_chars)) + "\n```"};
        if (used + c.tokens() > p.prompt_budget_tokens) continue;
        used += c.tokens();
        selected.push_back(std::move(c));
      }
      vars["contexts"] = format_contexts(selected);
    }
    vars["steps"] = "(no plan)\n";
  } else {
    gen_tpl = load_prompt("generate_function");
    LlmBackend& emb = embedder ? *embedder : llm;
    LlmBackend& hid = hidden ? *hidden : llm;
    bool use_procedural = method_uses_procedural(p.method);
    bool use_semantic = p.method != "projagent-no-semantic";
    if (use_procedural) {
      ProceduralPipeline pipe(e, llm, emb, hid, p.procedural);
      auto po = pipe.run(t);
      trace["procedural"] = po.trace;
      for (const auto& st : po.steps) {
        StepPlan sp{st.id, st.description, st.confirmed, {}, {}};
        for (const auto& c : st.contexts)
          sp.procedural.push_back({"procedural", st.id, st.confirmed, c.function, c.similarity,
                                   e.target_name(c.function),
                                   "# step: " + c.description + "\n```python\n" +
                                       cut(c.snippet, static_cast<size_t>(p.context_chars)) + "\n```"});
        steps.push_back(std::move(sp));
      }
    } else {
      StepFactory f(e, llm, emb, hid, p.procedural, &ctx);
      auto d = f.decompose_target(t.entity);
      int id = 1;
      for (const auto& s : d.steps) steps.push_back({id++, s.description, false, {}, {}});
      trace["target_decomposition_error"] = d.error;
    }
    if (use_semantic) {
      // Eq. 6 per target step: the step enriched by its procedural contexts' descriptions, over the pool
      // of the files importable from the target's file (the `imports` strategy).
      auto pool = make_retriever("imports", e);
      for (auto& st : steps) {
        RetrievalQuery q;
        q.target = t;
        q.top_k = p.semantic_top;
        q.text = st.description;
        for (const auto& c : st.procedural) q.text += "\n" + c.text.substr(0, c.text.find('\n'));
        for (const auto& h : pool->retrieve(q))
          st.semantic.push_back(
              {"semantic", st.id, st.confirmed, h.entity, h.score, e.target_name(h.entity),
               "```python\n" + cut(e.entity_document_text(h.entity), static_cast<size_t>(p.context_chars)) + "\n```"});
      }
    }
    std::vector<std::vector<PromptContext>> proc, sem;
    for (const auto& st : steps) {
      proc.push_back(st.procedural);
      sem.push_back(st.semantic);
    }
    selected = assemble_contexts(proc, sem, p.prompt_budget_tokens);
    vars["contexts"] = format_contexts(selected);
    vars["steps"] = steps_text(steps);
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

  // Generation and the feedback loop.
  bool feedback =
      p.method == "projagent" || p.method == "projagent-no-procedural" || p.method == "projagent-no-semantic";
  json rounds = json::array();
  std::string answer_code;
  auto attempt = [&](const std::vector<ChatMessage>& ms, const char* purpose) {
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
      fs = check_function(e, t.entity, out.patched_file);
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
    out.body = "raise NotImplementedError(\"repoctx: the model's answer contained no usable body\")";
    out.patched_file = splice_body(original, te, out.body);
  }
  out.diff = unified_diff(path, original, out.patched_file);
  {
    auto starts = line_starts(out.patched_file);
    int end = te.end_line + static_cast<int>(std::count(out.patched_file.begin(), out.patched_file.end(), '\n') -
                                             std::count(original.begin(), original.end(), '\n'));
    out.function_text = std::string(line_range(out.patched_file, starts, te.decorated_start_line, end));
  }
  trace["rounds"] = rounds;
  out.usage = llm.usage();
  trace["llm_usage"] = out.usage.to_json();
  json fj = json::array();
  for (const auto& f : out.findings) fj.push_back(f.to_json());
  trace["remaining_findings"] = fj;
  out.trace = std::move(trace);
  return out;
}

}  // namespace repoctx
