// The public API (include/repoctx/repoctx.h) and what serving builds on it: the parameter tables shared by
// the HTTP server, the MCP server and the Python module; snapshots swapped under concurrent readers (no torn
// reads while an indexer commits); the HTML report of a full procedural trace (every stage filled by the
// recorded-response backend).
#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "api/json.h"
#include "helpers.h"
#include "index/index.h"
#include "repoctx/repoctx.h"
#include "retrieve/retriever.h"
#include "scripted_backend.h"
#include "server/report.h"
#include "util/error.h"

using namespace repoctx;
using nlohmann::json;
using repoctx::testing::ScriptedBackend;
using repoctx::testing::TempDir;
using repoctx::testing::user_text;

namespace {

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

int code_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return static_cast<int>(e.code());
  }
  return 0;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(ApiParams, EveryBadFieldIsNamedWithWhatIsValid) {
  const auto& f = api::retrieve_fields();
  auto p = api::params_from_json(json{{"query", "q"}, {"k", 7}, {"strategy", "structural"}, {"params", {{"x", 1}}}}, f);
  EXPECT_EQ(p.query, "q");
  EXPECT_EQ(p.k, 7);
  EXPECT_EQ(p.strategy, "structural");
  EXPECT_EQ(p.params.at("x"), "1");
  EXPECT_EQ(api::params_from_json(json{{"k", nullptr}}, f).k, 20) << "null means the default";
  EXPECT_EQ(api::params_from_json(json{{"k", 10.0}}, f).k, 10) << "JavaScript numbers";
  EXPECT_TRUE(has(message_of([&] { api::params_from_json(json{{"colour", 1}}, f); }), "unknown field 'colour'"));
  EXPECT_TRUE(has(message_of([&] { api::params_from_json(json{{"colour", 1}}, f); }), "strategy"));
  EXPECT_TRUE(has(message_of([&] { api::params_from_json(json{{"k", "3"}}, f); }), "field 'k' must be an integer"));
  EXPECT_TRUE(has(message_of([&] { api::params_from_json(json{{"k", 3.5}}, f); }), "field 'k'"));
  EXPECT_TRUE(has(message_of([&] { api::params_from_json(json{{"k", 0}}, f); }), "between 1 and 10000"));
  EXPECT_TRUE(has(message_of([&] { api::params_from_json(json{{"strategy", "x"}}, f); }), "sparse"));
  EXPECT_TRUE(has(message_of([&] { api::params_from_json(json{{"with_text", 1}}, f); }), "true or false"));
  EXPECT_TRUE(has(message_of([&] { api::params_from_json(json::array(), f); }), "JSON object"));
  EXPECT_EQ(code_of([&] { api::params_from_json(json{{"b", 2.0}}, f); }), 2);
  EXPECT_EQ(api::params_from_json(json{{"repo", "x"}}, f, {"repo"}).k, 20) << "ignored names are skipped";
}

TEST(ApiParams, TheSchemaDescribesExactlyWhatTheParserAccepts) {
  json s = api::params_schema(api::retrieve_fields(), {"target"}, {"trace"});
  EXPECT_EQ(s["type"], "object");
  EXPECT_EQ(s["additionalProperties"], false);
  EXPECT_EQ(s["required"], json::array({"target"}));
  EXPECT_FALSE(s["properties"].contains("trace"));
  api::RetrieveParams defaults;
  EXPECT_EQ(s["properties"]["k"]["default"], defaults.k);
  EXPECT_EQ(s["properties"]["k"]["type"], "integer");
  EXPECT_EQ(s["properties"]["corpus"]["default"], defaults.corpus);
  // No strategy is the default: the request's kind picks one (api::strategy_for), as the description says.
  EXPECT_FALSE(s["properties"]["strategy"].contains("default"));
  EXPECT_NE(s["properties"]["strategy"]["description"].get<std::string>().find("structural for a target"),
            std::string::npos);
  std::vector<std::string> names;
  for (const auto& r : retriever_registry()) names.push_back(r.name);
  EXPECT_EQ(s["properties"]["strategy"]["enum"], json(names));
  // Every property of the schema parses, with its default, to the struct's default.
  for (const auto& [name, prop] : s["properties"].items())
    if (prop.contains("default"))
      EXPECT_NO_THROW(api::params_from_json(json{{name, prop["default"]}}, api::retrieve_fields())) << name;
}

