// ProjAgent's procedural pipeline (retrieve/procedural/pipeline.cpp) with the recorded-response backend:
// the logic of every stage (decomposition, validation, seeds, agent, expansion, plan confirmation), that
// bad model output at any stage becomes a recorded outcome and never a crash, that re-runs repeat no LLM
// work, and that an interrupted run resumes from the cache. Real-model runs are in test_procedural_llm.cpp.
#include <gtest/gtest.h>

#include "helpers.h"
#include "index/index.h"
#include "llm/cache.h"
#include "retrieve/procedural/pipeline.h"
#include "scripted_backend.h"

using namespace repoctx;
using nlohmann::json;
using repoctx::testing::ScriptedBackend;
using repoctx::testing::TempDir;
using repoctx::testing::user_text;

namespace {

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

struct StatsRepo {
  TempDir repo, db;
  std::unique_ptr<Engine> engine;
  StatsRepo() {
    repo.write("pkg/__init__.py", "");
    repo.write("pkg/stats.py",
               "def tally(items):\n"
               "    \"\"\"Count how often each item occurs.\"\"\"\n"
               "    counts = {}\n"
               "    for item in items:\n"
               "        counts[item] = counts.get(item, 0) + 1\n"
               "    return counts\n"
               "\n"
               "def mean(values):\n"
               "    \"\"\"Average of values.\"\"\"\n"
               "    total = sum(values)\n"
               "    return total / len(values)\n");
    repo.write("pkg/report.py",
               "from .stats import tally\n"
               "\n"
               "def histogram(words):\n"
               "    \"\"\"Count occurrences of each word and sort them by frequency.\"\"\"\n"
               "    counts = tally(words)\n"
               "    return sorted(counts.items(), key=lambda kv: -kv[1])\n");
    repo.write("pkg/textio.py",
               "def read_words(path):\n"
               "    \"\"\"Read the words of a text file.\"\"\"\n"
               "    with open(path) as f:\n"
               "        return f.read().split()\n");
    IndexOptions o;
    o.db_path = db.str() + "/i.db";
    o.progress = false;
    build_index(repo.str(), o);
    engine = Engine::open(o.db_path);
  }
  TargetRef target() const { return engine->resolve_target("pkg/report.py::histogram"); }
};

// Answers that a competent model would give for this repository.
void script_good(ScriptedBackend& b) {
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
    return std::string(R"({"supported": true, "reason": "it does"})");
  };
  b.answers["decompose_target"] = [](const GenerateRequest&) {
    return json{{"steps",
                 {{{"description", "count occurrences of each item in a dict"}},
                  {{"description", "sort the counts by frequency"}}}}}
        .dump();
  };
  b.answers["verify_seed"] = [](const GenerateRequest& r) {
    bool same = has(user_text(r), "count occurrences of each item") && has(user_text(r), "tally");
    return json{{"same_operation", same}, {"reason", same ? "both count items" : "different operation"}}.dump();
  };
  b.answers["agent_turn"] = [](const GenerateRequest&) {
    return std::string(R"({"thought": "enough", "tool": "finish"})");
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

ProceduralParams test_params() {
  ProceduralParams p;
  p.seed_threshold = 0.5;  // the bag-of-words projections of a 4-function repository, not a model's
  return p;
}

ProceduralOutcome run_once(const StatsRepo& repo, LlmBackend& b, ProceduralParams p = test_params()) {
  ProceduralPipeline pipe(*repo.engine, Models{&b, &b, &b}, p);
  return pipe.run(repo.target());
}

const ProceduralContext* find_context(const TargetStepResult& st, const StatsRepo& repo, const std::string& qualname) {
  for (const auto& c : st.contexts)
    if (repo.engine->view().entities()[c.function].qualname == qualname) return &c;
  return nullptr;
}

}  // namespace

TEST(Procedural, StagesFindTheProcedurallySimilarStepAndRefineTheUnconfirmedOne) {
  StatsRepo repo;
  ScriptedBackend b;
  script_good(b);
  auto out = run_once(repo, b);
  ASSERT_EQ(out.steps.size(), 2u) << out.trace.dump(1);
  // Step 0 is confirmed in the first round with tally's counting step as a verified seed.
  EXPECT_TRUE(out.steps[0].confirmed);
  EXPECT_EQ(out.steps[0].rounds, 1);
  const auto* c = find_context(out.steps[0], repo, "tally");
  ASSERT_NE(c, nullptr) << out.trace["rounds"].dump(1);
  EXPECT_EQ(c->source, "seed");
  EXPECT_EQ(c->description, "count occurrences of each item in a dict");
  EXPECT_EQ(find_context(out.steps[0], repo, "mean"), nullptr);
  // Step 1 is refined once (round 2 searches with the query), then the same query again means stuck.
  EXPECT_FALSE(out.steps[1].confirmed);
  EXPECT_EQ(out.steps[1].rounds, 2);
  EXPECT_EQ(out.steps[1].query, "sort pairs by their second value");
  // The target is never decomposed as context; the three other functions are, and their steps grounded.
  std::set<std::string> decomposed;
  for (const auto& d : out.trace["decompositions"]) {
    decomposed.insert(d["function"].get<std::string>());
    for (const auto& s : d["steps"]) EXPECT_TRUE(s["grounded"].get<bool>()) << s.dump();
  }
  EXPECT_EQ(decomposed,
            (std::set<std::string>{"pkg/stats.py::tally", "pkg/stats.py::mean", "pkg/textio.py::read_words"}));
  EXPECT_EQ(out.trace["grounded_context_steps"].get<int>(), 4);
  // Usage per stage equals what the backend saw.
  int64_t generate_calls = 0;
  for (const auto& [purpose, n] : b.calls) {
    EXPECT_EQ(out.usage.by_purpose.at(purpose).calls, n) << purpose;
    generate_calls += out.usage.by_purpose.at(purpose).calls;
  }
  EXPECT_EQ(generate_calls, b.total_calls);
  EXPECT_GT(out.usage.by_purpose.at("validate_snippet_embed").embedded_texts, 0);
  EXPECT_EQ(out.usage.total().cached, 0);
  EXPECT_EQ(b.calls["decompose_target"], 1);
  EXPECT_EQ(b.calls["plan_confirmation"], 2);
  EXPECT_TRUE(out.trace.contains("llm_usage"));
  EXPECT_GE(out.trace["non_llm_seconds"].get<double>(), 0.0);
}

TEST(Procedural, UnsupportedClaimsAndDisagreeingSnippetsAreNotGrounded) {
  StatsRepo repo;
  ScriptedBackend b;
  script_good(b);
  b.answers["validate_judge"] = [](const GenerateRequest& r) {
    bool ok = !has(user_text(r), "divide by their number");
    return json{{"supported", ok}, {"reason", ok ? "yes" : "no division here"}}.dump();
  };
  // Snippets of read_words embed away from their descriptions.
  b.embed_fn = [](const std::string& t) {
    return has(t, "open(path)") ? std::vector<float>{0, 1, 0} : std::vector<float>{1, 0, 0};
  };
  auto out = run_once(repo, b);
  std::map<std::string, json> by_fn;
  for (const auto& d : out.trace["decompositions"]) by_fn[d["function"]] = d;
  auto mean_step = by_fn.at("pkg/stats.py::mean")["steps"][0];
  EXPECT_FALSE(mean_step["grounded"].get<bool>());
  EXPECT_EQ(mean_step["validation"]["description"], "rejected");
  auto rw = by_fn.at("pkg/textio.py::read_words")["steps"][0];
  EXPECT_FALSE(rw["grounded"].get<bool>());
  EXPECT_TRUE(has(rw["validation"]["rejected"].get<std::string>(), "embeddings disagree")) << rw.dump();
  EXPECT_EQ(out.trace["grounded_context_steps"].get<int>(), 2);
}

TEST(Procedural, SnippetsNotInTheBodyAreReidentified) {
  StatsRepo repo;
  ScriptedBackend b;
  script_good(b);
  auto good = b.answers["decompose_context"];
  b.answers["decompose_context"] = [good](const GenerateRequest& r) {
    if (has(user_text(r), "`mean`"))
      return json{{"steps", {{{"description", "sum the values"}, {"snippet", "total = values.sum()"}}}}}.dump();
    return good(r);
  };
  b.answers["validate_reidentify"] = [](const GenerateRequest&) {
    return json{{"snippet", "total = sum(values)"}}.dump();
  };
  auto out = run_once(repo, b);
  EXPECT_EQ(b.calls["validate_reidentify"], 1);
  bool seen = false;
  for (const auto& d : out.trace["decompositions"])
    if (d["function"] == "pkg/stats.py::mean") {
      seen = true;
      EXPECT_EQ(d["steps"][0]["validation"]["snippet"], "reidentified");
      EXPECT_EQ(d["steps"][0]["snippet"], "total = sum(values)");
      EXPECT_TRUE(d["steps"][0]["grounded"].get<bool>());
    }
  EXPECT_TRUE(seen);
}

TEST(Procedural, TheAgentExploresProposesAndIsJudgedByTheFourStageFilter) {
  StatsRepo repo;
  ScriptedBackend b;
  script_good(b);
  int turn = 0;
  b.answers["agent_turn"] = [&turn](const GenerateRequest&) {
    const char* turns[] = {
        R"({"thought": "look for counting", "tool": "search_func", "name": "tally"})",
        R"({"thought": "read it", "tool": "read_func", "name": "pkg/stats.py::tally"})",
        R"({"thought": "the target itself", "tool": "propose_func", "name": "pkg/report.py::histogram"})",
        R"({"thought": "averaging is not counting", "tool": "propose_func", "name": "pkg/stats.py::mean"})",
        R"({"thought": "a typo", "tool": "read_func", "name": "pkg/stats.py::tallyy"})",
        R"({"thought": "done", "tool": "finish"})"};
    return std::string(turns[std::min(turn++, 5)]);
  };
  auto p = test_params();
  p.max_rounds = 1;
  auto out = run_once(repo, b, p);
  const auto& ts = out.trace["rounds"][0]["target_steps"][0];
  const auto& agent = ts["agent"];
  SCOPED_TRACE(agent.dump(1));
  EXPECT_EQ(agent["stop"], "finish");
  EXPECT_EQ(agent["tool_calls"].get<int>(), 6);
  std::vector<std::string> tools;
  for (const auto& t : agent["turns"]) tools.push_back(t.value("tool", "?"));
  EXPECT_EQ(tools, (std::vector<std::string>{"search_func", "read_func", "propose_func", "propose_func", "read_func",
                                             "finish"}));
  // The target is never context: propose_func refuses it before any judging.
  EXPECT_TRUE(has(agent["turns"][2].value("error", ""), "is the target function itself"));
  EXPECT_FALSE(agent["turns"][2].contains("accepted"));
  // mean is judged by stage 1 (projection similarity) and rejected with the reason fed back.
  EXPECT_FALSE(agent["turns"][3]["accepted"].get<bool>());
  EXPECT_TRUE(has(agent["turns"][3].value("feedback", ""), "no step reaches projection similarity"));
  EXPECT_FALSE(agent["turns"][4]["ok"].get<bool>());
  EXPECT_EQ(find_context(out.steps[0], repo, "mean"), nullptr);
}

TEST(Procedural, BadModelOutputAtAnyStageIsRecordedNeverACrash) {
  const std::vector<std::string> purposes = {"decompose_context", "validate_judge",    "validate_reidentify",
                                             "decompose_target",  "verify_seed",       "agent_turn",
                                             "verify_expansion",  "plan_confirmation", "agent_compaction"};
  const std::vector<std::string> garbage = {
      "",
      "not json at all",
      "{\"steps\": 7}",
      "[1, 2, 3]",
      "{\"steps\": [{\"description\": 5, \"snippet\": null}, 3]}",
      R"({"same_operation": "yes", "supported": 1, "snippet": 3, )"
      R"("verdicts": [{"id": "x"}, {"id": 99, "similar": true}], "tool": 5})",
      "```json\n{\"steps\": [{\"id\": -1, \"sufficient\": \"maybe\", \"query\": 12}]}\n```",
      "\xff\xfe{\"steps\":"};
  StatsRepo repo;
  for (const auto& purpose : purposes) {
    for (const auto& g : garbage) {
      ScriptedBackend b;
      script_good(b);
      b.id = "scripted-bad";  // same subspace for every run; cache-free backend
      b.answers[purpose] = [g](const GenerateRequest&) { return g; };
      auto p = test_params();
      p.agent_context_tokens = 50;  // force a compaction so that its output is exercised too
      p.agent_budget = 3;
      ProceduralOutcome out;
      ASSERT_NO_THROW(out = run_once(repo, b, p)) << purpose << " <- " << g;
      EXPECT_TRUE(out.trace.contains("rounds")) << purpose;
      if (purpose == "decompose_target") {
        EXPECT_TRUE(out.steps.empty());
        EXPECT_FALSE(out.trace["target_decomposition"]["error"].get<std::string>().empty());
      }
      if (purpose == "decompose_context") EXPECT_EQ(out.trace["grounded_context_steps"].get<int>(), 0) << g;
    }
  }
  // No hidden states at all (empty responses to the reasoning prompt), on a fresh index (the one above
  // holds the projections of the runs before, which would be reused).
  StatsRepo fresh;
  ScriptedBackend b;
  script_good(b);
  b.id = "scripted-bad";
  b.empty_hidden = [](const GenerateRequest&) { return true; };
  ProceduralOutcome out;
  ASSERT_NO_THROW(out = run_once(fresh, b));
  EXPECT_EQ(out.trace["grounded_context_steps"].get<int>(), 0);
  for (const auto& st : out.steps) EXPECT_TRUE(st.contexts.empty());
}

TEST(Procedural, ARerunRepeatsNoLlmWorkAndAnInterruptedRunResumesFromTheCache) {
  // Reference: how many calls a complete run makes on a fresh index and cache.
  int full = 0;
  {
    StatsRepo repo;
    ScriptedBackend b;
    script_good(b);
    run_once(repo, b);
    full = b.total_calls;
  }
  ASSERT_GT(full, 10);
  StatsRepo repo;
  TempDir cache_dir;
  auto cache = std::make_shared<LlmCache>(cache_dir.str() + "/llm.db");
  // 1. Interrupted after 7 calls (an exception, as a killed or failing backend would end a run).
  {
    auto inner = std::make_unique<ScriptedBackend>();
    script_good(*inner);
    inner->fail_after = 7;
    CachedBackend cb(std::move(inner), cache);
    EXPECT_ANY_THROW(run_once(repo, cb));
  }
  // 2. The resumed run makes only the calls the first one did not finish.
  auto inner = std::make_unique<ScriptedBackend>();
  script_good(*inner);
  ScriptedBackend* raw = inner.get();
  CachedBackend cb(std::move(inner), cache);
  auto out = run_once(repo, cb);
  EXPECT_EQ(raw->total_calls, full - 7);
  int64_t cached_generations = 0;
  for (const auto& [purpose, row] : out.usage.by_purpose)
    if (purpose != "validate_snippet_embed") cached_generations += row.cached;
  EXPECT_EQ(cached_generations, 7);
  ASSERT_EQ(out.steps.size(), 2u);
  // 3. A re-run makes none (projections also come from the index's step_projections store).
  raw->total_calls = 0;
  auto again = run_once(repo, cb);
  EXPECT_EQ(raw->total_calls, 0);
  EXPECT_EQ(again.usage.total().calls, again.usage.total().cached);
  EXPECT_EQ(again.trace["rounds"].dump(), out.trace["rounds"].dump());
}

TEST(Procedural, AnAgentRepeatingItselfOrProposingWhatDoesNotExistIsStoppedWithAReason) {
  StatsRepo repo;
  ScriptedBackend b;
  script_good(b);
  int turn = 0;
  b.answers["agent_turn"] = [&turn](const GenerateRequest&) {
    ++turn;
    if (turn == 1)
      return std::string(R"({"thought": "invented", "tool": "propose_func", "name": "pkg/stats.py::median"})");
    if (turn == 2)
      return std::string(
          R"({"thought": "escape", "tool": "read_lines", "path": "../../etc/passwd", "start": 1, "end": 5})");
    if (turn == 3) return std::string(R"({"thought": "no such tool", "tool": "execute_python", "path": "x"})");
    return std::string(R"({"thought": "again", "tool": "grep", "pattern": "counts", "fixed": true})");
  };
  auto p = test_params();
  p.max_rounds = 1;
  p.agent_budget = 15;
  auto out = run_once(repo, b, p);
  const auto& agent = out.trace["rounds"][0]["target_steps"][0]["agent"];
  SCOPED_TRACE(agent.dump(1));
  EXPECT_EQ(agent["stop"], "loop");  // the same grep a third time
  EXPECT_EQ(agent["tool_calls"].get<int>(), 6);
  EXPECT_TRUE(has(agent["turns"][0].value("error", ""), "median"));
  EXPECT_FALSE(agent["turns"][1]["ok"].get<bool>());
  EXPECT_FALSE(agent["turns"][2]["ok"].get<bool>());
  EXPECT_EQ(agent["turns"][5].value("stopped", ""), "the same call a third time");
}
