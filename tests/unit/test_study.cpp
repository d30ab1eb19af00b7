// The context-retrieval study: chunking and BM25Okapi, the token estimate, the ReAct loop and its stop
// criteria (recorded responses), ACR's tools and procedure, tasks, gold from patches on a real git
// repository, metrics against hand-computed values, and the evaluation runner's resume and per-task errors.
#include <gtest/gtest.h>

#include <cmath>
#include <deque>
#include <filesystem>
#include <fstream>
#include <set>

#include "eval/lca_builder.h"
#include "eval/localize.h"
#include "helpers.h"
#include "index/index.h"
#include "llm/prompts.h"
#include "repo/git_source.h"
#include "report_repo.h"
#include "retrieve/agent/react.h"
#include "retrieve/retriever.h"
#include "retrieve/study/acr_search.h"
#include "retrieve/study/chunks.h"
#include "retrieve/study/corpus.h"
#include "retrieve/study/tools.h"
#include "scripted_backend.h"
#include "util/error.h"
#include "util/subprocess.h"
#include "util/text.h"
#include "util/token_count.h"

using namespace repoctx;
using nlohmann::json;
using repoctx::testing::ScriptedBackend;
using repoctx::testing::TempDir;

namespace {

struct StudyRepo {
  TempDir repo, db;
  std::unique_ptr<Engine> engine;
  StudyRepo() {
    repo.write("pkg/__init__.py", "");
    repo.write("pkg/core.py", repoctx::testing::kCore);
    repo.write("pkg/store.py", repoctx::testing::kStore);
    repo.write("tests/test_core.py", "from pkg.core import Report\n\ndef test_report():\n    assert Report\n");
    IndexOptions o;
    o.db_path = db.str() + "/i.db";
    o.progress = false;
    build_index(repo.str(), o);
    engine = Engine::open(o.db_path);
  }
};

StudyRepo& repo() {
  static StudyRepo r;
  return r;
}

// Answers of one purpose in order; the last one repeats.
ScriptedBackend::Handler script(std::vector<std::string> answers) {
  auto q = std::make_shared<std::deque<std::string>>(answers.begin(), answers.end());
  return [q](const GenerateRequest&) {
    std::string a = q->front();
    if (q->size() > 1) q->pop_front();
    return a;
  };
}

// A schema-path turn: {"turn": the call or the answer}.
std::string call(const std::string& tool, const json& args) {
  return json{{"turn", {{"thought", "t"}, {"action", tool}, {"arguments", args}}}}.dump();
}
const std::string kAnswer = json{{"turn", {{"thought", "done"}, {"action", "answer"}, {"answer", "found it"}}}}.dump();

RetrievalResult run_strategy(const std::string& name, ScriptedBackend& llm, RetrieverOptions ro = {}) {
  Models m;
  m.llm = &llm;
  RetrievalQuery q;
  q.text = "Report.summarize counts rows by the wrong key";
  return make_retriever(name, *repo().engine, m, ro)->run(q);
}

}  // namespace

TEST(StudyTokens, EstimateFollowsPreTokenizerPieces) {
  EXPECT_EQ(estimate_tokens(""), 0);
  EXPECT_EQ(estimate_tokens("hello world"), 2);                     // "hello", " world"
  EXPECT_EQ(estimate_tokens("x = 1234\n"), 6);                      // "x", " =", " ", "123", "4", "\n"
  EXPECT_EQ(estimate_tokens("RecursiveCharacterTextSplitter"), 5);  // 30 letters: 1 + ceil(22 / 6)
  EXPECT_EQ(std::string(truncate_tokens("hello world again", 2)), "hello world");
}

TEST(StudyChunks, RecursiveSplitterMatchesLangChainByHand) {
  // "\n\n" splits first; the 11-character piece is split again on "\n", then " " (chunk size 10).
  std::string t = "aaaa bbbb\n\ncccc dddd\n\neeee";
  auto c = split_recursive(t, 10, 0);
  ASSERT_EQ(c.size(), 3u);
  EXPECT_EQ(t.substr(c[0].first, c[0].second), "aaaa bbbb");
  EXPECT_EQ(t.substr(c[1].first, c[1].second), "cccc dddd");
  EXPECT_EQ(c[1].first, 11u);
  EXPECT_EQ(t.substr(c[2].first, c[2].second), "eeee");
  // Overlap: pieces are kept from the end of a chunk while they fit in the overlap.
  std::string u = "a b c d e f";
  auto o = split_recursive(u, 5, 2);
  std::vector<std::string> got;
  for (auto [at, n] : o) got.push_back(u.substr(at, n));
  EXPECT_EQ(got, (std::vector<std::string>{"a b c", "c d", "d e", "e f"}));
}

TEST(StudyChunks, Bm25OkapiIdfAndRanking) {
  const auto& idx = study_chunks(*repo().engine, "text", {});
  ASSERT_GE(idx.chunks().size(), 4u);
  double n = static_cast<double>(idx.chunks().size());
  // "#" and "Path:" head every chunk: df = N, a negative idf replaced by epsilon * mean idf (> 0).
  EXPECT_GT(idx.idf("Path:"), 0);
  EXPECT_LT(idx.idf("Path:"), std::log(n));
  // A token of one chunk only: ln(N - 1 + 0.5) - ln(1.5).
  int df = 0;
  for (size_t i = 0; i < idx.chunks().size(); ++i)
    if (idx.document(static_cast<int>(i)).find("zebra_unique_helper(r):") != std::string::npos) ++df;
  ASSERT_EQ(df, 1);
  EXPECT_NEAR(idx.idf("zebra_unique_helper(r):"), std::log(n - 1 + 0.5) - std::log(1.5), 1e-12);
  auto top = idx.top("zebra_unique_helper(r):", 3);
  ASSERT_EQ(top.size(), 3u);
  EXPECT_NE(idx.document(top[0].chunk).find("zebra_unique_helper"), std::string::npos);
  EXPECT_GT(top[0].score, top[1].score);
}

TEST(StudyBaseline, TakesChunksUntilTheTokenBudget) {
  ScriptedBackend llm;
  RetrieverOptions ro;
  ro.study.context_tokens = 60;
  auto r = run_strategy("study-bm25", llm, ro);
  ASSERT_FALSE(r.hits.empty());
  int tokens = r.trace["context_tokens"].get<int>();
  EXPECT_GT(tokens, 0);
  EXPECT_EQ(r.trace["stop_reason"], "context_length");
  EXPECT_EQ(llm.total_calls, 0);
  // Each chunk taken raised the budget; the last one crossed the 60 - 10 margin.
  auto chunks = r.trace["chunks"];
  EXPECT_GT(chunks.back()["budget"].get<int>(), 50);
  for (const auto& h : r.hits) EXPECT_GE(h.file, 0);
}