TEST(Api, IndexAnswersWhatTheEngineAnswers) {
  TempDir db;
  api::OpenParams op;
  op.index.db = db.str() + "/i.db";
  api::Index ix("/usr/lib/python3/dist-packages/flask", op);
  api::RetrieveParams p;
  p.query = "register a url rule";
  p.k = 6;
  auto r = ix.retrieve(p);
  auto eng = Engine::open(op.index.db);
  RetrievalQuery q;
  q.text = p.query;
  q.top_k = 6;
  auto hits = make_retriever("sparse", *eng)->retrieve(q);
  ASSERT_EQ(r.hits.size(), hits.size());
  for (size_t i = 0; i < hits.size(); ++i) {
    EXPECT_EQ(r.hits[i].target, eng->target_name(hits[i].entity));
    EXPECT_DOUBLE_EQ(r.hits[i].score, hits[i].score);
  }
  EXPECT_EQ(code_of([&] { ix.read(api::ReadParams{"../outside.py"}); }), 4);
  api::RetrieveParams bad;
  bad.target = "helpers.py::nope";
  EXPECT_EQ(code_of([&] { ix.retrieve(bad); }), 3);
  EXPECT_EQ(code_of([&] { ix.retrieve(api::RetrieveParams{}); }), 2) << "neither target nor query";
}

// Warming (what `serve` runs in the background after each load) builds the facts structural requests would
// build on first use: an answer must not depend on whether it ran. A warmed index and a cold one over the
// same database give the same hits, scores and features for targets all over the repository.
TEST(Api, WarmingChangesNoAnswerAndStopsWhenAsked) {
  TempDir db;
  api::OpenParams op;
  op.index.db = db.str() + "/i.db";
  api::Index warm("/usr/lib/python3/dist-packages/flask", op);
  op.refresh = false;
  api::Index cold("/usr/lib/python3/dist-packages/flask", op);
  EXPECT_TRUE(warm.info().fast_load) << "a fresh index is loaded from its query image";
  EXPECT_EQ(warm.warm([] { return true; }), 0) << "stopped before the first file";
  EXPECT_EQ(warm.warm(), warm.info().generation);
  api::SymbolsParams sp;
  sp.limit = 0;
  int compared = 0;
  auto symbols = warm.symbols(sp);
  for (size_t i = 0; i < symbols.size(); i += 9) {
    const auto& s = symbols[i];
    if (s.kind != "function" && s.kind != "method") continue;
    api::RetrieveParams p;
    p.target = s.target;
    p.strategy = "structural";
    p.k = 1000;
    auto a = warm.retrieve(p), b = cold.retrieve(p);
    ASSERT_EQ(a.hits.size(), b.hits.size()) << s.target;
    for (size_t h = 0; h < a.hits.size(); ++h) {
      EXPECT_EQ(a.hits[h].target, b.hits[h].target) << s.target << " rank " << h;
      EXPECT_EQ(a.hits[h].score, b.hits[h].score) << s.target << " rank " << h;
      EXPECT_EQ(a.hits[h].features, b.hits[h].features) << s.target << " rank " << h;
    }
    ++compared;
  }
  EXPECT_GT(compared, 20);
}

