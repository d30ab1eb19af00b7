// The context-retrieval study's strategies as named retrievers (retriever.h's registry):
//   study-bm25               one BM25 request, chunks taken until the context holds context_tokens tokens
//   react-{bm25,acr}-{cl,tc,sr}  the ReAct agent (agent/react.h) with the BM25 search tool or ACR's search
//                            APIs (plus add_to_context), stopped by context length, the first answer
//                            without a tool call, or that plus a self-reflection call
//   acr                      AutoCodeRover's two-stage procedure (acr.cpp)
// The request is the query text (an issue or a commit message). Hits are the gathered line ranges, each
// with its file and innermost entity; the trace holds every agent step, its stop reason and context size.
#include <fmt/core.h>

#include "llm/metered.h"
#include "llm/prompts.h"
#include "llm/structured.h"
#include "retrieve/study/strategies.h"
#include "retrieve/study/tools.h"
#include "util/error.h"
#include "util/text.h"
#include "util/token_count.h"

namespace repoctx {

using nlohmann::json;

namespace {

std::string study_request_of(const RetrievalQuery& q) {
  if (trim(q.text).empty()) throw Error(ExitCode::usage, "the study's strategies need the request as --query text");
  return q.text;
}

RetrievalResult finish(const GatheredContext& ctx, json trace, const MeteredBackend* metered) {
  RetrievalResult r;
  r.hits = ctx.hits();
  trace["context_tokens"] = ctx.tokens();
  trace["tokenizer"] = token_counter_name(ctx.counter());
  trace["context"] = ctx.to_json();
  if (metered) {
    r.usage = metered->usage();
    trace["llm_usage"] = r.usage.to_json();
  }
  r.trace = std::move(trace);
  return r;
}

// study-bm25: the study's baseline (its as_is_retrieval with total_context): the top candidates of one BM25
// request over chunks, each counted (cut to the room left) until the budget is within `margin` of full; the
// chunks taken are the context.
class StudyBm25 : public Retriever {
 public:
  StudyBm25(const Engine& e, const RetrieverOptions& o) : e_(e), p_(o.study) {}
  std::string name() const override { return "study-bm25"; }
  std::vector<Hit> retrieve(const RetrievalQuery& q) override { return run(q).hits; }
  RetrievalResult run(const RetrievalQuery& q) override {
    const StudyChunkIndex& idx = study_chunks(e_, p_.corpus, p_.chunks);
    GatheredContext ctx(idx.corpus(), token_counter_named(p_.tokenizer));
    json taken = json::array();
    int budget = 0;
    for (const auto& sc : idx.top(study_request_of(q), static_cast<size_t>(p_.baseline_candidates))) {
      if (budget > p_.context_tokens - p_.baseline_margin) break;
      std::string doc = idx.document(sc.chunk);
      budget += count_tokens(truncate_tokens(doc, p_.context_tokens - budget, ctx.counter()), ctx.counter());
      const StudyChunk& c = idx.chunks()[static_cast<size_t>(sc.chunk)];
      ctx.add(c.doc, c.start_line, c.end_line);
      taken.push_back({{"file", idx.corpus().path(c.doc)},
                       {"lines", {c.start_line, c.end_line}},
                       {"score", sc.score},
                       {"budget", budget}});
    }
    json trace = {{"strategy", name()},
                  {"params", p_.to_json()},
                  {"chunks", taken},
                  {"corpus_chunks", idx.chunks().size()},
                  {"corpus_files", idx.corpus().searched().size()},
                  {"stop_reason", "context_length"}};
    return finish(ctx, std::move(trace), nullptr);
  }