TEST(StudyReact, ToolCallCriterionStopsAtTheFirstAnswer) {
  ScriptedBackend llm;
  llm.answers["study_react_turn"] =
      script({call("code_search", {{"query", "summarize rows"}}),
              call("add_to_context", {{"file_name", "pkg/core.py"}, {"start_line", 9}, {"end_line", 19}}), kAnswer});
  auto r = run_strategy("react-bm25-tc", llm);
  EXPECT_EQ(r.trace["stop_reason"], "no_tool_call");
  EXPECT_EQ(r.trace["tool_calls"], 2);
  ASSERT_EQ(r.hits.size(), 1u);
  EXPECT_EQ(r.hits[0].start_line, 9);
  EXPECT_EQ(r.hits[0].end_line, 18);  // end_line is exclusive, as in the study's add_to_context
  EXPECT_EQ(repo().engine->view().entities()[r.hits[0].entity].qualname, "Report.summarize");
  EXPECT_GT(r.usage.total().calls, 0);
  // Every step is in the trace, with the context size after it.
  EXPECT_EQ(r.trace["steps"][1]["state_after"]["context_tokens"].get<int>(), r.trace["context_tokens"].get<int>());
}

TEST(StudyReact, ContextLengthCriterionContinuesBelowTheTarget) {
  ScriptedBackend llm;
  llm.answers["study_react_turn"] = script(
      {kAnswer, call("add_to_context", {{"file_name", "pkg/core.py"}, {"start_line", 1}, {"end_line", 23}}), kAnswer});
  RetrieverOptions ro;
  ro.study.context_tokens = 40;
  auto r = run_strategy("react-bm25-cl", llm, ro);
  EXPECT_EQ(r.trace["stop_reason"], "context_length");
  EXPECT_GE(r.trace["context_tokens"].get<int>(), 40);
  EXPECT_EQ(r.trace["turns"], 3);  // the first answer came below the target: the agent was sent on
  // With a target never met, the rounds run out.
  ScriptedBackend idle;
  idle.answers["study_react_turn"] = script({kAnswer});
  ro.study.cl_max_rounds = 2;
  EXPECT_EQ(run_strategy("react-bm25-cl", idle, ro).trace["stop_reason"], "cl_rounds");
}

TEST(StudyReact, SelfReflectionAsksWhetherTheContextSuffices) {
  ScriptedBackend llm;
  llm.answers["study_react_turn"] = script(
      {kAnswer, call("add_to_context", {{"file_name", "pkg/store.py"}, {"start_line", 6}, {"end_line", 9}}), kAnswer});
  llm.answers["study_self_reflection"] = script({R"({"review": "nothing gathered", "is_sufficient": false})",
                                                 R"({"review": "load_rows is there", "is_sufficient": true})"});
  auto r = run_strategy("react-acr-sr", llm);
  EXPECT_EQ(r.trace["stop_reason"], "sufficient");
  EXPECT_EQ(llm.calls["study_self_reflection"], 2);
  // The first review's reasons went back to the agent.
  ASSERT_FALSE(r.hits.empty());
  EXPECT_EQ(repo().engine->view().files()[r.hits[0].file].path, "pkg/store.py");
  // A model that never says yes stops at the review limit.
  ScriptedBackend no;
  no.answers["study_react_turn"] = script({kAnswer});
  no.answers["study_self_reflection"] = script({R"({"review": "no", "is_sufficient": false})"});
  RetrieverOptions ro;
  ro.study.sr_max_reviews = 3;
  auto r2 = run_strategy("react-bm25-sr", no, ro);
  EXPECT_EQ(r2.trace["stop_reason"], "review_limit");
  EXPECT_EQ(no.calls["study_self_reflection"], 3);
}

TEST(StudyReact, MalformedUnknownAndOutsideCallsAreRecordedNotFatal) {
  ScriptedBackend llm;
  llm.answers["study_react_turn"] =
      script({"this is not json", call("rm_rf", {{"path", "/"}}),
              call("add_to_context", {{"file_name", "../../etc/passwd"}, {"start_line", 1}, {"end_line", 2}}),
              call("add_to_context", {{"file_name", "pkg/core.py"}}),  // missing arguments
              call("code_search", {{"query", 7}}),                     // wrong type
              kAnswer});
  auto r = run_strategy("react-bm25-tc", llm);
  EXPECT_EQ(r.trace["stop_reason"], "no_tool_call");
  EXPECT_TRUE(r.hits.empty());
  const auto& steps = r.trace["steps"];
  EXPECT_TRUE(steps[0].contains("invalid"));
  EXPECT_NE(steps[1]["error"].get<std::string>().find("unknown tool 'rm_rf'"), std::string::npos);
  EXPECT_NE(steps[2]["error"].get<std::string>().find("outside the repository"), std::string::npos);
  EXPECT_NE(steps[3]["error"].get<std::string>().find("missing argument 'start_line'"), std::string::npos);
  EXPECT_NE(steps[4]["error"].get<std::string>().find("must be of type string"), std::string::npos);
  // Bad turns in a row end the run.
  ScriptedBackend junk;
  junk.answers["study_react_turn"] = script({"{"});
  EXPECT_EQ(run_strategy("react-bm25-tc", junk).trace["stop_reason"], "invalid");
}

TEST(StudyReact, RepeatedCallsStopAsALoop) {
  ScriptedBackend llm;
  llm.answers["study_react_turn"] = script({call("search_class", {{"class_name", "Report"}})});
  auto r = run_strategy("react-acr-tc", llm);
  EXPECT_EQ(r.trace["stop_reason"], "loop");
  EXPECT_EQ(r.trace["turns"], 3);
}

