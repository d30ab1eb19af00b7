// ProjAgent 4.3-4.4's generation side (generate/*): splicing a model's answer into real files (a real body
// spliced back reproduces every flask file byte for byte), the budgeted prompt assembly, and the feedback
// loop with the recorded-response backend (a certain finding triggers a refinement round; no-feedback and
// the baselines make one call; the semantic contexts come from the import closure; re-runs are cached).
#include <gtest/gtest.h>

#include "generate/generator.h"
#include "generate/splice.h"
#include "indexed_repo.h"
#include "llm/cache.h"
#include "repo/parser.h"
#include "scripted_backend.h"
#include "util/error.h"
#include "util/text.h"

using namespace repoctx;
using nlohmann::json;
using repoctx::testing::flask_index;
using repoctx::testing::ScriptedBackend;
using repoctx::testing::user_text;

namespace {

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

const char* kGood =
    "Here it is:\n```python\n"
    "def get_load_dotenv(default: bool = True) -> bool:\n"
    "    \"\"\"Docstring the splice drops.\"\"\"\n"
    "    val = os.environ.get(\"FLASK_SKIP_DOTENV\")\n"
    "\n"
    "    if not val:\n"
    "        return default\n"
    "\n"
    "    return val.lower() in (\"0\", \"false\", \"no\")\n"
    "```\n";
const char* kUndefinedCall =
    "```python\n"
    "def get_load_dotenv(default=True):\n"
    "    return zq_missing_helper(default)\n"
    "```\n";

void script(ScriptedBackend& b, bool good_first) {
  b.answers["decompose_target"] = [](const GenerateRequest&) {
    return json{{"steps",
                 {{{"description", "read the environment variable FLASK_SKIP_DOTENV"}},
                  {{"description", "return the default when unset, else whether it disables dotenv"}}}}}
        .dump();
  };
  b.answers["generate"] = [good_first](const GenerateRequest&) {
    return std::string(good_first ? kGood : kUndefinedCall);
  };
  b.answers["refine"] = [](const GenerateRequest& r) {
    // The refinement prompt must carry the previous code and the finding.
    bool ok = has(user_text(r), "zq_missing_helper") && has(user_text(r), "is not defined");
    return std::string(ok ? kGood : "no code");
  };
}

}  // namespace

TEST(Splice, RealBodiesSplicedBackReproduceEveryFlaskFile) {
  auto& repo = flask_index();
  const auto& v = repo.engine->view();
  int checked = 0;
  for (size_t i = 0; i < v.entities().size(); ++i) {
    const auto& en = v.entities()[i];
    if (!is_callable(en.kind) || en.body_start_line <= 0) continue;
    const std::string& content = v.content(en.file);
    std::string src(line_range(content, line_starts(content), en.decorated_start_line, en.end_line));
    auto ex = extract_body(src, en.name);
    ASSERT_TRUE(ex.found) << repo.engine->target_name(static_cast<int>(i)) << ": " << ex.problem;
    EXPECT_EQ(splice_body(content, en, ex.body), content) << repo.engine->target_name(static_cast<int>(i));
    EXPECT_EQ(unified_diff("x.py", content, content), "");
    ++checked;
  }
  EXPECT_GT(checked, 300);
}

TEST(Splice, AnswersAndDiffs) {
  EXPECT_EQ(extract_code_block("text\n```python\nx = 1\n```\nmore"), "x = 1\n");
  EXPECT_EQ(extract_code_block("```\ny = 2\n"), "y = 2\n");  // cut off by max_tokens
  EXPECT_EQ(extract_code_block("z = 3"), "z = 3");
  auto none = extract_body("def other():\n    return 1\n", "wanted");
  EXPECT_FALSE(none.found);
  EXPECT_TRUE(has(none.problem, "no definition of `wanted`"));
  // Nested in a class the model repeated: the method's body, dedented.
  auto m = extract_body("class C:\n    def m(self):\n        a = 1\n        return a\n", "m");
  ASSERT_TRUE(m.found);
  EXPECT_EQ(m.body, "a = 1\nreturn a");
  // An inline body in the file gets lines of its own.
  std::string file = "def f(x): return x\ny = f(1)\n";
  SourceParser parser;
  auto pf = parser.parse("f.py", "f", file, Language::python);
  std::string patched = splice_body(file, pf.entities[0], "z = x + 1\nreturn z");
  EXPECT_EQ(patched, "def f(x):\n    z = x + 1\n    return z\ny = f(1)\n");
  std::string d = unified_diff("f.py", file, patched);
  EXPECT_TRUE(has(d, "--- a/f.py\n+++ b/f.py\n@@ -1,2 +1,4 @@\n-def f(x): return x\n+def f(x):\n")) << d;
}