 private:
  const Engine& e_;
  StudyParams p_;
};

std::string gathered_list(const GatheredContext& ctx) {
  std::string out;
  for (const Hit& h : ctx.hits()) out += fmt::format("- {} lines {}-{}\n", ctx.path_of(h), h.start_line, h.end_line);
  return out.empty() ? "(nothing yet)\n" : out;
}

// CL: the run ends at an answer once the context holds context_tokens; below that the agent is told how
// much it has and goes on (the study re-ran its agent up to max_searches times).
class ContextLengthPolicy : public StopPolicy {
 public:
  ContextLengthPolicy(const GatheredContext& ctx, const StudyParams& p) : ctx_(ctx), p_(p) {}
  std::string name() const override { return "CL"; }
  StopDecision on_answer(ReactAgent&, const std::string&) override {
    ++rounds_;
    StopDecision d;
    d.trace = {{"criterion", "CL"}, {"round", rounds_}, {"context_tokens", ctx_.tokens()}};
    if (ctx_.tokens() >= p_.context_tokens) {
      d.reason = "context_length";
      return d;
    }
    if (rounds_ >= p_.cl_max_rounds) {
      d.reason = "cl_rounds";
      return d;
    }
    static const PromptTemplate t = load_prompt("study_react_continue_cl");
    d.stop = false;
    d.message = render_text(t.user,
                            {{"context_tokens", std::to_string(ctx_.tokens())},
                             {"target_tokens", std::to_string(p_.context_tokens)},
                             {"gathered", gathered_list(ctx_)}},
                            t.name);
    return d;
  }

 private:
  const GatheredContext& ctx_;
  StudyParams p_;
  int rounds_ = 0;
};

// TC: the first answer without a tool call ends the run.
class ToolCallPolicy : public StopPolicy {
 public:
  std::string name() const override { return "TC"; }
  StopDecision on_answer(ReactAgent&, const std::string&) override {
    StopDecision d;
    d.reason = "no_tool_call";
    d.trace = {{"criterion", "TC"}};
    return d;
  }
};

// SR: at each answer a separate call judges whether the context suffices; "no" sends its review back to the
// agent, up to sr_max_reviews times.
class SelfReflectionPolicy : public StopPolicy {
 public:
  SelfReflectionPolicy(const GatheredContext& ctx, const StudyParams& p, std::string request)
      : ctx_(ctx), p_(p), request_(std::move(request)) {}
  std::string name() const override { return "SR"; }
  StopDecision on_answer(ReactAgent& agent, const std::string&) override {
    static const PromptTemplate t = load_prompt("study_self_reflection");
    ++reviews_;
    json schema = {
        {"type", "object"},
        {"properties",
         {{"review", {{"type", "string"}, {"maxLength", p_.review_chars}}}, {"is_sufficient", {{"type", "boolean"}}}}},
        {"required", {"review", "is_sufficient"}},
        {"additionalProperties", false}};
    std::string gathered = gathered_text();
    StructuredAnswer a = ask_json(
        agent.llm(), {"study_self_reflection", render_prompt(t, {{"request", request_}, {"gathered", gathered}}),
                      schema, p_.review_tokens});
    StopDecision d;
    std::optional<bool> ok = a.boolean("is_sufficient");
    d.trace = {{"criterion", "SR"}, {"review", reviews_}, {"context_tokens", ctx_.tokens()}};
    if (ok)
      d.trace["is_sufficient"] = *ok;
    else
      d.trace["unusable"] = a.missing("is_sufficient");
    d.trace["text"] = a.string("review");
    if (ok.value_or(false)) {
      d.reason = "sufficient";
      return d;
    }
    if (reviews_ >= p_.sr_max_reviews) {
      d.reason = "review_limit";
      return d;
    }
    static const PromptTemplate cont = load_prompt("study_react_continue_sr");
    d.stop = false;
    std::string review = a.string("review");
    d.message = render_text(cont.user, {{"review", review.empty() ? "(no reasons given)" : review}}, cont.name);
    return d;
  }