TEST(StudyReact, CompactionReplacesToolExchangesBySummary) {
  ScriptedBackend llm;
  llm.answers["study_react_turn"] =
      script({call("code_search", {{"query", "rows"}}), call("code_search", {{"query", "store"}}), kAnswer});
  llm.answers["study_react_turn_compaction"] = script({"searched rows and store; found pkg/store.py"});
  RetrieverOptions ro;
  ro.study.react.conversation_tokens = 400;  // below the system prompt plus one search result
  auto r = run_strategy("react-bm25-tc", llm, ro);
  EXPECT_EQ(r.trace["stop_reason"], "no_tool_call");
  EXPECT_GE(r.trace["compactions"].get<int>(), 1);
  EXPECT_GE(llm.calls["study_react_turn_compaction"], 1);
  bool seen = false;
  for (const auto& s : r.trace["steps"])
    if (s.contains("compaction")) seen = s["tokens_after"].get<int>() < s["tokens_before"].get<int>();
  EXPECT_TRUE(seen);
}

namespace {

// What OpenAI's strict structured outputs refuse: a root that is not an object (a root anyOf), an object that
// is open or leaves a property out of `required`.
std::vector<std::string> strict_mode_violations(const json& schema, const std::string& at = "$") {
  std::vector<std::string> out;
  if (at == "$" && (schema.value("type", "") != "object" || schema.contains("anyOf")))
    out.push_back("$: the root must be an object, not anyOf");
  if (schema.is_object()) {
    if (schema.value("type", "") == "object") {
      if (schema.value("additionalProperties", true) != false)
        out.push_back(at + ": additionalProperties is not false");
      std::set<std::string> props, required;
      const json properties = schema.value("properties", json::object());
      const json req = schema.value("required", json::array());
      for (auto it = properties.begin(); it != properties.end(); ++it) props.insert(it.key());
      for (const auto& r : req) required.insert(r.get<std::string>());
      if (props != required) out.push_back(at + ": not every property is required");
    }
    for (auto& [k, v] : schema.items()) {
      auto sub = strict_mode_violations(v, at + "." + k);
      out.insert(out.end(), sub.begin(), sub.end());
    }
  } else if (schema.is_array()) {
    for (size_t i = 0; i < schema.size(); ++i) {
      auto sub = strict_mode_violations(schema[i], at + "[" + std::to_string(i) + "]");
      out.insert(out.end(), sub.begin(), sub.end());
    }
  }
  return out;
}

// A backend with native tool calls: each turn's answer is a list of (tool, arguments text) calls, or none for
// a plain answer; it records every request. With `refuse`, any request offering tools fails as a server
// without tool calling fails, and the turns are served by the scripted schema answers instead.
struct NativeToolBackend : ScriptedBackend {
  std::deque<std::vector<std::pair<std::string, std::string>>> turns;
  std::vector<GenerateRequest> requests;
  bool refuse = false;
  Capabilities capabilities() const override {
    Capabilities c = ScriptedBackend::capabilities();
    c.tool_calls = true;
    return c;
  }
  GenerateResult generate(const GenerateRequest& r) override {
    if (r.tools.empty()) return ScriptedBackend::generate(r);
    if (refuse) throw Error(ExitCode::llm, "HTTP 500: tools param requires --jinja flag");
    requests.push_back(r);
    ++calls[r.purpose];
    Generation g;
    auto calls_now = turns.empty() ? std::vector<std::pair<std::string, std::string>>{} : turns.front();
    if (!turns.empty()) turns.pop_front();
    if (calls_now.empty()) g.text = "The context holds Report.summarize.";
    for (size_t i = 0; i < calls_now.size(); ++i)
      g.tool_calls.push_back(
          {"c" + std::to_string(requests.size()) + std::to_string(i), calls_now[i].first, calls_now[i].second});
    GenerateResult res;
    res.choices.push_back(g);
    return res;
  }
};

}  // namespace

TEST(StudyReact, TurnSchemaIsOneBranchPerToolPlusAnswerUnderOneObjectRoot) {
  GatheredContext ctx(study_corpus(*repo().engine, "text"), TokenCounter::cl100k);
  AddToContextTool add(ctx);
  struct Never : StopPolicy {
    std::string name() const override { return "never"; }
    StopDecision on_answer(ReactAgent&, const std::string&) override { return {}; }
  } policy;
  ScriptedBackend llm;
  ReactAgent agent(llm, {&add}, policy, {});
  json s = agent.turn_schema();
  const json& any = s["properties"]["turn"]["anyOf"];
  ASSERT_EQ(any.size(), 2u);
  EXPECT_EQ(any[0]["properties"]["action"]["enum"], json::array({"add_to_context"}));
  EXPECT_EQ(any[0]["properties"]["arguments"]["properties"]["file_name"]["maxLength"], 200);
  EXPECT_EQ(any[1]["properties"]["action"]["enum"], json::array({"answer"}));
  EXPECT_EQ(strict_mode_violations(s), std::vector<std::string>{});
  for (const auto& t : agent.native_tools())
    EXPECT_EQ(strict_mode_violations(t["function"]["parameters"]), std::vector<std::string>{});
  // The check itself fails on what strict mode refuses.
  EXPECT_FALSE(strict_mode_violations({{"anyOf", any}}).empty());
  EXPECT_FALSE(strict_mode_violations({{"type", "object"}, {"properties", {{"a", {{"type", "string"}}}}}}).empty());
}

TEST(StudyReact, NativeToolCallsAnswerEachCallByItsIdAndEndOnAPlainAnswer) {
  NativeToolBackend llm;
  llm.turns = {{{"code_search", R"({"query": "summarize rows"})"},
                {"add_to_context", R"({"file_name": "pkg/core.py", "start_line": 9, "end_line": 19})"}},
               {{"code_search", "not json"}},
               {}};
  auto r = run_strategy("react-bm25-tc", llm);
  EXPECT_EQ(r.trace["tool_call_mode"], "native");
  EXPECT_EQ(r.trace["stop_reason"], "no_tool_call");
  EXPECT_EQ(r.trace["tool_calls"], 2);
  EXPECT_EQ(r.trace["invalid_turns"], 1);
  ASSERT_EQ(r.hits.size(), 1u);
  EXPECT_EQ(r.hits[0].start_line, 9);
  ASSERT_EQ(llm.requests.size(), 3u);
  // Every turn offers the tools with tool_choice auto, and no schema constrains the answer.
  EXPECT_EQ(llm.requests[0].tools.size(), 2u);
  EXPECT_EQ(llm.requests[0].tool_choice, "auto");
  EXPECT_TRUE(llm.requests[0].json_schema.empty());
  // The second turn reads the assistant's two calls and one tool message per call id, in order.
  const auto& ms = llm.requests[1].messages;
  ASSERT_GE(ms.size(), 3u);
  const ChatMessage& assistant = ms[ms.size() - 3];
  EXPECT_EQ(assistant.role, "assistant");
  ASSERT_EQ(assistant.tool_calls.size(), 2u);
  EXPECT_EQ(ms[ms.size() - 2].role, "tool");
  EXPECT_EQ(ms[ms.size() - 2].tool_call_id, assistant.tool_calls[0].id);
  EXPECT_EQ(ms.back().tool_call_id, assistant.tool_calls[1].id);
  EXPECT_NE(ms.back().content.find("added to the context"), std::string::npos);
  // Unparseable arguments go back to the model as an error on that call.
  EXPECT_NE(llm.requests[2].messages.back().content.find("not a JSON object"), std::string::npos);
  // The system prompt describes native turns, not the JSON answer format.
  EXPECT_EQ(llm.requests[0].messages[0].content.find("{\"turn\""), std::string::npos);
}

