// ProjAgent 4.3-4.4's generation side (generate/*): splicing a model's answer into real files (a real body
// spliced back reproduces every flask file byte for byte), the budgeted prompt assembly, and the feedback
// loop with the recorded-response backend (a certain finding triggers a refinement round; no-feedback and
// the baselines make one call; the semantic contexts come from the import closure; re-runs are cached).
#include <gtest/gtest.h>

#include <map>

#include "generate/generator.h"
#include "generate/python_syntax.h"
#include "generate/splice.h"
#include "generate/static_checks.h"
#include "index/index.h"
#include "indexed_repo.h"
#include "llm/cache.h"
#include "repo/parser.h"
#include "retrieve/retriever.h"
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

namespace {

// The flask target's file with `body` in place of the real body.
std::string with_body(const Engine& e, const TargetRef& t, const std::string& body) {
  return splice_body(e.view().content(t.file), e.view().entities()[t.entity], body);
}

const StaticFinding* finding(const std::vector<StaticFinding>& fs, const std::string& check) {
  for (const auto& f : fs)
    if (f.check == check) return &f;
  return nullptr;
}

}  // namespace

TEST(SyntaxCheck, PythonItselfJudgesAndTheModelGetsItsMessageLineAndColumn) {
  auto& repo = flask_index();
  auto t = repo.engine->resolve_target("helpers.py::get_load_dotenv");
  const auto& te = repo.engine->view().entities()[t.entity];
  ASSERT_NE(python_compiler(""), nullptr) << "python3 is on PATH on every machine this project supports";
  // Python 2's print statement: tree-sitter parses it (a print_statement node), Python refuses it.
  std::string text = with_body(*repo.engine, t, "print \"hello\"\nreturn default");
  auto fs = check_function(*repo.engine, t.entity, text);
  const StaticFinding* f = finding(fs, "syntax");
  ASSERT_NE(f, nullptr) << "print \"hello\" must be caught";
  EXPECT_EQ(f->line, te.body_start_line);
  EXPECT_TRUE(has(f->message, "Missing parentheses in call to 'print'")) << f->message;
  EXPECT_TRUE(has(f->message, "line " + std::to_string(te.body_start_line) + ", column 5")) << f->message;
  EXPECT_EQ(finding(check_function(*repo.engine, t.entity, text, nullptr, CheckOptions{"none"}), "syntax"), nullptr)
      << "tree-sitter alone accepts it (why Python judges)";
  // Symbol-table errors compile() finds and ast.parse would not.
  auto nl = check_function(*repo.engine, t.entity, with_body(*repo.engine, t, "nonlocal zq\nreturn default"));
  ASSERT_NE(finding(nl, "syntax"), nullptr);
  EXPECT_TRUE(has(finding(nl, "syntax")->message, "no binding for nonlocal 'zq' found"))
      << finding(nl, "syntax")->message;
  // An unclosed bracket is reported where Python sees it; the real body has no finding.
  auto open_paren = check_function(*repo.engine, t.entity, with_body(*repo.engine, t, "x = (1 +\nreturn default"));
  ASSERT_NE(finding(open_paren, "syntax"), nullptr);
  EXPECT_TRUE(has(finding(open_paren, "syntax")->message, "never closed") ||
              has(finding(open_paren, "syntax")->message, "invalid syntax"))
      << finding(open_paren, "syntax")->message;
  EXPECT_TRUE(check_function(*repo.engine, t.entity, repo.engine->view().content(t.file)).empty());
}

TEST(SyntaxCheck, TheInterpreterIsConfigurableAndItsAbsenceFallsBackToTreeSitter) {
  PythonCompiler* c = python_compiler("");
  ASSERT_NE(c, nullptr);
  EXPECT_TRUE(has(c->version(), "3.")) << c->version();
  EXPECT_EQ(resolve_python("python3"), c->interpreter());
  EXPECT_EQ(python_compiler(c->interpreter()), c);  // one helper per interpreter
  try {
    resolve_python("/nonexistent/python3");
    FAIL() << "a configured interpreter that does not exist is an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::not_found);
  }
  // $REPOCTX_PYTHON, then PATH; nothing found: "" (the checks fall back to tree-sitter).
  std::string path = std::getenv("PATH") ? std::getenv("PATH") : "";
  ::setenv("REPOCTX_PYTHON", c->interpreter().c_str(), 1);
  ::setenv("PATH", "/nonexistent", 1);
  EXPECT_EQ(resolve_python(""), c->interpreter());
  ::unsetenv("REPOCTX_PYTHON");
  EXPECT_EQ(resolve_python(""), "");
  EXPECT_EQ(python_compiler(""), nullptr);
  auto& repo = flask_index();
  auto t = repo.engine->resolve_target("helpers.py::get_load_dotenv");
  auto fs = check_function(*repo.engine, t.entity, with_body(*repo.engine, t, "x = (1 +\nreturn default"));
  ::setenv("PATH", path.c_str(), 1);
  ASSERT_NE(finding(fs, "syntax"), nullptr);  // tree-sitter's verdict
  EXPECT_TRUE(has(finding(fs, "syntax")->message, "does not parse"));
  // A helper that is killed is restarted for the next candidate; one process per candidate agrees.
  auto v = c->check("print 'x'\n");
  ASSERT_TRUE(v.has_value());
  auto once = c->check_in_new_process("print 'x'\n");
  ASSERT_TRUE(once.has_value());
  EXPECT_EQ(once->message, v->message);
  EXPECT_FALSE(c->check("x = 1\n").has_value());
}