 private:
  std::string gathered_text() const {
    std::string out;
    for (const Hit& h : ctx_.hits()) {
      out += fmt::format("{} lines {}-{}:\n{}\n\n", ctx_.path_of(h), h.start_line, h.end_line, ctx_.text_of(h));
      if (out.size() > static_cast<size_t>(p_.react.tool_output_chars) * 2) break;
    }
    return out.empty() ? "(empty)" : sanitize_utf8(out);
  }
  const GatheredContext& ctx_;
  StudyParams p_;
  std::string request_;
  int reviews_ = 0;
};

class ReactStudy : public Retriever {
 public:
  ReactStudy(const Engine& e, LlmBackend& llm, const RetrieverOptions& o, std::string tools, std::string criterion)
      : e_(e), llm_(llm), p_(o.study), tools_(std::move(tools)), criterion_(std::move(criterion)) {}
  std::string name() const override { return "react-" + tools_ + "-" + criterion_; }
  std::vector<Hit> retrieve(const RetrievalQuery& q) override { return run(q).hits; }

  RetrievalResult run(const RetrievalQuery& q) override {
    std::string request = study_request_of(q);
    MeteredBackend metered(llm_);
    GatheredContext ctx(study_corpus(e_, p_.corpus), token_counter_named(p_.tokenizer));
    std::vector<std::unique_ptr<AgentTool>> owned;
    std::unique_ptr<AcrSearch> acr;
    if (tools_ == "bm25") {
      owned.push_back(std::make_unique<Bm25SearchTool>(e_, p_));
    } else {
      acr = std::make_unique<AcrSearch>(e_, acr_options(p_));
      owned = acr_tools(*acr, p_.react_acr_tools);
    }
    owned.push_back(std::make_unique<AddToContextTool>(ctx));
    std::vector<AgentTool*> tools;
    for (auto& t : owned) tools.push_back(t.get());
    std::unique_ptr<StopPolicy> policy;
    if (criterion_ == "cl")
      policy = std::make_unique<ContextLengthPolicy>(ctx, p_);
    else if (criterion_ == "tc")
      policy = std::make_unique<ToolCallPolicy>();
    else
      policy = std::make_unique<SelfReflectionPolicy>(ctx, p_, request);
    ReactAgent agent(metered, tools, *policy, p_.react, "study_react_turn");
    agent.trace_state = [&ctx] { return json{{"context_tokens", ctx.tokens()}}; };
    static const PromptTemplate sys = load_prompt("study_react_system");
    static const PromptTemplate task = load_prompt("study_react_task");
    const PromptTemplate format = load_prompt("study_react_turn_" + agent.planned_tool_calls());
    auto ms = render_prompt(sys, {{"tools", agent.tool_list()}, {"turn_format", format.system}});
    for (auto& m : render_prompt(task, {{"request", request}})) ms.push_back(m);
    ReactRun run = agent.run(ms);
    json trace = {{"strategy", name()},
                  {"params", p_.to_json()},
                  {"stop_reason", run.stop_reason},
                  {"turns", run.turns},
                  {"tool_calls", run.tool_calls},
                  {"tool_call_mode", run.tool_call_mode},
                  {"invalid_turns", run.invalid_turns},
                  {"compactions", run.compactions},
                  {"steps", run.trace}};
    return finish(ctx, std::move(trace), &metered);
  }

 private:
  const Engine& e_;
  LlmBackend& llm_;
  StudyParams p_;
  std::string tools_, criterion_;
};

}  // namespace

AcrOptions acr_options(const StudyParams& p) {
  AcrOptions o;
  o.result_limit = p.acr_result_limit;
  o.class_full_limit = p.acr_class_full_limit;
  o.code_context = p.acr_code_context;
  o.skip_tests = p.acr_skip_tests;
  return o;
}

std::unique_ptr<Retriever> make_study_bm25(const Engine& e, const Models&, const RetrieverOptions& o) {
  return std::make_unique<StudyBm25>(e, o);
}

std::unique_ptr<Retriever> make_react_study(const Engine& e, const Models& m, const RetrieverOptions& o,
                                            const std::string& tools, const std::string& criterion) {
  return std::make_unique<ReactStudy>(e, m.need_llm("the react-" + tools + "-" + criterion + " strategy"), o, tools,
                                      criterion);
}

}  // namespace repoctx
