// Issue 19's `locate`: the evidence extractors on realistic request texts (tracebacks, pytest output,
// identifiers, literals), and the strategy on a small indexed repository (frames, names and literals move
// the right file and function up; test files come last) with a hand-written model, plus the ranked
// metrics localize-eval computes from hits.
#include <gtest/gtest.h>

#include <algorithm>

#include "eval/localize.h"
#include "helpers.h"
#include "index/index.h"
#include "retrieve/locate/evidence.h"
#include "retrieve/locate/locate.h"
#include "retrieve/retriever.h"
#include "util/error.h"

using namespace repoctx;
using nlohmann::json;
using repoctx::testing::TempDir;

namespace {

bool has(const std::vector<std::string>& v, const std::string& s) {
  return std::find(v.begin(), v.end(), s) != v.end();
}

const char* kIssue = R"(Flask app.run() crashes when SERVER_NAME has a port

When I call `app.run(debug=True)` with `SERVER_NAME` set, I get:

```
Traceback (most recent call last):
  File "/home/me/proj/app.py", line 8, in <module>
    app.run()
  File "/usr/lib/python3/dist-packages/flask/app.py", line 920, in run
    host, port = sn_host.partition(":")
  File "/usr/lib/python3/dist-packages/flask/helpers.py", line 55, in get_debug_flag
    val = os.environ.get("FLASK_DEBUG")
ValueError: invalid literal for int() with base 10: 'abc'
```

Maybe `flask.helpers.get_debug_flag` should use werkzeug.serving.run_simple like AppContext does.
)";

}  // namespace

TEST(LocateEvidence, PythonTracebackFrames) {
  RequestEvidence ev = extract_evidence(kIssue);
  ASSERT_EQ(ev.frames.size(), 3u);
  EXPECT_EQ(ev.frames[0].path, "/home/me/proj/app.py");
  EXPECT_EQ(ev.frames[0].function, "<module>");
  EXPECT_EQ(ev.frames[1].path, "/usr/lib/python3/dist-packages/flask/app.py");
  EXPECT_EQ(ev.frames[1].line, 920);
  EXPECT_EQ(ev.frames[1].function, "run");
  EXPECT_EQ(ev.frames[2].function, "get_debug_flag");
  EXPECT_TRUE(has(ev.paths, "/usr/lib/python3/dist-packages/flask/helpers.py"));
  EXPECT_TRUE(has(ev.code_identifiers, "get_debug_flag"));  // a frame's function is quoted code
}

TEST(LocateEvidence, PytestAndColonFrames) {
  RequestEvidence ev = extract_evidence(
      "Running the suite fails:\n\nsrc/click/core.py:1234: in invoke\n    return ctx.invoke(self.callback)\n"
      "E   TypeError: 'NoneType' object is not callable\n\nalso see src/click/types.py:77\n");
  ASSERT_EQ(ev.frames.size(), 2u);
  EXPECT_EQ(ev.frames[0].path, "src/click/core.py");
  EXPECT_EQ(ev.frames[0].line, 1234);
  EXPECT_EQ(ev.frames[0].function, "invoke");
  EXPECT_EQ(ev.frames[1].path, "src/click/types.py");
  EXPECT_EQ(ev.frames[1].function, "");
  EXPECT_TRUE(has(ev.exceptions, "TypeError"));
}

TEST(LocateEvidence, IdentifiersDottedNamesAndPaths) {
  RequestEvidence ev = extract_evidence(kIssue);
  EXPECT_TRUE(has(ev.identifiers, "SERVER_NAME"));     // snake/upper case
  EXPECT_TRUE(has(ev.identifiers, "AppContext"));      // CamelCase in prose
  EXPECT_TRUE(has(ev.identifiers, "get_debug_flag"));  // part of a dotted name
  EXPECT_TRUE(has(ev.identifiers, "run"));             // `app.run(...)`: a call in inline code
  EXPECT_FALSE(has(ev.identifiers, "When"));           // prose words are not names
  EXPECT_FALSE(has(ev.identifiers, "port"));
  EXPECT_TRUE(has(ev.dotted, "flask.helpers.get_debug_flag"));
  EXPECT_TRUE(has(ev.dotted, "werkzeug.serving.run_simple"));
  EXPECT_FALSE(has(ev.dotted, "app.py"));  // a file name is a path, not a dotted name
  EXPECT_TRUE(has(ev.paths, "/home/me/proj/app.py"));
  EXPECT_TRUE(has(ev.code_identifiers, "partition"));  // from the fenced block
}