// The API takes the same strategy parameters as the CLI's --param (one routing function): imports_order
// reaches `imports` (the paper's BM25 order differs from the structural one), a bad value or an unknown name
// is a usage error naming what is valid, and the study's and completion's names are accepted too.
TEST(Api, StrategyParamsReachTheStrategyAsFromTheCli) {
  TempDir db;
  api::OpenParams op;
  op.index.db = db.str() + "/i.db";
  api::Index ix("/usr/lib/python3/dist-packages/flask", op);
  auto eng = Engine::open(op.index.db);
  api::RetrieveParams p;
  p.target = "app.py::Flask.make_response";
  p.strategy = "imports";
  p.k = 10;
  auto order = [&](const std::string& v) {
    RetrieverOptions ro;
    apply_retriever_param(ro, "imports_order", v);
    RetrievalQuery q;
    q.target = eng->resolve_target(p.target);
    q.top_k = p.k;
    std::vector<std::string> names;
    for (const auto& h : make_retriever("imports", *eng, {}, ro)->retrieve(q))
      names.push_back(eng->target_name(h.entity));
    return names;
  };
  auto api_order = [&](const std::map<std::string, std::string>& params) {
    p.params = params;
    std::vector<std::string> names;
    for (const auto& h : ix.retrieve(p).hits) names.push_back(h.target);
    return names;
  };
  auto paper = order("bm25"), structural = order("structural");
  ASSERT_FALSE(paper.empty());
  EXPECT_NE(paper, structural) << "the two orders must differ for this test to say anything";
  EXPECT_EQ(api_order({{"imports_order", "bm25"}}), paper);
  EXPECT_EQ(api_order({{"imports_order", "structural"}}), structural);
  EXPECT_EQ(api_order({}), structural) << "the default";
  EXPECT_TRUE(has(message_of([&] { api_order({{"imports_order", "fast"}}); }), "structural or bm25"));
  EXPECT_EQ(code_of([&] { api_order({{"hybrid_fusion", "sum"}}); }), 2);
  EXPECT_TRUE(has(message_of([&] { api_order({{"colour", "1"}}); }), "seed_threshold")) << "names the valid ones";
  EXPECT_NO_THROW(api_order({{"context_tokens", "300"}, {"samples", "2"}, {"seed_threshold", "0.8"}}));
  RetrieverOptions ro;
  apply_retriever_param(ro, "samples", "2");
  apply_retriever_param(ro, "context_tokens", "300");
  apply_retriever_param(ro, "hybrid_fusion", "rrf");
  EXPECT_EQ(ro.completion.samples, 2);
  EXPECT_EQ(ro.study.context_tokens, 300);
  EXPECT_EQ(ro.hybrid_fusion, "rrf");
  // The structural cascade's keep (issue 17): validated, and it reaches the strategy: past the kept
  // candidates the ranking differs from scoring every candidate fully, before them it does not.
  apply_retriever_param(ro, "structural_cascade_keep", "0");
  EXPECT_EQ(ro.cascade_keep, 0);
  for (const char* bad : {"-1", "many", "1.5"})
    EXPECT_EQ(code_of([&] { apply_retriever_param(ro, "structural_cascade_keep", bad); }), 2) << bad;
  p.strategy = "structural";
  p.k = 1000;
  p.params = {{"structural_cascade_keep", "20"}};
  auto cascaded = ix.retrieve(p).hits;
  p.params = {{"structural_cascade_keep", "0"}};
  auto full = ix.retrieve(p).hits;
  ASSERT_EQ(cascaded.size(), full.size());
  ASSERT_GT(full.size(), 40u) << "a pool larger than the kept candidates";
  for (size_t i = 0; i < 20; ++i) {
    EXPECT_EQ(cascaded[i].score, [&] {
      for (const auto& h : full)
        if (h.target == cascaded[i].target) return h.score;
      return -1e300;
    }()) << "a kept candidate's score is the full model's";
  }
  size_t differ = 0;
  // (below rank 150, the default keep: the parameter, not the default, made them differ)
  for (size_t i = 20; i < std::min<size_t>(full.size(), 150); ++i) differ += cascaded[i].score != full[i].score ? 1 : 0;
  EXPECT_GT(differ, 0u) << "past the kept candidates the scores are the first trees' partial sums";
}