TEST(StudyReact, AServerThatRefusesToolsSendsTheRunToSchemaTurns) {
  NativeToolBackend llm;
  llm.refuse = true;
  llm.answers["study_react_turn"] = script({kAnswer});
  auto r = run_strategy("react-bm25-tc", llm);
  EXPECT_EQ(r.trace["tool_call_mode"], "schema");
  EXPECT_EQ(r.trace["stop_reason"], "no_tool_call");
  EXPECT_NE(r.trace["steps"][0]["native_tool_calls_refused"].get<std::string>().find("--jinja"), std::string::npos);
  // An explicit native choice fails instead of falling back.
  RetrieverOptions ro;
  ro.study.react.tool_calls = "native";
  EXPECT_THROW(run_strategy("react-bm25-tc", llm, ro), Error);
}

TEST(StudyAcr, SearchApisAnswerFromTheIndex) {
  AcrSearch s(*repo().engine, {});
  auto c = s.search_class("Report");
  ASSERT_TRUE(c.ok);
  EXPECT_NE(c.text.find("<class>Report</class>"), std::string::npos);
  EXPECT_NE(c.text.find("def summarize(self, key):"), std::string::npos);  // the method's header ...
  EXPECT_EQ(c.text.find("load_rows(self.store)"), std::string::npos);      // ... not its body
  auto m = s.search_method_in_class("format", "Report");
  ASSERT_TRUE(m.ok);
  EXPECT_EQ(m.results[0].start, 20);
  EXPECT_FALSE(s.search_method_in_file("format", "store.py").ok);
  EXPECT_TRUE(s.search_method_in_file("format", "core.py").ok);
  auto code = s.search_code("counts.get(key, 0)");
  ASSERT_TRUE(code.ok);
  EXPECT_EQ(code.results[0].func_name, "summarize");
  EXPECT_EQ(code.results[0].class_name, "Report");
  EXPECT_FALSE(s.search_class("Nope").ok);
  // Test files are not searched, as in ACR.
  EXPECT_FALSE(s.search_method("test_report").ok);
  EXPECT_NE(s.call("search_class", {"a", "b"}).text.find("wrong number of arguments"), std::string::npos);
  EXPECT_FALSE(s.get_code_around_line("../outside.py", 1, 2).ok);
}

TEST(StudyAcr, ShowDefinitionFollowsTheSymbolOnTheLine) {
  AcrSearch s(*repo().engine, {});
  // An imported function (line 11: rows = load_rows(self.store)) is shown where its module defines it.
  auto imported = s.show_definition("load_rows", 11, "pkg/core.py");
  ASSERT_TRUE(imported.ok) << imported.text;
  ASSERT_EQ(imported.results.size(), 1u);
  EXPECT_EQ(repo().engine->view().files()[imported.results[0].file].path, "pkg/store.py");
  EXPECT_EQ(imported.results[0].start, 6);
  EXPECT_NE(imported.text.find("def load_rows(store):"), std::string::npos);
  // A method through self (line 18: self.format(counts)), and the class of its receiver's chain.
  auto method = s.show_definition("format", 18, "pkg/core.py");
  ASSERT_TRUE(method.ok) << method.text;
  EXPECT_EQ(method.results[0].start, 20);
  EXPECT_EQ(method.results[0].class_name, "Report");
  // A name defined on the line itself, a module outside the repository, and a symbol not on the line.
  EXPECT_EQ(s.show_definition("zebra_unique_helper", 12, "pkg/core.py").results[0].start, 12);
  auto outside = s.show_definition("json", 18, "pkg/core.py");
  EXPECT_TRUE(outside.ok);
  EXPECT_TRUE(outside.results.empty());
  EXPECT_NE(outside.text.find("outside the repository"), std::string::npos) << outside.text;
  EXPECT_NE(s.show_definition("Store", 11, "pkg/core.py").text.find("does not appear"), std::string::npos);
  EXPECT_FALSE(s.show_definition("x", 1, "../etc/passwd").ok);
  EXPECT_NE(s.call("show_definition", {"load_rows", "eleven", "pkg/core.py"}).text.find("whole number"),
            std::string::npos);
  // The study's tool set is six ACR searches and show_definition; the full set is ACR's eight APIs.
  auto study = acr_tools(s, "study");
  std::vector<std::string> names;
  for (const auto& t : study) names.push_back(t->spec().name);
  EXPECT_EQ(names,
            (std::vector<std::string>{"search_class", "search_method_in_file", "search_method_in_class",
                                      "search_method", "search_code", "search_code_in_file", "show_definition"}));
  EXPECT_EQ(acr_tools(s, "full").size(), 8u);
  EXPECT_THROW(acr_tools(s, "some"), Error);
}

TEST(StudyAcr, TwoStagesSearchThenBugLocations) {
  ScriptedBackend llm;
  llm.answers["acr_select"] = script({"I will look at the Report class.", "The bug is in Report.summarize."});
  llm.answers["acr_proxy"] = script(
      {R"({"API_calls": [{"api": "search_class", "arguments": ["Report", "extra"]}], "bug_locations": []})",
       R"({"API_calls": [{"api": "search_class", "arguments": ["Report"]}], "bug_locations": []})",
       R"({"API_calls": [], "bug_locations": [{"file": "pkg/core.py", "class": "Report", "method": "summarize"}]})"});
  llm.answers["acr_analyze"] = script({"summarize counts by key."});
  auto r = run_strategy("acr", llm);
  EXPECT_EQ(r.trace["stop_reason"], "bug_locations");
  // The first extraction had a wrong arity: the proxy was asked again with the reason.
  EXPECT_NE(r.trace["rounds"][0]["proxy"][0].get<std::string>().find("wrong number of arguments"), std::string::npos);
  ASSERT_EQ(r.hits.size(), 1u);
  EXPECT_EQ(r.hits[0].start_line, 9);
  EXPECT_EQ(r.hits[0].end_line, 18);
  EXPECT_EQ(llm.calls["acr_analyze"], 1);
}