TEST(Generate, TheFeedbackLoopGivesTheModelPythonsSyntaxError) {
  auto& repo = flask_index();
  ScriptedBackend b;
  script(b, true);
  b.answers["generate"] = [](const GenerateRequest&) {
    return std::string(
        "```python\ndef get_load_dotenv(default=True):\n    print \"checking\"\n    return default\n```\n");
  };
  b.answers["refine"] = [](const GenerateRequest& r) {
    return std::string(has(user_text(r), "Missing parentheses in call to 'print'") ? kGood : "no code");
  };
  GenerationParams p;
  p.method = "projagent-no-procedural";
  auto t = repo.engine->resolve_target("helpers.py::get_load_dotenv");
  auto out = generate_function(*repo.engine, Models{&b, &b}, t, p);
  EXPECT_EQ(out.trace["syntax_check"]["checker"], "python");
  EXPECT_EQ(out.trace["rounds"][0]["findings"][0]["check"], "syntax");
  EXPECT_EQ(out.rounds, 1);
  EXPECT_TRUE(out.findings.empty());
  EXPECT_EQ(out.patched_file, repo.engine->view().content(t.file));
}

TEST(Generate, BenchmarkTargetsStayOutOfTheSemanticPoolAndTheTraceShowsIt) {
  auto& repo = flask_index();
  auto t = repo.engine->resolve_target("helpers.py::get_load_dotenv");
  GenerationParams p;
  p.method = "projagent-no-procedural";
  ScriptedBackend b;
  script(b, true);
  auto plain = generate_function(*repo.engine, Models{&b, &b}, t, p);
  // The first semantic context that is a function: another task of the same benchmark.
  int other = -1;
  for (const auto& c : plain.trace["prompt_contexts"]) {
    if (c.value("kind", "") != "semantic") continue;
    auto spec = c["title"].get<std::string>();
    auto ref = repo.engine->resolve_target(spec);
    if (is_callable(repo.engine->view().entities()[ref.entity].kind)) {
      other = ref.entity;
      break;
    }
  }
  ASSERT_GE(other, 0) << plain.trace["prompt_contexts"].dump(1);
  EXPECT_TRUE(plain.trace["withheld"].empty());
  p.withheld = {other};
  auto out = generate_function(*repo.engine, Models{&b, &b}, t, p);
  EXPECT_EQ(out.trace["withheld"], json::array({repo.engine->target_name(other)}));
  EXPECT_TRUE(out.trace["withheld_in_context"].empty()) << out.trace["withheld_in_context"];
  for (const auto& c : out.trace["prompt_contexts"]) EXPECT_NE(c["title"], repo.engine->target_name(other));
}

TEST(Generate, EachLanguageHasItsOwnStubAndSpliceAndJavaGenerationIsRefused) {
  repoctx::testing::TempDir dir, db;
  const std::string java =
      "package p;\n\npublic class Box {\n    private int n;\n\n    public int size(int extra) {\n"
      "        int total = n + extra;\n        return total;\n    }\n\n    public int inline() { return n; }\n}\n";
  dir.write("p/Box.java", java);
  dir.write("m.py", "def f(x):\n    \"\"\"Doc.\"\"\"\n    return x + 1\n");
  IndexOptions o;
  o.db_path = db.str() + "/i.db";
  o.progress = false;
  build_index(dir.str(), o);
  auto eng = Engine::open(o.db_path);
  auto size = eng->resolve_target("p/Box.java::Box.size");
  const auto& se = eng->view().entities()[size.entity];
  // The real body put back unchanged; the stub between the braces, the closing brace kept.
  EXPECT_EQ(current_body(java, se, Language::java), "int total = n + extra;\nreturn total;");
  EXPECT_EQ(splice_body(java, se, current_body(java, se, Language::java), Language::java), java);
  std::string stubbed = splice_body(java, se, stub_body(Language::java, "repoctx stub"), Language::java);
  EXPECT_TRUE(
      has(stubbed,
          "    public int size(int extra) {\n        throw new UnsupportedOperationException(\"repoctx stub\");\n"
          "    }\n\n    public int inline()"))
      << stubbed;
  SourceParser parser;
  auto pf = parser.parse("p/Box.java", "p.Box", stubbed, Language::java);
  EXPECT_TRUE(pf.errors.empty());
  EXPECT_EQ(pf.entities.size(), static_cast<size_t>(eng->view().files()[size.file].n_entities));
  // A body on the header's line moves to lines of its own.
  auto inl = eng->resolve_target("p/Box.java::Box.inline");
  std::string s2 = splice_body(java, eng->view().entities()[inl.entity], "return n * 2;", Language::java);
  EXPECT_TRUE(has(s2, "    public int inline() {\n        return n * 2;\n    }\n}\n")) << s2;
  EXPECT_TRUE(parser.parse("p/Box.java", "p.Box", s2, Language::java).errors.empty());
  // Python keeps its own stub.
  auto f = eng->resolve_target("m.py::f");
  EXPECT_EQ(splice_body(eng->view().content(f.file), eng->view().entities()[f.entity],
                        stub_body(Language::python, "repoctx stub")),
            "def f(x):\n    \"\"\"Doc.\"\"\"\n    raise NotImplementedError(\"repoctx stub\")\n");
  // Generation refuses Java with a reason instead of writing Python into a .java file.
  ScriptedBackend b;
  script(b, true);
  GenerationParams p;
  p.method = "sparse";
  try {
    generate_function(*eng, Models{&b, &b}, size, p);
    FAIL() << "Java generation must be refused";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_TRUE(has(e.what(), "generation writes Python only")) << e.what();
  }
  EXPECT_EQ(b.total_calls, 0);
}