TEST(LocateEvidence, LiteralsAndExceptionMessages) {
  RequestEvidence ev = extract_evidence(kIssue);
  EXPECT_TRUE(has(ev.exceptions, "ValueError"));
  EXPECT_TRUE(has(ev.literals, "invalid literal for int() with base 10: 'abc'"));
  RequestEvidence q = extract_evidence("The message \"Could not locate a Flask application\" is wrong; 'x' too.");
  EXPECT_TRUE(has(q.literals, "Could not locate a Flask application"));
  EXPECT_FALSE(has(q.literals, "x"));  // too short to be a message
}

TEST(LocateEvidence, LiteralFragmentsSkipRuntimeParts) {
  // "{name}" and digits are filled in at run time: fragments never span them.
  auto f = literal_fragments("Invalid value for '--count': 12 is not in the range 0<=x<=10.");
  EXPECT_TRUE(has(f, "Invalid value for"));
  EXPECT_TRUE(has(f, "in the range"));
  EXPECT_FALSE(has(f, "is not in"));  // no word of 4+ letters: too common to point anywhere
  for (const auto& s : f) EXPECT_EQ(s.find("12"), std::string::npos) << s;
  EXPECT_TRUE(literal_fragments("a b").empty());
  EXPECT_TRUE(has(literal_fragments("unterminated"), "unterminated"));
}

namespace {

struct LocateRepo {
  TempDir repo, db;
  std::unique_ptr<Engine> engine;
  LocateRepo() {
    repo.write("pkg/__init__.py", "");
    repo.write("pkg/config.py",
               "def load_config(path):\n    \"\"\"Read a config file.\"\"\"\n    if not path:\n"
               "        raise ValueError(\"config path must not be empty\")\n    return open(path).read()\n\n"
               "class ConfigError(Exception):\n    pass\n");
    repo.write("pkg/server.py",
               "from pkg.config import load_config\n\nclass Server:\n    def start(self, config_path):\n"
               "        self.config = load_config(config_path)\n        return self.config\n\n"
               "    def stop(self):\n        return None\n");
    repo.write("pkg/util.py", "def config_value(config, key):\n    return config.get(key)\n");
    repo.write("tests/test_config.py",
               "from pkg.config import load_config\n\ndef test_load_config_empty_path():\n"
               "    load_config('')\n    assert 'config path must not be empty'\n");
    IndexOptions o;
    o.db_path = db.str() + "/i.db";
    o.progress = false;
    build_index(repo.str(), o);
    engine = Engine::open(o.db_path);
  }
};

LocateRepo& locate_repo() {
  static LocateRepo r;
  return r;
}

// A model whose weights say what each kind of evidence is worth; the shipped one is trained.
std::string hand_model(const std::string& path) {
  auto model = [](const std::vector<std::string>& names, const std::map<std::string, double>& w) {
    json f = json::object();
    for (const auto& n : names) f[n] = {{"weight", w.count(n) ? w.at(n) : 0.0}, {"mean", 0.0}, {"scale", 1.0}};
    return json{{"bias", 0.0}, {"features", f}, {"order", names}};
  };
  json j = {{"kind", "repoctx-locate"},
            {"file", model(locate_file_feature_names(), {{"bm25", 1}, {"frame", 3}, {"literal", 3}, {"defines", 1}})},
            {"entity", model(locate_entity_feature_names(), {{"bm25", 1}, {"frame", 3}, {"literal", 3}, {"name", 1}})},
            {"provenance", {{"hand", true}}}};
  std::ofstream(path) << j.dump();
  return path;
}

}  // namespace