TEST(StudyMetrics, PrecisionRecallF1ByHand) {
  auto m = prf({"a", "b", "c"}, {"b", "c", "d", "e"});
  EXPECT_DOUBLE_EQ(m.p, 0.5);
  EXPECT_DOUBLE_EQ(m.r, 2.0 / 3.0);
  EXPECT_NEAR(m.f1, 2 * 0.5 * (2.0 / 3) / (0.5 + 2.0 / 3), 1e-12);
  auto none = prf({"a"}, {});
  EXPECT_EQ(none.p, 0);
  EXPECT_EQ(none.f1, 0);
  EXPECT_EQ(prf({}, {"x"}).r, 0);
}

TEST(StudyMetrics, EntitiesOfLinesAreTheInnermostScopesOrEveryEnclosingOne) {
  const auto& v = repo().engine->view();
  // Line 12 is inside Report.summarize.<locals>.zebra_unique_helper; line 1 is module level; line 11 is in
  // Report.summarize itself.
  LineSets lines = {{"pkg/core.py", {1, 11, 12}}};
  EXPECT_EQ(entities_of_lines(v, lines, EntityRule::innermost),
            (std::set<std::string>{"pkg/core.py::<module>", "pkg/core.py::Report.summarize",
                                   "pkg/core.py::Report.summarize.<locals>.zebra_unique_helper"}));
  EXPECT_EQ(entities_of_lines(v, lines, EntityRule::enclosing),
            (std::set<std::string>{"pkg/core.py::<module>", "pkg/core.py::Report", "pkg/core.py::Report.summarize",
                                   "pkg/core.py::Report.summarize.<locals>.zebra_unique_helper"}));
  // A retrieved range on Report.format only against a gold hunk in summarize: same file; no entity in common by
  // the study's rule, the class Report in common when every enclosing scope counts.
  LineSets gold = {{"pkg/core.py", {10, 11}}};
  Hit h;
  h.file = *v.file_by_path("pkg/core.py");
  h.start_line = 20;
  h.end_line = 22;
  TaskScore s = score_task(v, gold, {h}, EntityRule::innermost);
  EXPECT_DOUBLE_EQ(s.file.f1, 1.0);
  EXPECT_EQ(s.gold_entities, (std::set<std::string>{"pkg/core.py::Report.summarize"}));
  EXPECT_DOUBLE_EQ(s.entity.f1, 0.0);
  s = score_task(v, gold, {h}, EntityRule::enclosing);
  EXPECT_DOUBLE_EQ(s.entity.p, 0.5);  // {Report, Report.format} vs {Report, Report.summarize}
  EXPECT_DOUBLE_EQ(s.entity.r, 0.5);
  EXPECT_EQ(entity_rule_named("innermost"), EntityRule::innermost);
  EXPECT_THROW(entity_rule_named("outermost"), Error);
}

TEST(StudyTasks, LoadsSweBenchAndLcaRowsAndFlagsBadOnes) {
  TempDir d;
  d.write("t.jsonl", json{{"instance_id", "o__r-1"},
                          {"repo", "o/r"},
                          {"base_commit", "abc"},
                          {"problem_statement", "bug"},
                          {"patch", "diff"}}
                             .dump() +
                         "\n" +
                         json{{"repo", "o/r"},
                              {"hash", "0123456789abcdef"},
                              {"message", "Fix it"},
                              {"mods",
                               {{{"change_type", "MODIFY"},
                                 {"old_path", "a.py"},
                                 {"new_path", "a.py"},
                                 {"diff", "@@ -1 +1 @@\n-x\n+y\n"}}}}}
                             .dump() +
                         "\n" + R"({"foo": 1})" + "\nnot json\n");
  auto t = load_localize_tasks(d.str() + "/t.jsonl");
  ASSERT_EQ(t.size(), 4u);
  EXPECT_EQ(t[0].id, "o__r-1");
  EXPECT_EQ(t[0].dataset, "swe-bench-lite");
  EXPECT_EQ(t[0].request, "bug");
  EXPECT_TRUE(t[0].error.empty());
  EXPECT_EQ(t[1].dataset, "lca");
  EXPECT_EQ(t[1].id, "o/r@0123456789ab");
  auto files = parse_unified_diff(t[1].patch);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].old_path, "a.py");
  EXPECT_FALSE(t[2].error.empty());
  EXPECT_FALSE(t[3].error.empty());
  EXPECT_THROW(load_localize_tasks(d.str() + "/missing.jsonl"), Error);
}

namespace {

void git(const std::string& dir, std::vector<std::string> args) {
  args.insert(args.begin(),
              {"/usr/bin/git", "-C", dir, "-c", "user.name=t", "-c", "user.email=t@t", "-c", "commit.gpgsign=false"});
  int pid = spawn_process(args);
  std::atomic<bool> stop{false};
  ASSERT_EQ(wait_processes({pid}, &stop)[0], 0) << args[5];
}

// A git repository with two commits: the second changes Report.format.
struct GitFixture {
  TempDir dir, cache, out;
  std::string base, head;
  GitFixture() {
    dir.write("pkg/__init__.py", "");
    dir.write("pkg/core.py", repoctx::testing::kCore);
    dir.write("pkg/store.py", repoctx::testing::kStore);
    dir.write("README.md", "report\n");
    git(dir.str(), {"init", "-q"});
    git(dir.str(), {"add", "."});
    git(dir.str(), {"commit", "-q", "-m", "first"});
    std::string changed = repoctx::testing::kCore;
    changed.replace(changed.find("return sorted(counts.items())"), 29, "return sorted(counts.items(), reverse=True)");
    dir.write("pkg/core.py", changed);
    git(dir.str(), {"commit", "-q", "-am", "Sort the report's rows in descending order of key"});
    GitRepository g(dir.str());
    head = *g.resolve_commit("HEAD");
    base = *g.resolve_commit("HEAD~1");
  }
};

}  // namespace