// Readers take a snapshot, then read file contents lazily while a refresh re-indexes every file (new row
// ids) and swaps: every text they read must be the function as one version of the tree has it, never an
// empty or foreign text read through a stale view.
TEST(Api, ReadersNeverSeeATornIndexWhileRefreshesSwapSnapshots) {
  TempDir repo, db;
  const int files = 60;
  auto write_all = [&](int version) {
    for (int i = 0; i < files; ++i)
      repo.write("pkg/mod" + std::to_string(i) + ".py",
                 "def handler_" + std::to_string(i) + "(request):\n    \"\"\"Handle request number " +
                     std::to_string(i) + ".\"\"\"\n    return request.reply(" + std::to_string(version) + ")\n");
  };
  write_all(0);
  api::OpenParams op;
  op.index.db = db.str() + "/i.db";
  api::Index ix(repo.str(), op);
  std::atomic<bool> stop{false};
  std::atomic<int> reads{0}, torn{0};
  std::string example;
  std::mutex mu;
  auto reader = [&] {
    while (!stop) {
      api::RetrieveParams p;
      p.query = "handle request reply";
      p.k = files;
      p.with_text = true;
      auto r = ix.retrieve(p);
      for (const auto& h : r.hits) {
        ++reads;
        if (!has(h.text, "def " + h.qualname + "(request):") || !has(h.text, "return request.reply(")) {
          ++torn;
          std::lock_guard lk(mu);
          example = h.target + ": [" + h.text + "]";
        }
      }
    }
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 3; ++t) threads.emplace_back(reader);
  for (int v = 1; v <= 6; ++v) {
    write_all(v);
    auto st = ix.refresh(true);
    EXPECT_TRUE(st.reloaded);
  }
  stop = true;
  for (auto& t : threads) t.join();
  EXPECT_GT(reads.load(), files);
  EXPECT_EQ(torn.load(), 0) << example;
  EXPECT_EQ(ix.info().generation, 7);
}

namespace {

// A small repository and answers that fill every stage of the procedural pipeline (as test_procedural.cpp's).
struct CountingRepo {
  TempDir repo, db;
  std::unique_ptr<Engine> engine;
  CountingRepo() {
    repo.write("pkg/__init__.py", "");
    repo.write("pkg/stats.py",
               "def tally(items):\n    \"\"\"Count how often each item occurs.\"\"\"\n    counts = {}\n"
               "    for item in items:\n        counts[item] = counts.get(item, 0) + 1\n    return counts\n\n"
               "def mean(values):\n    \"\"\"Average of values.\"\"\"\n    total = sum(values)\n"
               "    return total / len(values)\n");
    repo.write("pkg/report.py",
               "from .stats import tally\n\ndef histogram(words):\n"
               "    \"\"\"Count occurrences of each word and sort them by frequency.\"\"\"\n"
               "    counts = tally(words)\n    return sorted(counts.items(), key=lambda kv: -kv[1])\n");
    repo.write("pkg/textio.py",
               "def read_words(path):\n    \"\"\"Read the words of a text file.\"\"\"\n    with open(path) as f:\n"
               "        return f.read().split()\n");
    IndexOptions o;
    o.db_path = db.str() + "/i.db";
    o.progress = false;
    build_index(repo.str(), o);
    engine = Engine::open(o.db_path);
  }
};

void script(ScriptedBackend& b) {
  b.answers["decompose_context"] = [](const GenerateRequest& r) {
    std::string u = user_text(r);
    if (has(u, "`tally`"))
      return json{{"steps",
                   {{{"description", "count occurrences of each item in a dict"},
                     {"snippet", "for item in items:\n    counts[item] = counts.get(item, 0) + 1"}},
                    {{"description", "return the dict of counts"}, {"snippet", "return counts"}}}}}
          .dump();
    if (has(u, "`mean`"))
      return json{{"steps",
                   {{{"description", "sum the values and divide by their number"},
                     {"snippet", "total = sum(values)\nreturn total / len(values)"}}}}}
          .dump();
    if (has(u, "`read_words`"))
      return json{{"steps",
                   {{{"description", "open the file and split its text into words"},
                     {"snippet", "with open(path) as f:\n    return f.read().split()"}}}}}
          .dump();
    return std::string("{\"steps\": []}");
  };
  b.answers["validate_judge"] = [](const GenerateRequest&) {
    return std::string(R"({"supported": true, "reason": "yes"})");
  };
  b.answers["decompose_target"] = [](const GenerateRequest&) {
    return json{{"steps",
                 {{{"description", "count occurrences of each item in a dict"}},
                  {{"description", "sort the counts by frequency"}}}}}
        .dump();
  };
  b.answers["verify_seed"] = [](const GenerateRequest& r) {
    bool same = has(user_text(r), "count occurrences of each item") && has(user_text(r), "tally");
    return json{{"same_operation", same}, {"reason", same ? "both count <items>" : "different operation"}}.dump();
  };
  int turn = 0;
  b.answers["agent_turn"] = [turn](const GenerateRequest&) mutable {
    return std::string(turn++ == 0 ? R"({"thought": "look", "tool": "search_func", "name": "tally"})"
                                   : R"({"thought": "enough", "tool": "finish"})");
  };
  b.answers["plan_confirmation"] = [](const GenerateRequest& r) {
    json steps = json::array();
    std::string u = user_text(r);
    if (has(u, "[0]")) steps.push_back({{"id", 0}, {"sufficient", true}, {"query", ""}});
    if (has(u, "[1]"))
      steps.push_back({{"id", 1}, {"sufficient", false}, {"query", "sort pairs by their second value"}});
    return json{{"steps", steps}}.dump();
  };
}

}  // namespace