TEST(PromptAssembly, CoversEveryStepThenFillsWithConfirmedOnly) {
  auto ctx = [](const char* kind, int step, bool confirmed, int entity, size_t chars) {
    return PromptContext{kind, step, confirmed, entity, 1.0, "f" + std::to_string(entity), std::string(chars, 'x')};
  };
  std::vector<std::vector<PromptContext>> proc = {
      {ctx("procedural", 1, false, 10, 400), ctx("procedural", 1, true, 11, 400), ctx("procedural", 1, true, 12, 400)},
      {ctx("procedural", 2, false, 20, 400), ctx("procedural", 2, false, 21, 400)}};
  std::vector<std::vector<PromptContext>> sem = {{ctx("semantic", 1, true, 30, 400), ctx("semantic", 1, true, 31, 400)},
                                                 {ctx("semantic", 2, false, 40, 400)}};
  auto all = assemble_contexts(proc, sem, 100000);
  std::vector<int> ids;
  for (const auto& c : all) ids.push_back(c.entity);
  // Coverage: step 1's confirmed procedural (11, not the better-ranked unconfirmed 10), step 2's best (20),
  // then semantic 30 and 40; fill: confirmed procedural 12, then confirmed semantic 31. 10 and 21 never.
  EXPECT_EQ(ids, (std::vector<int>{11, 20, 30, 40, 12, 31}));
  for (const auto& c : all) EXPECT_TRUE(has(format_contexts({c}), c.confirmed ? "(confirmed)" : "(unconfirmed)"));
  // A budget for three contexts: the coverage ones first.
  int one = proc[0][0].tokens();
  auto few = assemble_contexts(proc, sem, 3 * one);
  ASSERT_EQ(few.size(), 3u);
  EXPECT_EQ(few[2].entity, 30);
}

TEST(Generate, FeedbackLoopRepairsAnUndefinedCall) {
  auto& repo = flask_index();
  ScriptedBackend b;
  script(b, false);
  GenerationParams p;
  p.method = "projagent-no-procedural";
  auto t = repo.engine->resolve_target("helpers.py::get_load_dotenv");
  auto out = generate_function(*repo.engine, Models{&b, &b}, t, p);
  EXPECT_EQ(out.rounds, 1);
  EXPECT_TRUE(out.findings.empty());
  EXPECT_EQ(b.calls["generate"], 1);
  EXPECT_EQ(b.calls["refine"], 1);
  const std::string& orig = repo.engine->view().content(t.file);
  EXPECT_EQ(out.patched_file, orig);  // the repaired answer is the real body
  EXPECT_EQ(out.diff, "");
  EXPECT_TRUE(has(out.function_text, "setting :envvar:`FLASK_SKIP_DOTENV`"))
      << out.function_text;  // original docstring kept
  // The trace: both rounds with their findings, the steps, and semantic contexts from the import closure.
  ASSERT_EQ(out.trace["rounds"].size(), 2u);
  EXPECT_EQ(out.trace["rounds"][0]["findings"][0]["check"], "function_call");
  EXPECT_EQ(out.trace["steps"].size(), 2u);
  EXPECT_EQ(out.trace["steps"][0]["semantic"], 20);
  EXPECT_GE(out.trace["prompt_contexts"].size(), 2u);
  EXPECT_EQ(out.usage.by_purpose.at("refine").calls, 1);
}

TEST(Generate, NoFeedbackAndBaselinesMakeOneCallAndReportWhatIsLeft) {
  auto& repo = flask_index();
  auto t = repo.engine->resolve_target("helpers.py::get_load_dotenv");
  for (const char* method : {"projagent-no-feedback", "sparse", "same-file"}) {
    ScriptedBackend b;
    script(b, false);
    GenerationParams p;
    p.method = method;
    p.procedural.max_context_functions = 3;
    p.procedural.agent = false;
    auto out = generate_function(*repo.engine, Models{&b, &b}, t, p);
    EXPECT_EQ(out.rounds, 0) << method;
    EXPECT_EQ(b.calls["generate"], 1) << method;
    EXPECT_EQ(b.calls.count("refine"), 0u) << method;
    ASSERT_EQ(out.findings.size(), 1u) << method;
    EXPECT_TRUE(has(out.diff, "+    return zq_missing_helper(default)")) << method << "\n" << out.diff;
    EXPECT_TRUE(has(out.function_text, "def get_load_dotenv")) << method;
  }
  // A model that never writes a function: ten rounds, then a body that fails loudly.
  ScriptedBackend b;
  b.answers["generate"] = [](const GenerateRequest&) { return std::string("I cannot help."); };
  GenerationParams p;
  p.method = "projagent-no-procedural";
  auto out = generate_function(*repo.engine, Models{&b, &b}, t, p);
  EXPECT_EQ(out.rounds, 10);
  EXPECT_EQ(b.calls["refine"], 10);
  EXPECT_TRUE(has(out.patched_file, "raise NotImplementedError(\"repoctx:"));
  EXPECT_THROW(
      {
        p.method = "nope";
        generate_function(*repo.engine, Models{&b, &b}, t, p);
      },
      Error);
}

TEST(Generate, ReRunThroughTheCacheRepeatsNoLlmWork) {
  auto& repo = flask_index();
  repoctx::testing::TempDir dir;
  auto inner = std::make_unique<ScriptedBackend>();
  script(*inner, false);
  ScriptedBackend* raw = inner.get();
  auto cache = std::make_shared<LlmCache>(dir.str() + "/c.db");
  CachedBackend cached(std::move(inner), cache);
  GenerationParams p;
  p.method = "projagent-no-procedural";
  auto t = repo.engine->resolve_target("helpers.py::get_load_dotenv");
  auto a = generate_function(*repo.engine, Models{&cached, &cached}, t, p);
  int first = raw->total_calls;
  auto b2 = generate_function(*repo.engine, Models{&cached, &cached}, t, p);
  EXPECT_EQ(raw->total_calls, first);
  EXPECT_EQ(a.patched_file, b2.patched_file);
  EXPECT_EQ(b2.usage.total().cached, b2.usage.total().calls);
}