// A row of LCA's code-editing set (JetBrains-Research/lca-code-editing, config commitchronicle-py-long, as the
// study's code reads it): hash, repo, date, license, message, and `mods` whose ADD has a null old_path and whose
// DELETE has a null new_path, each diff its hunks only. Every file the commit touches at the base is gold,
// whatever its type; an added file is not (nothing at the base to retrieve).
TEST(StudyTasks, LcaRowsInThePublishedSchema) {
  TempDir d;
  json mods = json::array(
      {{{"change_type", "MODIFY"},
        {"old_path", "src/pkg/core.py"},
        {"new_path", "src/pkg/core.py"},
        {"diff", "@@ -10,3 +10,4 @@ def run(self):\n     a = 1\n-    b = 2\n+    b = 3\n+    c = 4\n     return a\n"}},
       {{"change_type", "ADD"},
        {"old_path", nullptr},
        {"new_path", "src/pkg/new.py"},
        {"diff", "@@ -0,0 +1,2 @@\n+def f():\n+    return 1\n"}},
       {{"change_type", "DELETE"},
        {"old_path", "docs/old.txt"},
        {"new_path", nullptr},
        {"diff", "@@ -1,2 +0,0 @@\n-old\n-notes\n"}},
       {{"change_type", "MODIFY"},
        {"old_path", "README.rst"},
        {"new_path", "README.rst"},
        {"diff", "@@ -5 +5 @@\n-Usage\n+Usage and options\n"}},
       {{"change_type", "RENAME"},
        {"old_path", "src/pkg/util.py"},
        {"new_path", "src/pkg/helpers.py"},
        {"diff", "@@ -1 +1 @@\n-import os\n+import os.path\n"}}});
  json row = {{"hash", "5f0c3a9e1b2d4c6e8f0a1b2c3d4e5f6a7b8c9d0e"},
              {"repo", "owner/project"},
              {"date", "01.02.2023 10:11:12"},
              {"license", "MIT License"},
              {"message", "Add option parsing to run and document it"},
              {"mods", mods}};
  d.write("lca.jsonl", row.dump() + "\n");
  auto t = load_localize_tasks(d.str() + "/lca.jsonl");
  ASSERT_EQ(t.size(), 1u);
  ASSERT_TRUE(t[0].error.empty()) << t[0].error;
  EXPECT_EQ(t[0].dataset, "lca");
  EXPECT_EQ(t[0].repo, "owner/project");
  EXPECT_EQ(t[0].commit, "5f0c3a9e1b2d4c6e8f0a1b2c3d4e5f6a7b8c9d0e");
  EXPECT_EQ(t[0].request, "Add option parsing to run and document it");
  auto diff = parse_unified_diff(t[0].patch);
  ASSERT_EQ(diff.size(), 5u);
  LineSets gold = gold_lines(diff);
  std::set<std::string> files;
  for (const auto& [path, _] : gold) files.insert(path);
  EXPECT_EQ(files, (std::set<std::string>{"README.rst", "docs/old.txt", "src/pkg/core.py", "src/pkg/util.py"}));
  EXPECT_EQ(gold["src/pkg/core.py"], (std::set<int>{10, 11, 12}));
  EXPECT_EQ(gold["docs/old.txt"], (std::set<int>{1, 2}));
}

TEST(StudyGit, GoldFromThePatchAtTheBaseCommit) {
  GitFixture f;
  GitRepository g(f.dir.str());
  EXPECT_FALSE(g.resolve_commit("0000000000000000000000000000000000000000"));
  std::string patch = g.diff(f.base, f.head);
  auto files = parse_unified_diff(patch);
  ASSERT_EQ(files.size(), 1u);
  EXPECT_EQ(files[0].old_path, "pkg/core.py");
  ASSERT_EQ(files[0].hunks.size(), 1u);
  auto gold = gold_lines(files);
  // The hunk's base range: the changed line 22 and up to 3 lines of context before it.
  EXPECT_EQ(gold["pkg/core.py"], (std::set<int>{19, 20, 21, 22}));
  std::string why;
  EXPECT_TRUE(g.patch_applies(f.base, patch, &why)) << why;
  EXPECT_FALSE(g.patch_applies(f.head, patch, &why));  // already applied: the '-' line is gone
  EXPECT_NE(why.find("does not apply"), std::string::npos);
  // The base tree, written from git objects (sources only), twice into the same folder.
  std::string d1 = g.materialize_tree(f.base, f.cache.str(), [](const std::string& p) { return p.ends_with(".py"); });
  std::string d2 = g.materialize_tree(f.base, f.cache.str(), [](const std::string&) { return true; });
  EXPECT_EQ(d1, d2);
  EXPECT_TRUE(std::filesystem::exists(d1 + "/pkg/core.py"));
  EXPECT_FALSE(std::filesystem::exists(d1 + "/README.md"));
  EXPECT_EQ(*g.read_file(f.base, "pkg/core.py"), repoctx::testing::kCore);
  // A header whose line numbers are off (as in some SWE-bench patches): libgit2 refuses it, git applies it
  // at an offset, and so does place_hunks, moving the gold lines to where the hunk's lines are.
  std::string shifted = patch;
  shifted.replace(shifted.find("@@ -19,4 +19,4 @@"), 17, "@@ -15,4 +15,4 @@");
  EXPECT_FALSE(g.patch_applies(f.base, shifted, &why));
  auto moved = parse_unified_diff(shifted);
  auto read = [&](const std::string& p) { return g.read_file(f.base, p); };
  EXPECT_EQ(place_hunks(moved, read), "");
  EXPECT_EQ(gold_lines(moved)["pkg/core.py"], (std::set<int>{19, 20, 21, 22}));
  // Context that is nowhere in the base does not apply at any offset.
  std::string wrong = patch;
  wrong.replace(wrong.find(" def format(self, counts):"), 26, " def fmt(self, counts):   ");
  auto bad = parse_unified_diff(wrong);
  EXPECT_NE(place_hunks(bad, read).find("does not apply"), std::string::npos);
}