TEST(LocateStrategy, FramesAndLiteralsRankTheFileAndFunctionTestsLast) {
  const Engine& e = *locate_repo().engine;
  RetrieverOptions ro;
  ro.locate_model = hand_model(locate_repo().db.str() + "/model.json");
  RetrievalQuery q;
  q.text =
      "Starting with an empty path gives a bad error\n\nTraceback (most recent call last):\n"
      "  File \"/site-packages/pkg/server.py\", line 5, in start\n"
      "  File \"/site-packages/pkg/config.py\", line 4, in load_config\n"
      "ValueError: config path must not be empty\n";
  q.top_k = 10;
  RetrievalResult r = make_retriever("locate", e, {}, ro)->run(q);
  HitRankings rk = rankings_of_hits(e.view(), r.hits, EntityRule::innermost);
  ASSERT_GE(rk.files.size(), 3u);
  EXPECT_EQ(rk.files[0], "pkg/config.py");
  EXPECT_EQ(rk.files[1], "pkg/server.py");
  EXPECT_EQ(rk.files.back(), "tests/test_config.py");  // the test quotes the message too, yet comes last
  ASSERT_FALSE(rk.entities.empty());
  EXPECT_EQ(rk.entities[0], "pkg/config.py::load_config");
  EXPECT_EQ(r.trace["evidence"]["frames"].size(), 2u);
  EXPECT_EQ(r.trace["tests"][0]["path"], "tests/test_config.py");
  // Ranked metrics as localize-eval computes them.
  std::set<std::string> gold = {"pkg/config.py"};
  EXPECT_DOUBLE_EQ(prf_at(gold, rk.files, 1).f1, 1.0);
  EXPECT_DOUBLE_EQ(prf_at(gold, rk.files, 2).p, 0.5);
}

TEST(LocateStrategy, FilesBm25RanksFilesThenEntitiesOfTheBestFiles) {
  const Engine& e = *locate_repo().engine;
  RetrievalQuery q;
  q.text = "config_value returns the wrong key from the config";
  RetrievalResult r = make_retriever("files-bm25", e)->run(q);
  HitRankings rk = rankings_of_hits(e.view(), r.hits, EntityRule::innermost);
  ASSERT_FALSE(rk.files.empty());
  EXPECT_EQ(rk.files[0], "pkg/util.py");
  ASSERT_FALSE(rk.entities.empty());
  EXPECT_EQ(rk.entities[0], "pkg/util.py::config_value");
  EXPECT_TRUE(std::all_of(r.hits.begin(), r.hits.end(), [](const Hit& h) { return h.file >= 0; }));
}

TEST(LocateStrategy, BadModelFileIsBadInput) {
  std::string p = locate_repo().db.str() + "/bad.json";
  std::ofstream(p) << "{\"kind\": \"something else\"}";
  RetrieverOptions ro;
  ro.locate_model = p;
  try {
    make_retriever("locate", *locate_repo().engine, {}, ro);
    FAIL() << "no error";
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ExitCode::bad_input);
  }
}

TEST(LocateStrategy, QualifiedNamesAndLiteralsBecomeEntityFeatures) {
  const Engine& e = *locate_repo().engine;
  LocateFeatures feats(e, "Server.start fails: \"config path must not be empty\" even with a path");
  LocateFileCandidates fc = feats.files();
  std::vector<double> logits(fc.files.size(), 0.0);
  LocateEntityCandidates ec = feats.entities(fc, logits, 10);
  const auto& names = locate_entity_feature_names();
  auto col = [&](const std::string& n) {
    return static_cast<size_t>(std::find(names.begin(), names.end(), n) - names.begin());
  };
  std::map<std::string, std::vector<double>> by_name;
  std::set<std::string> modules;
  for (size_t i = 0; i < ec.entities.size(); ++i) {
    if (ec.entities[i] < 0) {  // a module level: only the module feature and its file's rank and logit
      modules.insert(locate_entity_key(e.view(), ec.entities[i]));
      EXPECT_EQ(ec.x[i][col("module")], 1.0);
      EXPECT_EQ(ec.x[i][col("bm25")], 0.0);
      continue;
    }
    by_name[e.view().entities()[static_cast<size_t>(ec.entities[i])].qualname] = ec.x[i];
  }
  EXPECT_TRUE(modules.count("pkg/server.py::<module>"));
  EXPECT_TRUE(modules.count("pkg/config.py::<module>"));
  ASSERT_TRUE(by_name.count("Server.start"));
  EXPECT_EQ(by_name["Server.start"][col("qualname")], 1.0);
  EXPECT_EQ(by_name["Server.stop"][col("qualname")], 0.0);
  EXPECT_EQ(by_name["Server.stop"][col("parent_named")], 1.0);  // its class is named
  ASSERT_TRUE(by_name.count("load_config"));
  EXPECT_GT(by_name["load_config"][col("literal")], 0.5);  // the message is raised there
  EXPECT_EQ(by_name["Server.start"][col("literal")], 0.0);
}
