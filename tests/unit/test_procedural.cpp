// ProjAgent's procedural pipeline (retrieve/procedural/pipeline.cpp) with the recorded-response backend:
// the logic of every stage (decomposition, validation, seeds, agent, expansion, plan confirmation), that
// bad model output at any stage becomes a recorded outcome and never a crash, that re-runs repeat no LLM
// work, and that an interrupted run resumes from the cache. Real-model runs are in test_procedural_llm.cpp.
#include <gtest/gtest.h>

#include "eval/rq2.h"
#include "helpers.h"
#include "index/index.h"
#include "llm/cache.h"
#include "retrieve/procedural/agent.h"
#include "retrieve/procedural/pipeline.h"
#include "retrieve/procedural/stages.h"
#include "scripted_backend.h"
#include "util/cancel.h"

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

template <class Repo>
const ProceduralContext* find_context(const TargetStepResult& st, const Repo& repo, const std::string& qualname) {
  for (const auto& c : st.contexts)
    if (repo.engine->view().entities()[c.function].qualname == qualname) return &c;
  return nullptr;
}

// A repository where every stage of 4.2 has work to do with the paper's default thresholds (seed 0.75,
// expansion 0.65 to k = 2 seeds): 23 functions share the target step's counting step, so the top 20
// become initial seeds and the 3 left over are expansion candidates (one of them, the defaultdict
// variant, rejected by the batched verification); a function outside the offline cap is proposed by the
// agent and becomes an agent seed; noise functions with large one-word projections make PC1 a direction
// the counting steps do not use.
struct CountersRepo {
  TempDir repo, db;
  std::unique_ptr<Engine> engine;
  static constexpr int kCounters = 23, kNoise = 8;
  CountersRepo() {
    repo.write("pkg/__init__.py", "");
    repo.write("pkg/report.py",
               "def histogram(words):\n"
               "    \"\"\"Count occurrences of each word and sort them by frequency.\"\"\"\n"
               "    counts = {}\n"
               "    for w in words:\n"
               "        counts[w] = counts.get(w, 0) + 1\n"
               "    return sorted(counts.items(), key=lambda kv: -kv[1])\n");
    std::string counters = "from collections import defaultdict\n";
    for (int i = 0; i < kCounters; ++i) {
      bool dd = i == kCounters - 1;
      counters += "\n\ndef count_a" + std::to_string(i) + "(items):\n    \"\"\"Tally items.\"\"\"\n" +
                  (dd ? "    counts = defaultdict(int)\n    for x in items:\n        counts[x] += 1\n"
                      : "    counts = {}\n    for x in items:\n        counts[x] = counts.get(x, 0) + 1\n") +
                  "    return counts\n";
    }
    repo.write("pkg/counters.py", counters);
    std::string noise;
    for (int i = 0; i < kNoise; ++i) noise += "\n\ndef noise_" + std::to_string(i) + "(x):\n    return x\n";
    repo.write("pkg/noise.py", noise);
    repo.write("pkg/late.py",
               "def tally_late(items):\n"
               "    counts = {}\n"
               "    for key in items:\n"
               "        counts[key] = counts.get(key, 0) + 1\n"
               "    return counts\n");
    IndexOptions o;
    o.db_path = db.str() + "/i.db";
    o.progress = false;
    build_index(repo.str(), o);
    engine = Engine::open(o.db_path);
  }
  TargetRef target() const { return engine->resolve_target("pkg/report.py::histogram"); }
};

const char* kCountStep = "tally the items into a dict of counts";

// The indices "[i]" of a batched verification prompt whose candidate text contains `needle`, and all.
std::vector<std::pair<int, bool>> batch_candidates(const std::string& u, const std::string& reject_if) {
  std::vector<std::pair<int, bool>> out;
  for (size_t at = u.find("\n["); at != std::string::npos; at = u.find("\n[", at + 1)) {
    size_t close = u.find("] ", at);
    if (close == std::string::npos) break;
    std::string id = u.substr(at + 2, close - at - 2);
    if (id.empty() || id.find_first_not_of("0123456789") != std::string::npos) continue;
    size_t end = u.find("\n[", close);
    std::string seg = u.substr(close, end == std::string::npos ? std::string::npos : end - close);
    out.emplace_back(std::stoi(id), seg.find(reject_if) == std::string::npos);
  }
  return out;
}