TEST(StudyGit, EvaluationRecordsBadTasksAndResumes) {
  GitFixture f;
  GitRepository g(f.dir.str());
  std::string patch = g.diff(f.base, f.head);
  std::string repos = std::filesystem::path(f.dir.str()).parent_path().string();
  std::string name = "o/" + std::filesystem::path(f.dir.str()).filename().string();
  std::vector<LocalizeTask> tasks(4);
  tasks[0] = {"good", "swe-bench-lite", name, f.base, "", "sort the report rows in descending order", patch, ""};
  tasks[1] = {"no-commit", "swe-bench-lite", name, std::string(40, 'a'), "", "x", patch, ""};
  tasks[2] = {"no-apply", "swe-bench-lite", name, f.head, "", "x", patch, ""};
  tasks[3] = {"lca", "lca", name, "", f.head, "Sort the report's rows in descending order of key", "", ""};
  LocalizeEvalOptions o;
  o.strategies = {"study-bm25"};
  o.out_dir = f.out.str() + "/res";
  o.repos_dirs = {repos};
  o.cache_dir = f.cache.str();
  EXPECT_EQ(run_localize_eval(tasks, o, {}), 4u);
  std::ifstream in(o.out_dir + "/results-0of1.jsonl");
  std::map<std::string, json> rows;
  for (std::string line; std::getline(in, line);) {
    json r = json::parse(line);
    rows[r["task"]] = r;
  }
  EXPECT_FALSE(rows["good"].contains("error")) << rows["good"].dump();
  EXPECT_DOUBLE_EQ(rows["good"]["file"]["r"].get<double>(), 1.0);
  EXPECT_NE(rows["no-commit"]["error"].get<std::string>().find("not in"), std::string::npos);
  EXPECT_NE(rows["no-apply"]["error"].get<std::string>().find("does not apply"), std::string::npos);
  EXPECT_FALSE(rows["lca"].contains("error")) << rows["lca"].dump();
  EXPECT_EQ(rows["lca"]["gold_files"], json::array({"pkg/core.py"}));
  // Resume: nothing left to do; the table has the study's columns.
  EXPECT_EQ(run_localize_eval(tasks, o, {}), 0u);
  std::string table = localize_table(o.out_dir);
  EXPECT_NE(table.find("| BM25 | Baseline |"), std::string::npos);
  EXPECT_NE(table.find("Avg. CL"), std::string::npos);
}

TEST(StudyTable, StrategyErrorsCountAsEmptyRetrievalsAndTasksNotSetUpAreSkipped) {
  TempDir d;
  auto ok = [](const std::string& id, double f1, int tokens, json gold, json out_of_reach) {
    json prf = {{"p", f1}, {"r", f1}, {"f1", f1}};
    return json{{"task", id},
                {"dataset", "swe"},
                {"repo", "o/r"},
                {"strategy", "study-bm25"},
                {"file", prf},
                {"entity", prf},
                {"context_tokens", tokens},
                {"seconds", 1.0},
                {"gold_files", gold},
                {"gold_files_out_of_reach", out_of_reach}};
  };
  json failed = {{"task", "t3"},   {"dataset", "swe"},          {"repo", "o/r"}, {"strategy", "study-bm25"},
                 {"error", "llm"}, {"error_stage", "strategy"}, {"seconds", 1.0}};
  json unset = {{"task", "t4"},       {"dataset", "swe"},     {"repo", "o/r"}, {"strategy", "study-bm25"},
                {"error", "no repo"}, {"error_stage", "task"}};
  std::ofstream(d.path() / "results-0of1.jsonl")
      << ok("t1", 1.0, 600, {"a.py", "docs/a.rst"}, {"docs/a.rst"}).dump() << "\n"
      << ok("t2", 0.5, 300, {"b.py"}, json::array()).dump() << "\n"
      << failed.dump() << "\n"
      << unset.dump() << "\n";
  std::string table = localize_table(d.path().string());
  // Three scored rows (the failure as zero), one error among them, one task skipped: F1 (1 + 0.5 + 0) / 3.
  EXPECT_NE(table.find("| BM25 | Baseline | 0.500 | 0.500 | 0.500 | 0.500 | 0.500 | 0.500 | 300 | 3 | 1 | 1 |"),
            std::string::npos)
      << table;
  // Half of t1's gold files and all of t2's are within reach: file recall can reach (0.5 + 1) / 2 at most.
  EXPECT_NE(table.find("study-bm25 0.750."), std::string::npos) << table;
}

// The study's corpus reaches the repository's text files beyond the index: BM25 finds them, hits name them
// (no file id, their path and text), add_to_context takes them, and the file metric counts them; binary,
// ignored and non-UTF-8 files stay out, and `study` keeps the study code's file types only.
TEST(StudyCorpus, TextFilesOutsideTheIndexAreSearchedGatheredAndScored) {
  TempDir repo, db;
  repo.write("pkg/__init__.py", "");
  repo.write("pkg/core.py", repoctx::testing::kCore);
  repo.write("docs/usage.rst", "Usage\n=====\n\nThe frobnicator setting tunes quux wobble.\n");
  repo.write("conf/settings.yaml", "frobnicator: 3\n");
  repo.write("lib/boost_glue.json", "{\"frobnicator\": true}\n");
  repo.write("notes.txt", "frobnicator\n");
  repo.write("logo.png", std::string("\x89PNG\0\0frobnicator", 17));
  repo.write("latin.txt", "frobnicator caf\xe9\n");
  repo.write(".gitignore", "ignored.md\n");
  repo.write(".repoctx-tree", "0123abcd\n");
  repo.write("ignored.md", "frobnicator quux wobble\n");
  IndexOptions o;
  o.db_path = db.str() + "/i.db";
  o.progress = false;
  build_index(repo.str(), o);
  auto engine = Engine::open(o.db_path);

  const StudyCorpus& text = study_corpus(*engine, "text");
  EXPECT_EQ(text.indexed(), static_cast<int>(engine->view().files().size()));
  for (const char* p : {"docs/usage.rst", "conf/settings.yaml", "lib/boost_glue.json", "notes.txt", ".gitignore"})
    EXPECT_TRUE(text.find(p).has_value()) << p;
  for (const char* p : {"logo.png", "latin.txt", "ignored.md", ".repoctx-tree"})
    EXPECT_FALSE(text.find(p).has_value()) << p;
  auto rst = *text.find("docs/usage.rst");
  EXPECT_EQ(text.file(rst), -1);
  EXPECT_EQ(text.line_count(rst), 4);
  EXPECT_EQ(text.file(*text.find("pkg/core.py")), *engine->view().file_by_path("pkg/core.py"));

  const StudyCorpus& study = study_corpus(*engine, "study");
  std::set<std::string> searched;
  for (int d : study.searched()) searched.insert(study.path(d));
  EXPECT_TRUE(searched.count("conf/settings.yaml"));
  EXPECT_TRUE(searched.count("pkg/core.py"));
  for (const char* p : {"docs/usage.rst", "notes.txt", "lib/boost_glue.json"}) EXPECT_FALSE(searched.count(p)) << p;
  EXPECT_FALSE(study_corpus(*engine, "indexed").find("docs/usage.rst").has_value());
  EXPECT_THROW(study_corpus(*engine, "everything"), Error);

  RetrieverOptions ro;
  ro.study.context_tokens = 30;
  RetrievalQuery q;
  q.text = "frobnicator setting tunes quux wobble";
  auto r = make_retriever("study-bm25", *engine, {}, ro)->run(q);
  ASSERT_FALSE(r.hits.empty());
  bool rst_hit = false;
  for (const Hit& h : r.hits)
    if (h.path == "docs/usage.rst") {
      rst_hit = true;
      EXPECT_EQ(h.start_line, 1);
      EXPECT_EQ(h.end_line, 4);
      EXPECT_NE(h.text.find("frobnicator setting"), std::string::npos);
    }
  EXPECT_TRUE(rst_hit);
  EXPECT_TRUE(r.trace["context"].contains("docs/usage.rst"));
  LineSets gold{{"docs/usage.rst", {4}}, {"pkg/core.py", {1}}};
  TaskScore s = score_task(engine->view(), gold, r.hits, EntityRule::innermost);
  EXPECT_TRUE(s.files.count("docs/usage.rst"));
  EXPECT_GT(s.file.r, 0.0);
  EXPECT_EQ(s.gold_entities, std::set<std::string>{"pkg/core.py::<module>"});  // text files hold no entities

  ro.study.corpus = "indexed";
  auto only_py = make_retriever("study-bm25", *engine, {}, ro)->run(q);
  for (const Hit& h : only_py.hits) EXPECT_GE(h.file, 0);

  GatheredContext ctx(text, TokenCounter::cl100k);
  AddToContextTool add(ctx);
  auto out = add.call({{"file_name", "./docs/usage.rst"}, {"start_line", 3}, {"end_line", 5}});
  EXPECT_TRUE(out.ok) << out.text;
  EXPECT_EQ(ctx.lines().at(rst), (std::set<int>{3, 4}));
  EXPECT_GT(ctx.tokens(), 0);
  auto bad = add.call({{"file_name", "usage.rst"}, {"start_line", 1}, {"end_line", 2}});
  EXPECT_FALSE(bad.ok);
  EXPECT_NE(bad.text.find("did you mean: docs/usage.rst"), std::string::npos) << bad.text;
  EXPECT_FALSE(add.call({{"file_name", "logo.png"}, {"start_line", 1}, {"end_line", 2}}).ok);
}