TEST(Report, AFullProceduralTraceShowsEveryStage) {
  CountingRepo repo;
  ScriptedBackend b;
  script(b);
  RetrieverOptions ro;
  ro.procedural.seed_threshold = 0.5;  // the bag-of-words projections of a 4-function repository, not a model's
  ro.procedural.expand_k = 1;
  RetrievalQuery q;
  q.target = repo.engine->resolve_target("pkg/report.py::histogram");
  auto res = make_retriever("procedural", *repo.engine, Models{&b, &b, &b}, ro)->run(q);
  const json& t = res.trace;
  ASSERT_TRUE(t.contains("final_context")) << t.dump(1);
  ASSERT_EQ(t["final_context"].size(), res.hits.size());
  ASSERT_FALSE(res.hits.empty()) << t.dump(1);
  EXPECT_EQ(trace_kind(t), TraceKind::retrieval);
  std::string html = render_report(t, "trace.json");
  for (const char* id : {"target", "context-steps", "seeds", "agent", "expansion", "confirmation", "final-context",
                         "llm-usage", "params"})
    EXPECT_TRUE(has(html, std::string("<section id=\"") + id + "\">")) << id;
  EXPECT_TRUE(has(html, "pkg/stats.py::tally")) << "seeds and final context name the function";
  EXPECT_TRUE(has(html, "same_operation")) << "seed verdicts";
  EXPECT_TRUE(has(html, "search_func")) << "the agent's tool calls";
  EXPECT_TRUE(has(html, "sort pairs by their second value")) << "plan confirmation rounds";
  EXPECT_TRUE(has(html, "both count &lt;items&gt;")) << "trace text is escaped";
  EXPECT_FALSE(has(html, "both count <items>"));
  EXPECT_TRUE(has(html, "verify_seed")) << "usage by stage";
  EXPECT_TRUE(has(html, "Content-Security-Policy"));
  EXPECT_EQ(code_of([] { trace_kind(json{{"x", 1}}); }), 4);
  EXPECT_EQ(code_of([] { trace_kind(json::array()); }), 4);
}