void script_counters(ScriptedBackend& b) {
  auto decompose = [](const GenerateRequest& r) {
    std::string u = user_text(r);
    auto one = [](const std::string& d, const std::string& s) {
      return json{{"steps", {{{"description", d}, {"snippet", s}}}}}.dump();
    };
    if (has(u, "`count_a22`")) return one(kCountStep, "for x in items:\n    counts[x] += 1");
    if (has(u, "`count_a")) return one(kCountStep, "for x in items:\n    counts[x] = counts.get(x, 0) + 1");
    if (has(u, "`tally_late`"))
      return one("tally the items into a dict of counts per key",
                 "for key in items:\n    counts[key] = counts.get(key, 0) + 1");
    for (int i = 0; i < CountersRepo::kNoise; ++i)
      if (has(u, "`noise_" + std::to_string(i) + "`"))
        return one(i % 2 ? "omega omega omega omega omega omega omega omega"
                         : "alpha alpha alpha alpha alpha alpha alpha alpha",
                   "return x");
    return std::string("{\"steps\": []}");
  };
  b.answers["decompose_context"] = decompose;
  b.answers["decompose_proposal"] = decompose;
  b.answers["validate_judge"] = [](const GenerateRequest&) {
    return std::string(R"({"supported": true, "reason": "it does"})");
  };
  b.answers["decompose_target"] = [](const GenerateRequest&) {
    return json{{"steps", {{{"description", kCountStep}}, {{"description", "sort the counts by frequency"}}}}}.dump();
  };
  b.answers["verify_seed"] = [](const GenerateRequest& r) {
    std::string u = user_text(r);
    size_t target = u.find("Target step (to be implemented): "), cand = u.find("Candidate step from");
    bool same = target != std::string::npos && cand != std::string::npos &&
                u.substr(target, u.find('\n', target) - target).find("tally") != std::string::npos &&
                u.substr(cand, u.find('\n', cand) - cand).find("tally") != std::string::npos;
    return json{{"same_operation", same}, {"reason", same ? "both tally items" : "different operation"}}.dump();
  };
  b.answers["agent_turn"] = [](const GenerateRequest& r) {
    std::string u = user_text(r);
    if (!has(u, kCountStep)) return std::string(R"({"thought": "nothing to find", "tool": "finish"})");
    if (!has(u, "pkg/late.py::tally_late"))
      return std::string(R"({"thought": "late", "tool": "propose_func", "name": "pkg/late.py::tally_late"})");
    if (!has(u, "pkg/counters.py::count_a21"))
      return std::string(R"({"thought": "another", "tool": "propose_func", "name": "pkg/counters.py::count_a21"})");
    return std::string(R"({"thought": "done", "tool": "finish"})");
  };
  b.answers["verify_expansion"] = [](const GenerateRequest& r) {
    json verdicts = json::array();
    for (const auto& [id, ok] : batch_candidates(user_text(r), "+= 1"))
      verdicts.push_back({{"id", id}, {"similar", ok}});
    return json{{"verdicts", verdicts}}.dump();
  };
  b.answers["plan_confirmation"] = [](const GenerateRequest& r) {
    json steps = json::array();
    std::string u = user_text(r);
    if (has(u, "[0]")) steps.push_back({{"id", 0}, {"sufficient", true}, {"query", ""}});
    if (has(u, "[1]")) steps.push_back({{"id", 1}, {"sufficient", false}, {"query", "order pairs by value"}});
    return json{{"steps", steps}}.dump();
  };
}

// The paper's thresholds, untouched; only the offline cap leaves late.py for the agent to find.
ProceduralParams counters_params() {
  ProceduralParams p;
  p.max_context_functions = CountersRepo::kCounters + CountersRepo::kNoise;
  return p;
}