// make-lca-tasks keeps the Python files of a commit as its gold by default and every non-test file with
// gold_files "text"; such a task's README.md gold is within the study corpus's reach, and the row says so.
TEST(StudyGit, TextGoldFilesAreKeptOnRequestAndReachable) {
  GitFixture f;
  std::string changed = repoctx::testing::kCore;
  changed.replace(changed.find("return sorted(counts.items())"), 29, "return sorted(counts.items(), key=str)");
  f.dir.write("pkg/core.py", changed);
  f.dir.write("README.md", "report\n\nRows are sorted by their key as text.\n");
  git(f.dir.str(), {"commit", "-q", "-am", "Sort the report rows by key as text and document it"});
  LcaBuildOptions lo;
  lo.repo_name = "o/" + std::filesystem::path(f.dir.str()).filename().string();
  lo.max_tasks = 1;
  lo.min_changed_lines = 1;
  auto python = build_lca_tasks(f.dir.str(), lo);
  ASSERT_EQ(python.size(), 1u);
  EXPECT_EQ(python[0]["mods"].size(), 1u) << python[0]["mods"].dump();
  lo.gold_files = "text";
  auto text = build_lca_tasks(f.dir.str(), lo);
  ASSERT_EQ(text.size(), 1u);
  std::set<std::string> paths;
  for (const auto& m : text[0]["mods"]) paths.insert(m["new_path"].get<std::string>());
  EXPECT_EQ(paths, (std::set<std::string>{"README.md", "pkg/core.py"}));

  LocalizeTask t{"text", "lca", lo.repo_name, "", text[0]["hash"], "Rows sorted by key report README", "", ""};
  LocalizeEvalOptions o;
  o.strategies = {"study-bm25", "files-bm25"};
  o.out_dir = f.out.str() + "/text";
  o.repos_dirs = {std::filesystem::path(f.dir.str()).parent_path().string()};
  o.cache_dir = f.cache.str();
  EXPECT_EQ(run_localize_eval({t}, o, {}), 2u);
  std::ifstream in(o.out_dir + "/results-0of1.jsonl");
  std::map<std::string, json> rows;
  for (std::string line; std::getline(in, line);) rows[json::parse(line)["strategy"]] = json::parse(line);
  EXPECT_EQ(rows["study-bm25"]["gold_files"], json::array({"README.md", "pkg/core.py"}));
  EXPECT_EQ(rows["study-bm25"]["gold_files_out_of_reach"], json::array());
  EXPECT_EQ(rows["files-bm25"]["gold_files_out_of_reach"], json::array({"README.md"}));
  EXPECT_DOUBLE_EQ(rows["study-bm25"]["file"]["r"].get<double>(), 1.0) << rows["study-bm25"].dump();
}

// A clone without some blobs (a snapshot that leaves out its largest files): writing every file of a tree
// leaves a missing non-source file out and lists it, while a missing source file still fails.
TEST(StudyGit, ATreeWithoutSomeBlobsIsWrittenWithoutThemUnlessTheyAreSources) {
  GitFixture f;
  std::string blob;
  ASSERT_EQ(run_capture({"git", "-C", f.dir.str(), "rev-parse", f.base + ":README.md"}, blob), 0);
  blob = std::string(trim(blob));
  std::filesystem::remove(f.dir.str() + "/.git/objects/" + blob.substr(0, 2) + "/" + blob.substr(2));
  GitRepository g(f.dir.str());
  auto all = [](const std::string&) { return true; };
  EXPECT_THROW(g.materialize_tree(f.base, f.cache.str() + "/strict", all), Error);
  std::string dir = g.materialize_tree(f.base, f.cache.str() + "/lenient", all,
                                       [](const std::string& p) { return p.ends_with(".py"); });
  EXPECT_TRUE(std::filesystem::exists(dir + "/pkg/core.py"));
  EXPECT_FALSE(std::filesystem::exists(dir + "/README.md"));
  std::ifstream missing(dir + "/.repoctx-missing");
  std::string line;
  std::getline(missing, line);
  EXPECT_EQ(line, "README.md");
}