TEST(Generate, SpecAgentIsNamedAndExplainedNotSilentlyUnknown) {
  try {
    check_generation_method("specagent");
    FAIL() << "specagent cannot run";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_TRUE(has(e.what(), "cannot be reproduced")) << e.what();
    EXPECT_TRUE(has(e.what(), "docs/DEVIATIONS.md")) << e.what();
  }
}

// A prompt fitted to a small context: ProjAgent's defaults (12,000 estimated tokens of contexts, 4,096
// output tokens) against a 2,048-token server; nothing changes when the context is unknown or large.
TEST(PromptFit, TheBudgetAndOutputAreFittedToTheContext) {
  ContextFit unknown = fit_to_context(0, 12000, 4096, 2000);
  EXPECT_EQ(unknown.budget_tokens, 12000);
  EXPECT_EQ(unknown.max_tokens, 4096);
  EXPECT_FALSE(unknown.clamped);

  ContextFit large = fit_to_context(131072, 12000, 4096, 2000);
  EXPECT_EQ(large.budget_tokens, 12000);
  EXPECT_EQ(large.max_tokens, 4096);
  EXPECT_FALSE(large.clamped);

  ContextFit small = fit_to_context(2048, 12000, 4096, 1000);
  EXPECT_TRUE(small.clamped);
  EXPECT_EQ(small.max_tokens, 512);
  // Fixed text (1,000 chars at 2.5 a token) + contexts (4 chars an estimated token, at 2.5 real) + the answer
  // twice (refinement) + the template's overhead fit in 2,048 tokens.
  double real = 1000 / 2.5 + small.budget_tokens * 4 / 2.5 + 2 * small.max_tokens + 64;
  EXPECT_LE(real, 2048);
  EXPECT_GT(real, 2048 - 2);  // and the rest of the context is the contexts'
  EXPECT_GT(small.budget_tokens, 0);

  // A fixed text that leaves nothing: no contexts, never a negative budget.
  EXPECT_EQ(fit_to_context(2048, 12000, 4096, 100000).budget_tokens, 0);
  // A budget smaller than the room is kept.
  EXPECT_EQ(fit_to_context(32768, 500, 256, 1000).budget_tokens, 500);
}

// issue 19 made the structural order `imports`' default; ProjAgent's semantic contexts stay the paper's: eq. 6
// over the pool for each step's own text (`imports` with imports_order=bm25 and the step's description).
TEST(Generate, SemanticContextsKeepThePapersEq6Order) {
  auto& repo = flask_index();
  auto t = repo.engine->resolve_target("helpers.py::get_load_dotenv");
  GenerationParams p;
  p.method = "projagent-no-procedural";  // no procedural contexts: a step's query is its description
  ScriptedBackend b;
  script(b, true);
  auto out = generate_function(*repo.engine, Models{&b, &b}, t, p);
  RetrieverOptions paper;
  paper.imports_order = "bm25";
  auto pool = make_retriever("imports", *repo.engine, Models{&b, &b}, paper);
  std::map<int, std::vector<std::string>> expected;  // step id -> the paper's ranking for its text
  for (const auto& st : out.trace["steps"]) {
    RetrievalQuery q;
    q.target = t;
    q.text = st["description"].get<std::string>();
    q.top_k = p.semantic_top;
    for (const auto& h : pool->retrieve(q)) expected[st["id"].get<int>()].push_back(repo.engine->target_name(h.entity));
  }
  size_t semantic = 0;
  for (const auto& c : out.trace["prompt_contexts"]) {
    if (c.value("kind", "") != "semantic") continue;
    ++semantic;
    const auto& want = expected[c["step"].get<int>()];
    ASSERT_FALSE(want.empty());
    // assemble_contexts takes each step's semantic contexts in rank order: the first is the paper's first.
    EXPECT_EQ(c["title"].get<std::string>(), want[0]) << c.dump();
  }
  EXPECT_GE(semantic, 1u);
}