int count_source(const TargetStepResult& st, const std::string& source) {
  int n = 0;
  for (const auto& c : st.contexts) n += c.source == source;
  return n;
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
  for (const auto& d : out.trace["offline"]["decompositions"]) {
    decomposed.insert(d["function"].get<std::string>());
    for (const auto& s : d["steps"]) EXPECT_TRUE(s["grounded"].get<bool>()) << s.dump();
  }
  EXPECT_EQ(decomposed,
            (std::set<std::string>{"pkg/stats.py::tally", "pkg/stats.py::mean", "pkg/textio.py::read_words"}));
  EXPECT_EQ(out.trace["offline"]["grounded_context_steps"].get<int>(), 4);
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
  for (const auto& d : out.trace["offline"]["decompositions"]) by_fn[d["function"]] = d;
  auto mean_step = by_fn.at("pkg/stats.py::mean")["steps"][0];
  EXPECT_FALSE(mean_step["grounded"].get<bool>());
  EXPECT_EQ(mean_step["validation"]["description"], "rejected");
  auto rw = by_fn.at("pkg/textio.py::read_words")["steps"][0];
  EXPECT_FALSE(rw["grounded"].get<bool>());
  EXPECT_TRUE(has(rw["validation"]["rejected"].get<std::string>(), "embeddings disagree")) << rw.dump();
  EXPECT_EQ(out.trace["offline"]["grounded_context_steps"].get<int>(), 2);
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
  for (const auto& d : out.trace["offline"]["decompositions"])
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
  // The counters repository reaches every stage with the paper's thresholds: each purpose below is asked
  // at least once with good answers, so garbage injected there is really read (checked per run).
  const std::vector<std::string> purposes = {
      "decompose_context", "validate_judge",     "validate_reidentify", "decompose_target",  "verify_seed",
      "agent_turn",        "decompose_proposal", "verify_expansion",    "plan_confirmation", "agent_compaction"};
  const std::vector<std::string> garbage = {
      "",
      "not json at all",
      "{\"steps\": 7}",
      "[1, 2, 3]",
      "{\"steps\": [{\"description\": 5, \"snippet\": null}, 3]}",
      R"({"same_operation": "yes", "supported": 1, "snippet": 3, )"
      R"("verdicts": [{"id": "x"}, {"id": 99, "similar": true}, {"id": -3, "similar": true}], "tool": 5})",
      "```json\n{\"steps\": [{\"id\": -1, \"sufficient\": \"maybe\", \"query\": 12}]}\n```",
      "\xff\xfe{\"steps\":"};
  CountersRepo repo;
  auto script = [](ScriptedBackend& b) {
    script_counters(b);
    b.id = "scripted-bad";  // same subspace for every run; cache-free backend
    auto decompose = b.answers["decompose_context"];
    b.answers["decompose_context"] = [decompose](const GenerateRequest& r) {  // one snippet to re-identify
      if (has(user_text(r), "`noise_0`"))
        return json{{"steps", {{{"description", "alpha alpha"}, {"snippet", "return y"}}}}}.dump();
      return decompose(r);
    };
    b.answers["validate_reidentify"] = [](const GenerateRequest&) { return json{{"snippet", "return x"}}.dump(); };
  };
  auto params = [] {
    auto p = counters_params();
    p.reuse_offline = false;      // every run decomposes again (garbage in the offline stage is read)
    p.agent_context_tokens = 50;  // force a compaction so that its output is exercised too
    p.agent_budget = 3;
    return p;
  };
  {
    ScriptedBackend b;
    script(b);
    ProceduralPipeline pipe(*repo.engine, Models{&b, &b, &b}, params());
    auto out = pipe.run(repo.target());
    for (const auto& purpose : purposes) EXPECT_GT(b.calls[purpose], 0) << purpose << " is never asked";
    EXPECT_GT(count_source(out.steps.at(0), "expansion"), 0);
  }
  for (const auto& purpose : purposes) {
    for (const auto& g : garbage) {
      ScriptedBackend b;
      script(b);
      b.answers[purpose] = [g](const GenerateRequest&) { return g; };
      ProceduralOutcome out;
      ProceduralPipeline pipe(*repo.engine, Models{&b, &b, &b}, params());
      ASSERT_NO_THROW(out = pipe.run(repo.target())) << purpose << " <- " << g;
      EXPECT_GT(b.calls[purpose], 0) << purpose;
      EXPECT_TRUE(out.trace.contains("rounds")) << purpose;
      if (purpose == "decompose_target") {
        EXPECT_TRUE(out.steps.empty());
        EXPECT_FALSE(out.trace["target_decomposition"]["error"].get<std::string>().empty());
        EXPECT_TRUE(has(out.empty_reason, "could not be decomposed")) << out.empty_reason;
      }
      if (purpose == "decompose_context") {
        EXPECT_EQ(out.trace["offline"]["grounded_context_steps"].get<int>(), 0) << g;
        EXPECT_TRUE(has(out.empty_reason, "no grounded context step")) << out.empty_reason;
      }
      if (purpose == "verify_expansion") {
        EXPECT_EQ(count_source(out.steps.at(0), "expansion"), 0) << g;
        EXPECT_EQ(out.steps.at(0).contexts.size(), 21u) << g;  // seeds and the agent's seed stay
      }
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
  EXPECT_EQ(out.trace["offline"]["grounded_context_steps"].get<int>(), 0);
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
  int projected_first = 0;
  // 1. Interrupted after 7 calls (an exception, as a killed or failing backend would end a run).
  {
    auto inner = std::make_unique<ScriptedBackend>();
    script_good(*inner);
    inner->fail_after = 7;
    ScriptedBackend* raw1 = inner.get();
    CachedBackend cb(std::move(inner), cache);
    EXPECT_ANY_THROW(run_once(repo, cb));
    projected_first = raw1->calls["project_step"];  // kept in the index's step_projections store
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
  // The 7 finished calls come back from the LLM cache, or (projections of functions finished before the
  // failure) from the index's projection store.
  EXPECT_GT(projected_first, 0);
  EXPECT_EQ(cached_generations + projected_first, 7);
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

TEST(Procedural, EveryStageRunsWithThePaperThresholdsAndEachOneCounts) {
  CountersRepo repo;
  ScriptedBackend b;
  script_counters(b);
  ProceduralParams p = counters_params();
  ASSERT_EQ(p.seed_threshold, 0.75);  // ProjAgent 4.2's thresholds, as shipped
  ASSERT_EQ(p.expand_tau, 0.65);
  ASSERT_EQ(p.expand_k, 2);
  ASSERT_EQ(p.seed_top, 20);
  ASSERT_EQ(p.verify_top, 30);
  ASSERT_EQ(p.redundancy, 0.95);
  ProceduralPipeline pipe(*repo.engine, Models{&b, &b, &b}, p);
  auto out = pipe.run(repo.target());
  ASSERT_EQ(out.steps.size(), 2u) << out.trace.dump(1);
  const auto& r1 = out.trace["rounds"][0]["target_steps"][0];
  SCOPED_TRACE(r1.dump(1).substr(0, 6000));
  // Initial seeds: the 23 counting steps reach 0.75; the top 20 are verified and confirmed.
  EXPECT_EQ(r1["seed_candidates"].get<int>(), CountersRepo::kCounters);
  EXPECT_EQ(r1["initial_seeds"].size(), 20u);
  EXPECT_EQ(count_source(out.steps[0], "seed"), 20);
  // Agentic seeds: tally_late (not decomposed offline: the cap) is decomposed when proposed, passes the
  // four-stage filter and becomes a seed; count_a21 is redundant with the seeds (> 0.95).
  EXPECT_EQ(b.calls["decompose_proposal"], 1);
  ASSERT_EQ(r1["proposals"].size(), 2u);
  EXPECT_EQ(r1["proposals"][0]["function"], "pkg/late.py::tally_late");
  EXPECT_EQ(r1["proposals"][0]["outcome"], "accepted");
  EXPECT_TRUE(has(r1["proposals"][1]["outcome"].get<std::string>(), "duplicate seeds")) << r1["proposals"][1];
  EXPECT_EQ(count_source(out.steps[0], "agent"), 1);
  // Expansion: the 3 counting steps beyond the top 20 agree (> 0.65) with >= 2 seeds; one batch
  // verifies them and rejects the defaultdict variant.
  EXPECT_EQ(r1["expansion"]["candidates"].get<int>(), 3);
  EXPECT_EQ(r1["verification_batches"].get<int>(), 1);
  EXPECT_EQ(b.calls["verify_expansion"], 1);
  ASSERT_EQ(r1["verification"].size(), 3u);
  std::set<std::string> verified;
  for (const auto& v : r1["verification"]) {
    EXPECT_TRUE(v["judged"].get<bool>()) << v;
    if (v["similar"].get<bool>()) verified.insert(v["function"].get<std::string>());
  }
  EXPECT_EQ(verified, (std::set<std::string>{"pkg/counters.py::count_a20", "pkg/counters.py::count_a21"}));
  EXPECT_EQ(count_source(out.steps[0], "expansion"), 2);
  EXPECT_EQ(find_context(out.steps[0], repo, "count_a22"), nullptr);
  // The verified expansions join the seeds (4.2): RQ2's pairs of step 0 carry a similarity to each of the
  // 20 initial seeds, the agent's seed and the 2 expansions, and no seed is paired with the seeds.
  const std::string step0 = repo.engine->target_name(repo.target().entity) + "#0";
  int step0_pairs = 0;
  for (const auto& pair : pipe.rq2_pairs()) {
    if (pair.target_step != step0) continue;
    ++step0_pairs;
    EXPECT_EQ(pair.seed_similarities.size(), 23u) << pair.context_step;
    EXPECT_FALSE(has(pair.context_step, "count_a20") || has(pair.context_step, "count_a21")) << pair.context_step;
  }
  EXPECT_GT(step0_pairs, 0);
  // Plan confirmation: step 0 is confirmed in round 1; step 1 (no similar step anywhere) is refined once.
  EXPECT_TRUE(out.steps[0].confirmed);
  EXPECT_EQ(out.steps[0].rounds, 1);
  EXPECT_FALSE(out.steps[1].confirmed);
  EXPECT_EQ(out.steps[1].query, "order pairs by value");
  EXPECT_TRUE(out.steps[1].contexts.empty());
  EXPECT_EQ(b.calls["plan_confirmation"], 2);
  EXPECT_TRUE(out.empty_reason.empty());
}

TEST(Procedural, VerificationBatchesFitTheTokenBudgetAndHoldEveryCandidate) {
  // 30 candidates of 540 characters (~135 tokens) and a 2,600-character prompt around them: 17 fit in
  // 3,000 tokens, 2 in 1,000.
  std::vector<size_t> sizes(30, 540);
  auto b3000 = verification_batches(sizes, 2600, 3000);
  auto b1000 = verification_batches(sizes, 2600, 1000);
  EXPECT_EQ(b3000.size(), 2u);
  EXPECT_EQ(b1000.size(), 15u);
  for (const auto& batches : {b3000, b1000}) {
    std::vector<size_t> all;
    for (const auto& b : batches) {
      EXPECT_FALSE(b.empty());
      all.insert(all.end(), b.begin(), b.end());
    }
    ASSERT_EQ(all.size(), 30u);
    for (size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i], i);
  }
  // A candidate larger than the budget still gets a batch of its own.
  EXPECT_EQ(verification_batches({100000, 10}, 0, 3000).size(), 2u);
  EXPECT_TRUE(verification_batches({}, 100, 3000).empty());
}

TEST(Procedural, TheOfflineStageIsComputedOnceAndReusedAcrossTargetsAndRuns) {
  StatsRepo repo;
  const TargetRef hist = repo.target(), mean = repo.engine->resolve_target("pkg/stats.py::mean");
  ProceduralOutcome first, again, other;
  ScriptedBackend b1, b2, b3;
  for (auto* b : {&b1, &b2, &b3}) script_good(*b);
  {
    ProceduralPipeline pipe(*repo.engine, Models{&b1, &b1, &b1}, test_params());
    first = pipe.run(hist, nullptr, {mean.entity});
  }
  EXPECT_FALSE(first.trace["offline"]["reused"].get<bool>());
  EXPECT_GT(b1.calls["decompose_context"], 0);
  EXPECT_GT(first.trace["llm_usage_by_stage"]["offline"]["total"]["calls"].get<int>(), 0);
  // The same benchmark again: no decomposition, validation or projection of a context function.
  {
    ProceduralPipeline pipe(*repo.engine, Models{&b2, &b2, &b2}, test_params());
    again = pipe.run(hist, nullptr, {mean.entity});
  }
  EXPECT_TRUE(again.trace["offline"]["reused"].get<bool>());
  EXPECT_EQ(b2.calls["decompose_context"], 0);
  EXPECT_EQ(b2.calls["validate_judge"], 0);
  EXPECT_EQ(again.trace["llm_usage_by_stage"]["offline"]["total"]["calls"].get<int>(), 0);
  EXPECT_EQ(again.usage.by_purpose.count("decompose_context"), 0u);
  EXPECT_EQ(again.trace["offline"]["key"], first.trace["offline"]["key"]);
  EXPECT_EQ(again.trace["offline"]["grounded_context_steps"], first.trace["offline"]["grounded_context_steps"]);
  EXPECT_EQ(again.trace["rounds"].dump(), first.trace["rounds"].dump());
  ASSERT_EQ(again.steps.size(), first.steps.size());
  for (size_t i = 0; i < again.steps.size(); ++i)
    EXPECT_EQ(again.steps[i].contexts.size(), first.steps[i].contexts.size());
  // Another target of the same benchmark (the targets swap roles): the same artifact.
  {
    ProceduralPipeline pipe(*repo.engine, Models{&b3, &b3, &b3}, test_params());
    other = pipe.run(mean, nullptr, {hist.entity});
  }
  EXPECT_TRUE(other.trace["offline"]["reused"].get<bool>());
  EXPECT_EQ(b3.calls["decompose_context"], 0);
  // Another repository state: computed again.
  repo.repo.write("pkg/textio.py",
                  "def read_words(path):\n    \"\"\"Read words.\"\"\"\n    return open(path).read().split()\n");
  IndexOptions o;
  o.db_path = repo.engine->view().db_path();
  o.progress = false;
  build_index(repo.repo.str(), o);
  auto changed = Engine::open(o.db_path);
  ScriptedBackend b4;
  script_good(b4);
  ProceduralPipeline pipe(*changed, Models{&b4, &b4, &b4}, test_params());
  auto after = pipe.run(changed->resolve_target("pkg/report.py::histogram"), nullptr,
                        {changed->resolve_target("pkg/stats.py::mean").entity});
  EXPECT_FALSE(after.trace["offline"]["reused"].get<bool>());
  EXPECT_NE(after.trace["offline"]["key"], first.trace["offline"]["key"]);
}

TEST(Procedural, BenchmarkTargetsAreNeverContextAndRankTheirFilesFirst) {
  StatsRepo repo;
  ScriptedBackend b;
  script_good(b);
  int turn = 0;
  b.answers["agent_turn"] = [&turn](const GenerateRequest&) {
    return std::string(++turn == 1 ? R"({"thought": "t", "tool": "propose_func", "name": "pkg/stats.py::tally"})"
                                   : R"({"thought": "done", "tool": "finish"})");
  };
  auto p = test_params();
  p.selected_files = 1;
  p.max_rounds = 1;
  const int tally = repo.engine->resolve_target("pkg/stats.py::tally").entity;
  ProceduralPipeline pipe(*repo.engine, Models{&b, &b, &b}, p);
  auto out = pipe.run(repo.target(), nullptr, {tally});
  // Function selection counts the benchmark target: stats.py (1 target, 2 functions) ranks first.
  ASSERT_EQ(out.trace["offline"]["function_selection"].size(), 1u);
  EXPECT_EQ(out.trace["offline"]["function_selection"][0], "pkg/stats.py");
  EXPECT_EQ(out.trace["withheld"], json::array({"pkg/stats.py::tally"}));
  // Never decomposed, refused when the agent proposes it, never a context.
  for (const auto& d : out.trace["offline"]["decompositions"]) EXPECT_NE(d["function"], "pkg/stats.py::tally");
  EXPECT_TRUE(out.trace["online_decompositions"].empty());
  const auto& prop = out.trace["rounds"][0]["target_steps"][0]["proposals"];
  ASSERT_EQ(prop.size(), 1u) << out.trace["rounds"].dump(1);
  EXPECT_TRUE(has(prop[0]["outcome"].get<std::string>(), "another target function of the benchmark"));
  for (const auto& st : out.steps)
    for (const auto& c : st.contexts) EXPECT_NE(c.function, tally);
  // Without the benchmark target, tally is the context it was in the first test.
  ScriptedBackend b0;
  script_good(b0);
  auto plain = run_once(repo, b0);
  EXPECT_NE(find_context(plain.steps[0], repo, "tally"), nullptr);
}

TEST(Procedural, SnippetValidationUsesTheEmbedderItIsGivenNeverSilentlyTheLlm) {
  StatsRepo repo;
  ScriptedBackend llm, embedder, snippet_embedder;
  script_good(llm);
  embedder.id = "scripted-embedder";
  snippet_embedder.id = "scripted-snippet-embedder";
  // Without an embedder the pipeline refuses and names what to configure (LlmSession::models decides the
  // fallback to the LLM, with its warning; the pipeline never falls back silently).
  try {
    ProceduralPipeline pipe(*repo.engine, Models{&llm, nullptr, &llm}, test_params());
    pipe.run(repo.target());
    FAIL() << "no embedder: expected a usage error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_TRUE(has(e.what(), "--snippet-embed-model")) << e.what();
  }
  // No snippet-embedding role: the embedder validates snippets.
  ProceduralPipeline pipe(*repo.engine, Models{&llm, &embedder, &llm}, test_params());
  auto out = pipe.run(repo.target());
  EXPECT_GT(out.usage.by_purpose.at("validate_snippet_embed").embedded_texts, 0);
  EXPECT_EQ(out.trace["models"]["snippet_embedder"], "scripted-embedder");
  EXPECT_FALSE(out.trace["models"]["snippet_embedder_is_llm"].get<bool>());
  ProceduralPipeline same(*repo.engine, Models{&llm, &llm, &llm}, test_params());
  EXPECT_TRUE(same.run(repo.target()).trace["models"]["snippet_embedder_is_llm"].get<bool>());
  // Both roles: snippet validation goes to the snippet embedder only; the trace names each.
  const int embedder_calls_before = embedder.embed_calls;
  ProceduralPipeline two(*repo.engine, Models{&llm, &embedder, &llm, &snippet_embedder}, test_params());
  auto out2 = two.run(repo.target());
  EXPECT_EQ(out2.trace["models"]["snippet_embedder"], "scripted-snippet-embedder");
  EXPECT_EQ(out2.trace["models"]["embedder"], "scripted-embedder");
  EXPECT_GT(snippet_embedder.embed_calls, 0);
  EXPECT_EQ(embedder.embed_calls, embedder_calls_before);
}

// Every agent run's {compaction_trigger_tokens, compactions} in a trace.
static void agent_runs(const json& j, std::vector<std::pair<int, int>>& out) {
  if (j.is_object()) {
    if (j.contains("compaction_trigger_tokens"))
      out.emplace_back(j["compaction_trigger_tokens"].get<int>(), j["compactions"].get<int>());
    for (const auto& [k, v] : j.items()) agent_runs(v, out);
  } else if (j.is_array()) {
    for (const auto& v : j) agent_runs(v, out);
  }
}

TEST(Procedural, TheAgentCompactsByTheModelsContextWindowUnlessAParameterFixesIt) {
  ProceduralParams p;
  ScriptedBackend b;
  EXPECT_EQ(p.agent_context_tokens, 0);
  EXPECT_EQ(SeedAgent::compaction_trigger(p, b), SeedAgent::kFallbackAgentContextTokens);  // no window known
  b.context_tokens = 32768;
  EXPECT_EQ(SeedAgent::compaction_trigger(p, b), 32768 * 3 / 4 - p.agent_tokens);
  b.context_tokens = 1000;
  EXPECT_EQ(SeedAgent::compaction_trigger(p, b), 1024);  // the floor
  p.agent_context_tokens = 777;
  EXPECT_EQ(SeedAgent::compaction_trigger(p, b), 777);  // a set parameter wins

  // Through the pipeline: a small window compacts, a large one does not, and the trace says the trigger.
  StatsRepo repo;
  for (int window : {1400, 1000000}) {
    ScriptedBackend llm;
    script_good(llm);
    // An agent that greps the repository with a new pattern each turn, so that its conversation grows.
    auto turn = std::make_shared<int>(0);
    llm.answers["agent_turn"] = [turn](const GenerateRequest&) {
      static const char* patterns[] = {"e", "a", "o", "i", "r", "t", "n", "s", "l", "c", "u", "d", "m", "p", "f"};
      return json{{"thought", "look around"}, {"tool", "grep"}, {"pattern", patterns[(*turn)++ % 15]}}.dump();
    };
    llm.context_tokens = window;
    auto params = test_params();
    params.agent_context_tokens = 0;
    ProceduralPipeline pipe(*repo.engine, Models{&llm, &llm, &llm}, params);
    auto out = pipe.run(repo.target());
    std::vector<std::pair<int, int>> runs;
    agent_runs(out.trace, runs);
    ASSERT_FALSE(runs.empty()) << "the agent never ran";
    int compactions = 0;
    for (auto [trigger, n] : runs) {
      EXPECT_EQ(trigger, SeedAgent::compaction_trigger(params, llm));
      compactions += n;
    }
    if (window == 1400)
      EXPECT_GT(compactions, 0);
    else
      EXPECT_EQ(compactions, 0);
  }
}

TEST(Procedural, AnInterruptedRunKeepsItsTraceAndSaysWhere) {
  StatsRepo repo;
  ScriptedBackend b;
  script_good(b);
  auto good = b.answers["verify_seed"];
  b.answers["verify_seed"] = [good](const GenerateRequest& r) {
    g_interrupted = true;  // Ctrl-C while the first seeds are verified
    return good(r);
  };
  ProceduralPipeline pipe(*repo.engine, Models{&b, &b, &b}, test_params());
  try {
    pipe.run(repo.target());
    g_interrupted = false;
    FAIL() << "expected an interruption";
  } catch (const Error& e) {
    g_interrupted = false;
    EXPECT_EQ(e.code(), ExitCode::interrupted);
  }
  const json& t = pipe.partial_trace();
  ASSERT_TRUE(t.is_object());
  EXPECT_TRUE(t["interrupted"].get<bool>());
  EXPECT_EQ(t["interrupted_in"], "round 1");
  EXPECT_EQ(t["offline"]["grounded_context_steps"].get<int>(), 4);  // finished work is in the trace
  EXPECT_TRUE(t.contains("llm_usage"));
}

TEST(Procedural, AnEmptyResultSaysWhy) {
  StatsRepo repo;
  ScriptedBackend b;
  script_good(b);
  b.answers["validate_judge"] = [](const GenerateRequest&) {
    return std::string(R"({"supported": false, "reason": "no"})");
  };
  b.answers["decompose_context"] = [](const GenerateRequest&) {
    return json{{"steps", {{{"description", "something unrelated"}, {"snippet", "return counts"}}}}}.dump();
  };
  auto out = run_once(repo, b);
  for (const auto& st : out.steps) EXPECT_TRUE(st.contexts.empty());
  EXPECT_TRUE(has(out.empty_reason, "no grounded context step")) << out.empty_reason;
  EXPECT_EQ(out.trace["empty_reason"], out.empty_reason);
  // Grounded steps, candidates reach the threshold, the LLM rejects them all.
  // (Another index: the one above holds the offline stage of the failed validation, which is reused.)
  StatsRepo fresh;
  ScriptedBackend b2;
  script_good(b2);
  b2.answers["verify_seed"] = [](const GenerateRequest&) {
    return std::string(R"({"same_operation": false, "reason": "no"})");
  };
  auto p = test_params();
  p.agent = false;
  auto out2 = run_once(fresh, b2, p);
  EXPECT_TRUE(has(out2.empty_reason, "every candidate context was rejected")) << out2.empty_reason;
  // Nothing similar enough: the reason names the paper's threshold and the best similarity reached.
  ScriptedBackend b3;
  script_good(b3);
  b3.answers["decompose_target"] = [](const GenerateRequest&) {
    return json{{"steps", {{{"description", "open a network socket and wait for a connection"}}}}}.dump();
  };
  ProceduralParams paper;
  paper.agent = false;
  auto out3 = run_once(fresh, b3, paper);
  EXPECT_TRUE(has(out3.empty_reason, "no context step reached projection similarity 0.75 with a target step (best "))
      << out3.empty_reason;
}

TEST(Procedural, Rq2PairsCoverTheContextStepsButTheSeedsAndReachThePairsFile) {
  StatsRepo repo;
  ScriptedBackend b;
  script_good(b);
  RetrieverOptions ro;
  ro.procedural = test_params();
  auto r = make_retriever("procedural", *repo.engine, Models{&b, &b, &b}, ro);
  RetrievalQuery q;
  q.target = repo.target();
  auto result = r->run(q);
  const std::vector<Rq2Pair>& pairs = last_rq2_pairs(*r);
  ASSERT_FALSE(pairs.empty()) << result.trace.dump(1).substr(0, 2000);
  // Step 0's verified seed is tally's counting step: it is never paired with step 0's seeds.
  const std::string target0 = repo.engine->target_name(repo.target().entity) + "#0";
  int step0_pairs = 0;
  for (const auto& p : pairs) {
    if (p.target_step != target0) continue;
    ++step0_pairs;
    EXPECT_NE(p.context_step, "pkg/stats.py::tally#0") << "a seed paired with itself";
    EXPECT_FALSE(p.seed_similarities.empty());
  }
  EXPECT_GT(step0_pairs, 0);
  // The pairs file the CLI appends to is what RQ2 reads.
  TempDir d;
  append_rq2_pairs(d.str() + "/pairs.jsonl", pairs);
  auto back = read_rq2_pairs(d.str() + "/pairs.jsonl");
  ASSERT_EQ(back.size(), pairs.size());
  EXPECT_EQ(back.front().context_step, pairs.front().context_step);
  EXPECT_EQ(back.front().seed_similarities, pairs.front().seed_similarities);
  // Another strategy has no pairs.
  auto sparse = make_retriever("sparse", *repo.engine);
  EXPECT_TRUE(last_rq2_pairs(*sparse).empty());
}

TEST(Procedural, TheEnergyThresholdIsAParameterThatShapesTheSubspace) {
  StatsRepo repo;
  auto subspace_of = [&](double threshold) {
    ScriptedBackend b;
    script_good(b);
    ProceduralParams p = test_params();
    p.energy_threshold = threshold;
    p.reuse_offline = false;
    return run_once(repo, b, p).trace["offline"]["subspace"];
  };
  json paper = subspace_of(0.98), half = subspace_of(0.5);
  EXPECT_EQ(paper["energy_threshold"].get<double>(), 0.98) << paper;
  EXPECT_EQ(half["energy_threshold"].get<double>(), 0.5) << half;
  // Fewer semantic directions hold half the energy than 98% of it: V_R is larger.
  EXPECT_LT(half["k"].get<int>(), paper["k"].get<int>()) << paper << half;
  EXPECT_GT(half["reasoning_dim"].get<int>(), paper["reasoning_dim"].get<int>());
  ProceduralParams p;
  EXPECT_EQ(p.energy_threshold, 0.98);  // the paper's default
  EXPECT_THROW(p.apply(json{{"energy_threshold", 1.5}}), Error);
}
