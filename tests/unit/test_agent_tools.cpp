#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <regex>
#include <set>

#include "helpers.h"
#include "index/index.h"
#include "indexed_repo.h"
#include "report_repo.h"
#include "retrieve/procedural/agent_tools.h"
#include "util/error.h"
#include "util/text.h"

using namespace repoctx;
using repoctx::testing::kCore;
using repoctx::testing::kStore;
using repoctx::testing::TempDir;

namespace {

const char* kDeep =
    "def load_rows(path):\n"
    "    \"\"\"Load rows from a CSV file.\"\"\"\n"
    "    with open(path) as f:\n"
    "        return [line.split(',') for line in f]\n";

// A small repository with a sub-package, a long line, and two symlinks that lead outside it (the walker
// does not index them, so the tools cannot see them).
struct SmallRepo {
  TempDir repo, outside, db;
  std::unique_ptr<Engine> engine;
  SmallRepo() {
    repo.write("pkg/__init__.py", "");
    repo.write("pkg/core.py", kCore);
    repo.write("pkg/store.py", kStore);
    repo.write("pkg/sub/deep.py", kDeep);
    repo.write("pkg/data.py", "BLOB = \"" + std::string(300000, 'a') + "\"\n");
    outside.write("secret.py", "OUTSIDE_SECRET_TOKEN = 1\n");
    outside.write("dir/mod.py", "OUTSIDE_SECRET_TOKEN = 2\n");
    std::filesystem::create_symlink(outside.path() / "secret.py", repo.path() / "pkg" / "evil.py");
    std::filesystem::create_symlink(outside.path() / "dir", repo.path() / "pkg" / "linked");
    IndexOptions o;
    o.db_path = db.str() + "/i.db";
    o.progress = false;
    build_index(repo.str(), o);
    engine = Engine::open(o.db_path);
  }
};

SmallRepo& small() {
  static SmallRepo r;
  return r;
}

repoctx::testing::IndexedRepo& flask() {
  return repoctx::testing::flask_index();
}

bool has_flask() {
  return std::filesystem::exists("/usr/lib/python3/dist-packages/flask/app.py");
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// Every "path:line:" a grep output shows.
std::vector<std::pair<std::string, int>> grep_hits(const std::string& out) {
  std::vector<std::pair<std::string, int>> hits;
  static const std::regex line_re(R"(^([^:\n]+):(\d+): )");
  for (auto line : split_lines(out)) {
    std::smatch m;
    std::string l(line);
    if (std::regex_search(l, m, line_re)) hits.emplace_back(m[1], std::stoi(m[2]));
  }
  return hits;
}

}  // namespace

TEST(AgentTools, LsListsDirectoriesThenFiles) {
  RepoTools t(*small().engine);
  auto r = t.ls("");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.output, "pkg/ (5 files)\n");
  EXPECT_EQ(r.dirs, std::vector<std::string>{"."});
  EXPECT_EQ(t.ls(".").output, r.output);
  r = t.ls("pkg");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.output,
            "sub/ (1 file)\n"
            "__init__.py (0 lines)\n"
            "core.py (22 lines)\n"
            "data.py (1 line)\n"
            "store.py (8 lines)\n");
  EXPECT_EQ(t.ls("./pkg/").output, r.output);
  EXPECT_EQ(t.ls("pkg/core.py").output, "pkg/core.py (22 lines)\n");
  // Bounded: two entries, then how many were left out.
  RepoTools tiny(*small().engine, nullptr, ToolLimits{4000, 50, 200, 2});
  r = tiny.ls("pkg");
  EXPECT_TRUE(contains(r.output, "sub/ (1 file)\n__init__.py (0 lines)\n[3 more entries not shown")) << r.output;
  auto bad = t.ls("pkg/cor.py");
  EXPECT_FALSE(bad.ok);
  EXPECT_TRUE(contains(bad.error, "no indexed file or directory 'pkg/cor.py'")) << bad.error;
  EXPECT_TRUE(contains(bad.error, "did you mean pkg/core.py")) << bad.error;
  EXPECT_TRUE(contains(t.ls("core.py").error, "did you mean pkg/core.py")) << t.ls("core.py").error;
  EXPECT_TRUE(contains(t.ls("pkg/store").error, "did you mean pkg/store.py")) << t.ls("pkg/store").error;
}

TEST(AgentTools, StructureShowsTheTree) {
  RepoTools t(*small().engine);
  EXPECT_EQ(t.structure(), "pkg/ (5 files)\n  pkg/sub/ (1 file)\n");
  EXPECT_EQ(t.structure(1), "pkg/ (5 files)\n");
}

TEST(AgentTools, GrepFindsLinesAndNamesThem) {
  RepoTools t(*small().engine);
  auto r = t.grep(R"(def \w+\(self)", "pkg", false);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.output,
            "pkg/core.py:6:     def __init__(self, store):\n"
            "pkg/core.py:9:     def summarize(self, key):\n"
            "pkg/core.py:20:     def format(self, counts):\n"
            "pkg/store.py:3:     def rows(self):\n");
  EXPECT_EQ(r.files, (std::vector<std::string>{"pkg/core.py", "pkg/store.py"}));
  EXPECT_EQ(r.dirs, std::vector<std::string>{"pkg"});
  // A file as the path; a fixed string with regex metacharacters.
  r = t.grep("store.rows()", "pkg/store.py", true);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.output, "pkg/store.py:8:     return store.rows()\n");
  // Case-insensitive through RE2's flag.
  EXPECT_EQ(t.grep("(?i)CSV FILE", "", false).output,
            "pkg/sub/deep.py:2:     \"\"\"Load rows from a CSV file.\"\"\"\n");
  // No match is an answer, not an error.
  r = t.grep("no_such_text_anywhere", "", true);
  EXPECT_TRUE(r.ok);
  EXPECT_EQ(r.output, "no line of the repository matches the text 'no_such_text_anywhere'\n");
  EXPECT_TRUE(r.files.empty());
}

TEST(AgentTools, GrepErrorsSayWhatToDo) {
  RepoTools t(*small().engine);
  auto r = t.grep("load_rows(", "", false);
  EXPECT_FALSE(r.ok);
  EXPECT_TRUE(contains(r.error, "invalid regular expression 'load_rows(': missing )")) << r.error;
  EXPECT_TRUE(contains(r.error, "\"fixed\": true")) << r.error;
  EXPECT_TRUE(t.grep("load_rows(", "", true).ok);  // the same text, literally
  EXPECT_TRUE(contains(t.grep(R"((a)\1)", "", false).error, "invalid regular expression")) << "backreferences";
  EXPECT_TRUE(contains(t.grep("(?<=a)b", "", false).error, "invalid regular expression")) << "lookbehind";
  EXPECT_TRUE(contains(t.grep("", "", false).error, "non-empty \"pattern\""));
  EXPECT_TRUE(contains(t.grep(std::string(5000, 'x'), "", true).error, "the limit is 1000"));
  EXPECT_TRUE(contains(t.grep("x", "nowhere", false).error, "no indexed file or directory 'nowhere'"));
  // Repetitions past RE2's limits, and programs past the memory budget, are refused, not run for minutes.
  auto huge = t.grep("((a{1000}){1000}){1000}", "", false);
  EXPECT_FALSE(huge.ok);
  EXPECT_TRUE(contains(huge.error, "invalid regular expression")) << huge.error;
  auto t0 = std::chrono::steady_clock::now();
  huge = t.grep("\\pL{1000}", "", false);
  EXPECT_FALSE(huge.ok);
  EXPECT_TRUE(contains(huge.error, "is too large to run (pattern too large - compile failed)")) << huge.error;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 2.0);
}

TEST(AgentTools, CatastrophicPatternsStayFast) {
  RepoTools t(*small().engine);
  // pkg/data.py holds one 300,000-character line of 'a': exponential for a backtracking engine.
  for (const char* p : {"(a*)*b", "(a|aa)*c", "(a+)+$b", "(.*a){12}x", "^(a|a?)+b"}) {
    auto t0 = std::chrono::steady_clock::now();
    auto r = t.grep(p, "pkg/data.py", false);
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    ASSERT_TRUE(r.ok) << p << ": " << r.error;
    EXPECT_TRUE(contains(r.output, "no line of 'pkg/data.py' matches")) << p;
    EXPECT_LT(s, 2.0) << p;
  }
  // The same shapes where they do match.
  EXPECT_EQ(grep_hits(t.grep("(a*)*\"$", "pkg/data.py", false).output).size(), 1u);
  EXPECT_EQ(grep_hits(t.grep("^(\\w|\\s|=|\")+$", "pkg/data.py", false).output).size(), 1u);
}

TEST(AgentTools, OutputsAreBounded) {
  RepoTools t(*small().engine);
  // The long line is cut and says by how much.
  auto r = t.grep("BLOB", "", true);
  ASSERT_TRUE(r.ok);
  EXPECT_LT(r.output.size(), 400u);
  EXPECT_TRUE(contains(r.output, "pkg/data.py:1: BLOB = \"aaa")) << r.output;
  EXPECT_TRUE(contains(r.output, "more characters]")) << r.output;
  // At most max_matches lines, then a count of the rest.
  RepoTools few(*small().engine, nullptr, ToolLimits{4000, 2, 200, 200});
  r = few.grep("rows", "", true);
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(grep_hits(r.output).size(), 2u);
  EXPECT_TRUE(contains(r.output, "more matching lines not shown")) << r.output;
  // A character budget: every tool stays under it.
  ToolLimits small_out;
  small_out.max_output_chars = 600;
  RepoTools tight(*small().engine, nullptr, small_out);
  for (const auto& out :
       {tight.grep("r", "", false).output, tight.read_lines("pkg/core.py", 1, 22).output,
        tight.read_func("pkg/core.py::Report").output, tight.search_func("r").output, tight.ls("pkg").output})
    EXPECT_LE(out.size(), 600u) << out;
  auto lines = tight.read_lines("pkg/core.py", 1, 22);
  EXPECT_TRUE(contains(lines.output, "not shown (limit per call): read_lines pkg/core.py ")) << lines.output;
}

TEST(AgentTools, ReadLinesNumbersAndChecksItsArguments) {
  RepoTools t(*small().engine);
  auto r = t.read_lines("pkg/store.py", 6, 8);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.output,
            "pkg/store.py (lines 6-8 of 8)\n"
            "    6| def load_rows(store):\n"
            "    7|     \"\"\"Load rows from a store.\"\"\"\n"
            "    8|     return store.rows()\n");
  EXPECT_EQ(r.files, std::vector<std::string>{"pkg/store.py"});
  EXPECT_EQ(t.read_lines("pkg/store.py", 7, 100).output.substr(0, 30), "pkg/store.py (lines 7-8 of 8)\n");
  EXPECT_TRUE(contains(t.read_lines("pkg/store.py", 0, 0).output, "(lines 1-8 of 8)"));
  EXPECT_TRUE(contains(t.read_lines("pkg/store.py", 5, 2).error, "start (5) is after end (2)"));
  EXPECT_TRUE(
      contains(t.read_lines("pkg/store.py", 9, 12).error, "pkg/store.py has 8 lines; start (9) must be at most 8"));
  EXPECT_TRUE(contains(t.read_lines("pkg/store.py", -1, 3).error, "1-based"));
  EXPECT_TRUE(contains(t.read_lines("pkg", 1, 3).error, "'pkg' is a directory"));
  // A line limit per call, with where to continue.
  RepoTools few(*small().engine, nullptr, ToolLimits{4000, 50, 3, 200});
  r = few.read_lines("pkg/core.py", 1, 22);
  EXPECT_TRUE(contains(r.output, "    3| \n[lines 4-22 not shown (limit per call): read_lines pkg/core.py 4 22]"))
      << r.output;
}

TEST(AgentTools, ReadFuncResolvesNamesAndListsCandidates) {
  RepoTools t(*small().engine);
  auto r = t.read_func("pkg/store.py::load_rows");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.output,
            "pkg/store.py::load_rows (lines 6-8)\n"
            "    6| def load_rows(store):\n"
            "    7|     \"\"\"Load rows from a store.\"\"\"\n"
            "    8|     return store.rows()\n");
  ASSERT_EQ(r.functions.size(), 1u);
  EXPECT_EQ(t.function_name(r.functions[0]), "pkg/store.py::load_rows");
  EXPECT_EQ(t.read_func("Report.format").output.substr(0, 38), "pkg/core.py::Report.format (lines 20-2");
  EXPECT_EQ(t.read_func("pkg.store.load_rows").output, r.output);  // a dotted module path
  EXPECT_EQ(t.read_func("load_rows()").ok, false);
  auto amb = t.read_func("load_rows");
  EXPECT_FALSE(amb.ok);
  EXPECT_TRUE(contains(amb.error,
                       "'load_rows' names 2 definitions: pkg/store.py::load_rows, pkg/sub/deep.py::load_rows; "
                       "pass one of them as path::Qualified.name"))
      << amb.error;
  auto typo = t.read_func("Report.formt");
  EXPECT_TRUE(contains(typo.error, "no function or class named 'Report.formt'")) << typo.error;
  EXPECT_TRUE(contains(typo.error, "closest: pkg/core.py::Report.format")) << typo.error;
  auto in_file = t.read_func("pkg/core.py::Report.summarise");
  EXPECT_TRUE(
      contains(in_file.error, "no function or class 'Report.summarise' in pkg/core.py (closest: Report.summarize"))
      << in_file.error;
  EXPECT_TRUE(contains(t.read_func("pkg/nothere.py::f").error, "no indexed file or directory 'pkg/nothere.py'"));
  EXPECT_TRUE(contains(t.read_func("").error, "path/to/file.py::Qualified.name"));
}

TEST(AgentTools, SearchFuncRanksExactNamesFirst) {
  RepoTools t(*small().engine);
  auto r = t.search_func("REPORT");
  ASSERT_TRUE(r.ok);
  EXPECT_EQ(r.output.substr(0, r.output.find('\n')), "pkg/core.py::Report  class Report:");
  EXPECT_TRUE(contains(r.output, "pkg/core.py::Report.summarize  def summarize(self, key):")) << r.output;
  EXPECT_EQ(r.functions.size(), 5u);  // the class, __init__, summarize, its nested helper, format
  r = t.search_func("load_rows");
  EXPECT_EQ(r.output,
            "pkg/store.py::load_rows  def load_rows(store):\n"
            "pkg/sub/deep.py::load_rows  def load_rows(path):\n");
  // Several words must all occur in the qualname.
  EXPECT_EQ(t.search_func("store rows").output, "pkg/store.py::Store.rows  def rows(self):\n");
  EXPECT_TRUE(contains(t.search_func("def load_rows()").output, "pkg/store.py::load_rows"));
  auto none = t.search_func("summarise");
  EXPECT_TRUE(none.ok);
  EXPECT_TRUE(contains(none.output,
                       "no function or class name contains 'summarise' (closest names: pkg/core.py::Report.summarize"))
      << none.output;
  EXPECT_FALSE(t.search_func("  ").ok);
}

TEST(AgentTools, ProposeResolvesFunctionsOnly) {
  RepoTools t(*small().engine);
  std::string err;
  auto e = t.resolve_function("pkg/sub/deep.py::load_rows", &err);
  ASSERT_TRUE(e) << err;
  EXPECT_EQ(t.function_name(*e), "pkg/sub/deep.py::load_rows");
  EXPECT_FALSE(t.resolve_function("pkg/core.py::Report", &err));
  EXPECT_TRUE(contains(err, "is a class; propose one of its methods")) << err;
  EXPECT_FALSE(t.resolve_function("load_rows", &err));
  EXPECT_TRUE(contains(err, "pass one of them")) << err;
  ToolCall c;
  c.tool = "propose_func";
  c.name = "Store.rows";
  auto r = t.call(c);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.output, "pkg/store.py::Store.rows");
  EXPECT_EQ(r.files, std::vector<std::string>{"pkg/store.py"});
  ASSERT_EQ(r.functions.size(), 1u);
}

TEST(AgentTools, CallDispatchesAndParsesAgentJson) {
  RepoTools t(*small().engine);
  auto c = tool_call_from_json(nlohmann::json::parse(
      R"({"thought": "look at the store", "tool": "read_lines", "path": "pkg/store.py", "start": "6", "end": 8})"));
  EXPECT_EQ(c.tool, "read_lines");
  EXPECT_EQ(c.start, 6);
  EXPECT_EQ(c.end, 8);
  EXPECT_EQ(t.call(c).output, t.read_lines("pkg/store.py", 6, 8).output);
  c = tool_call_from_json(
      nlohmann::json::parse(R"j({"tool": "execute_bash", "args": {"pattern": "rows()", "fixed": "true"}})j"));
  EXPECT_TRUE(c.fixed);
  auto r = t.call(c);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.output, "pkg/store.py:8:     return store.rows()\n");
  c = tool_call_from_json(nlohmann::json::parse(R"({"tool": "search_func", "name": "format"})"));
  EXPECT_TRUE(contains(t.call(c).output, "pkg/core.py::Report.format"));
  c = tool_call_from_json(nlohmann::json::parse(R"({"tool": "ls", "path": null})"));
  EXPECT_EQ(t.call(c).output, "pkg/ (5 files)\n");
  c.tool = "rm";
  EXPECT_TRUE(contains(t.call(c).error,
                       "unknown tool 'rm'; the tools are ls, grep, read_func, read_lines, search_func, propose_func"));
  EXPECT_THROW(tool_call_from_json(nlohmann::json::parse(R"({"path": "x"})")), Error);
  EXPECT_THROW(tool_call_from_json(nlohmann::json::parse(R"({"tool": "read_lines", "start": "abc"})")), Error);
  EXPECT_THROW(tool_call_from_json(nlohmann::json::parse(R"({"tool": "grep", "fixed": 3})")), Error);
  // A float line number beyond int (found by the agent_tools fuzzer) is a bad argument, not undefined behaviour.
  EXPECT_THROW(tool_call_from_json(nlohmann::json::parse(R"({"tool": "read_lines", "start": 1.3e100})")), Error);
  EXPECT_THROW(tool_call_from_json(nlohmann::json::parse(R"({"tool": "read_lines", "end": -5e20})")), Error);
  EXPECT_EQ(tool_call_from_json(nlohmann::json::parse(R"({"tool": "read_lines", "start": 12.0})")).start, 12);
  EXPECT_THROW(tool_call_from_json(nlohmann::json::parse(R"(["ls"])")), Error);
}

TEST(AgentTools, NothingOutsideTheRepositoryIsReachable) {
  auto& s = small();
  RepoTools t(*s.engine);
  for (const std::string p : {"../", "..", "../x", "pkg/../../etc/passwd", "pkg/../..", "./../../"}) {
    auto r = t.ls(p);
    EXPECT_FALSE(r.ok) << p;
    EXPECT_TRUE(contains(r.error, "leaves the repository root")) << p << ": " << r.error;
    EXPECT_FALSE(t.read_lines(p, 1, 5).ok) << p;
    EXPECT_FALSE(t.grep("root", p, true).ok) << p;
  }
  for (const std::string p : {"/etc/passwd", "/etc", "/", "/tmp", "~/.bashrc", "~"}) {
    auto r = t.read_lines(p, 1, 5);
    EXPECT_FALSE(r.ok) << p;
    EXPECT_TRUE(contains(r.error, "outside the repository")) << p << ": " << r.error;
    EXPECT_FALSE(t.ls(p).ok) << p;
    EXPECT_FALSE(t.grep("root", p, true).ok) << p;
    EXPECT_FALSE(t.read_func(p + "::main").ok) << p;
  }
  EXPECT_FALSE(t.read_lines(std::string("pkg/core.py\0/etc/passwd", 24), 1, 2).ok);
  // Lexically inside: accepted. An absolute path under the root is the same file.
  EXPECT_TRUE(t.read_lines("pkg/sub/../core.py", 1, 2).ok);
  EXPECT_TRUE(t.read_lines("pkg//./core.py", 1, 2).ok);
  auto abs = t.read_lines(s.engine->view().root() + "/pkg/core.py", 1, 2);
  ASSERT_TRUE(abs.ok) << abs.error;
  EXPECT_EQ(abs.output, t.read_lines("pkg/core.py", 1, 2).output);
  // A sibling directory whose name starts like the root is not under it.
  EXPECT_FALSE(t.ls(s.engine->view().root() + "-other/x").ok);
  // Symlinks leading out of the repository were never indexed: the tools cannot see them or their text.
  EXPECT_FALSE(t.read_lines("pkg/evil.py", 1, 1).ok);
  EXPECT_FALSE(t.ls("pkg/linked").ok);
  EXPECT_FALSE(contains(t.ls("pkg").output, "evil"));
  EXPECT_FALSE(contains(t.ls("pkg").output, "linked"));
  EXPECT_TRUE(contains(t.grep("OUTSIDE_SECRET_TOKEN", "", true).output, "no line of the repository matches"));
  EXPECT_FALSE(t.read_func("OUTSIDE_SECRET_TOKEN").ok);
  EXPECT_TRUE(contains(t.search_func("SECRET").output, "no function or class"));
}

TEST(AgentTools, TheTargetBodyIsHidden) {
  auto& s = small();
  const Engine& e = *s.engine;
  auto target = e.resolve_target("pkg/core.py::Report.summarize");
  auto ctx = e.make_context(target);
  RepoTools open(e), hidden(e, &ctx);
  // Without hiding the body is there (the tokens below are unique to it) ...
  EXPECT_EQ(grep_hits(open.grep("zebra_unique_helper", "", true).output).size(), 2u);
  EXPECT_TRUE(open.read_func("zebra_unique_helper").ok);
  EXPECT_TRUE(contains(open.read_func("Report.summarize").output, "load_rows(self.store)"));
  // ... with it, no tool shows any of it.
  std::vector<std::string> outputs;
  for (const char* tok : {"zebra_unique_helper", "load_rows(self.store)", "counts.get(key, 0)", "json.dumps"}) {
    auto r = hidden.grep(tok, "", true);
    EXPECT_TRUE(contains(r.output, "no line of the repository matches")) << tok << ": " << r.output;
  }
  outputs.push_back(hidden.grep("r", "", false).output);
  auto rf = hidden.read_func("Report.summarize");
  ASSERT_TRUE(rf.ok) << rf.error;
  // The signature and docstring stay visible, and the agent is told where the hidden body is.
  EXPECT_EQ(rf.output,
            "pkg/core.py::Report.summarize (lines 9-18)\n"
            "    9|     def summarize(self, key):\n"
            "   10|         \"\"\"Summarize rows by key into a json string.\"\"\"\n"
            "[lines 11-18: the body of the function being implemented, hidden]\n");
  // read_lines shows the body as the masked file reads.
  EXPECT_EQ(hidden.read_lines("pkg/core.py", 9, 18).output,
            "pkg/core.py (lines 9-18 of 22)\n"
            "    9|     def summarize(self, key):\n"
            "   10|         \"\"\"Summarize rows by key into a json string.\"\"\"\n"
            "   11|         #\n"
            "   12|         #\n"
            "   13|             #\n"
            "   14| \n"
            "   15|         #\n"
            "   16|         #\n"
            "   17|             #\n"
            "   18|         ...\n");
  outputs.push_back(rf.output);
  outputs.push_back(hidden.read_func("pkg/core.py::Report").output);
  outputs.push_back(hidden.read_lines("pkg/core.py", 1, 22).output);
  outputs.push_back(hidden.search_func("summarize").output);
  outputs.push_back(hidden.search_func("helper").output);
  EXPECT_TRUE(contains(hidden.search_func("helper").output, "no function or class name contains"))
      << hidden.search_func("helper").output;
  outputs.push_back(hidden.ls("pkg").output);
  outputs.push_back(hidden.structure());
  for (const auto& o : outputs) {
    EXPECT_FALSE(contains(o, "zebra")) << o;
    EXPECT_FALSE(contains(o, "load_rows(self")) << o;
    EXPECT_FALSE(contains(o, "counts.get")) << o;
  }
  // Entities defined inside the hidden body do not exist, not even as suggestions.
  auto nested = hidden.read_func("zebra_unique_helper");
  EXPECT_FALSE(nested.ok);
  EXPECT_TRUE(contains(nested.error, "no function or class named 'zebra_unique_helper'")) << nested.error;
  EXPECT_FALSE(contains(nested.error, "<locals>")) << nested.error;
  EXPECT_FALSE(hidden.read_func("Report.summarize.<locals>.zebra_unique_helper").ok);
  std::string err;
  EXPECT_FALSE(hidden.resolve_function("pkg/core.py::Report.summarize.<locals>.zebra_unique_helper", &err));
  // The target itself cannot be proposed.
  EXPECT_FALSE(hidden.resolve_function("pkg/core.py::Report.summarize", &err));
  EXPECT_TRUE(contains(err, "is the target function itself")) << err;
  // Other functions of the target's file read normally.
  EXPECT_TRUE(contains(hidden.read_func("Report.format").output, "return sorted(counts.items())"));
}

TEST(AgentToolsFlask, ToolsOnARealRepository) {
  if (!has_flask()) GTEST_FAIL() << "python3-flask is not installed (scripts/setup.sh installs it)";
  const Engine& e = *flask().engine;
  RepoTools t(e);
  auto r = t.ls("");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_EQ(r.output.substr(0, r.output.find('\n')), "json/ (3 files)");
  EXPECT_TRUE(contains(r.output, "\napp.py (")) << r.output;
  EXPECT_TRUE(contains(r.output, "\nhelpers.py (")) << r.output;
  EXPECT_TRUE(contains(t.ls("json").output, "tag.py (")) << t.ls("json").output;
  EXPECT_TRUE(starts_with(t.structure(), "json/ (3 files)\n__init__.py\n__main__.py\napp.py\n")) << t.structure();

  r = t.grep(R"(^class \w+\(Scaffold\))", "", false);
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_TRUE(contains(r.output, "app.py:")) << r.output;
  EXPECT_TRUE(contains(r.output, ": class Flask(Scaffold):")) << r.output;
  EXPECT_TRUE(contains(r.output, "blueprints.py:")) << r.output;

  r = t.search_func("make_response");
  ASSERT_TRUE(r.ok);
  EXPECT_TRUE(contains(r.output,
                       "app.py::Flask.make_response  def make_response(self, rv: ft.ResponseReturnValue) -> Response:"))
      << r.output;
  EXPECT_TRUE(contains(r.output, "helpers.py::make_response  def make_response(*args: t.Any) -> \"Response\":"))
      << r.output;
  auto amb = t.read_func("make_response");
  EXPECT_FALSE(amb.ok);
  EXPECT_TRUE(contains(amb.error, "app.py::Flask.make_response")) << amb.error;
  EXPECT_TRUE(contains(amb.error, "helpers.py::make_response")) << amb.error;

  // A long function is cut at the output limit, with where to continue.
  r = t.read_func("Flask.make_response");
  ASSERT_TRUE(r.ok) << r.error;
  EXPECT_LE(r.output.size(), ToolLimits{}.max_output_chars);
  EXPECT_TRUE(contains(r.output, "def make_response(self, rv: ft.ResponseReturnValue) -> Response:")) << r.output;
  EXPECT_TRUE(contains(r.output, "not shown (limit per call): read_lines app.py ")) << r.output;

  // Bounded on a common word over the whole repository.
  r = t.grep("self", "", true);
  EXPECT_EQ(grep_hits(r.output).size(), 50u);
  EXPECT_LE(r.output.size(), ToolLimits{}.max_output_chars);
  EXPECT_TRUE(contains(r.output, "more matching lines not shown")) << r.output;

  // Catastrophic patterns over the whole real repository stay fast.
  auto t0 = std::chrono::steady_clock::now();
  for (const char* p : {"(a*)*b", "(x+x+)+y", "(\\w+\\s?)+$!"}) EXPECT_TRUE(t.grep(p, "", false).ok) << p;
  EXPECT_LT(std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count(), 5.0);

  // Confinement on the real index too.
  EXPECT_FALSE(t.read_lines("../../../../etc/passwd", 1, 3).ok);
  EXPECT_FALSE(t.grep("root", "/etc", true).ok);
  EXPECT_FALSE(t.ls("../werkzeug").ok);
}

TEST(AgentToolsFlask, TheTargetBodyIsHiddenInARealRepository) {
  if (!has_flask()) GTEST_FAIL() << "python3-flask is not installed (scripts/setup.sh installs it)";
  const Engine& e = *flask().engine;
  auto target = e.resolve_target("app.py::Flask.make_response");
  auto ctx = e.make_context(target);
  const EntityRec& te = e.view().entities()[target.entity];
  ASSERT_GT(te.body_start_line, 0);
  ToolLimits big;
  big.max_output_chars = 1 << 20;
  big.max_lines = 100000;
  big.max_matches = 100000;
  RepoTools open(e, nullptr, big), hidden(e, &ctx, big);
  auto in_body = [&](const std::pair<std::string, int>& h) {
    return h.first == "app.py" && h.second >= te.body_start_line && h.second <= te.body_end_line;
  };

  // "len_rv" occurs only in the body: visible without hiding, gone with it.
  auto r = open.grep("len_rv", "", true);
  auto hits = grep_hits(r.output);
  ASSERT_FALSE(hits.empty());
  for (const auto& h : hits) EXPECT_TRUE(in_body(h)) << h.first << ":" << h.second;
  EXPECT_TRUE(contains(hidden.grep("len_rv", "", true).output, "no line of the repository matches"));
  EXPECT_TRUE(contains(hidden.grep("did not return a valid", "", true).output, "no line of the repository matches"));

  // Every identifier of the real body: no hidden-tool grep shows a body line.
  std::string content = e.view().content(target.file);
  auto starts = line_starts(content);
  std::string body(line_range(content, starts, te.body_start_line, te.body_end_line));
  std::set<std::string> idents;
  static const std::regex ident(R"([A-Za-z_][A-Za-z0-9_]{3,})");
  for (std::sregex_iterator it(body.begin(), body.end(), ident), end; it != end; ++it) idents.insert(it->str());
  ASSERT_GT(idents.size(), 20u);
  for (const auto& id : idents)
    for (const auto& h : grep_hits(hidden.grep(id, "app.py", true).output)) EXPECT_FALSE(in_body(h)) << id;

  // read_func and read_lines show the signature and docstring, and only the masked body.
  auto rf = hidden.read_func("app.py::Flask.make_response");
  ASSERT_TRUE(rf.ok) << rf.error;
  EXPECT_TRUE(contains(rf.output, "Convert the return value from a view function")) << rf.output;
  EXPECT_TRUE(contains(rf.output, "the body of the function being implemented, hidden]")) << rf.output;
  EXPECT_FALSE(contains(rf.output, "len_rv"));
  EXPECT_FALSE(contains(rf.output, "isinstance(rv, tuple)"));
  EXPECT_TRUE(contains(open.read_func("app.py::Flask.make_response").output, "len_rv"));
  auto rl = hidden.read_lines("app.py", te.body_start_line, te.body_end_line);
  ASSERT_TRUE(rl.ok) << rl.error;
  int body_lines = 0;
  for (auto line : split_lines(rl.output)) {
    size_t bar = line.find("| ");
    if (bar == std::string_view::npos || line.substr(0, bar).find_first_not_of(" 0123456789") != std::string_view::npos)
      continue;
    auto text = trim(line.substr(bar + 2));
    EXPECT_TRUE(text.empty() || text == "#" || text == "...") << line;
    ++body_lines;
  }
  EXPECT_EQ(body_lines, te.body_end_line - te.body_start_line + 1);
  // The class around the target shows the same masked lines.
  auto cls = hidden.read_func("app.py::Flask");
  EXPECT_FALSE(contains(cls.output, "len_rv"));
  // Proposing the target is refused; proposing another function works.
  std::string err;
  EXPECT_FALSE(hidden.resolve_function("app.py::Flask.make_response", &err));
  EXPECT_TRUE(hidden.resolve_function("helpers.py::make_response", &err)) << err;
}

// Issue 21, item 6: grep matches each line alone, whatever the pattern says about lines; the whole file is
// searched once (a pattern like [\s\S]*\n used to restart a whole-file search at every candidate line:
// 73 s over sympy).
TEST(AgentTools, GrepMatchesEachLineAloneWhateverThePattern) {
  RepoTools t(*small().engine);
  auto hits = [&](const std::string& p, const std::string& path = "pkg") {
    auto r = t.grep(p, path, false);
    EXPECT_TRUE(r.ok) << p << ": " << r.error;
    return grep_hits(r.output);
  };
  auto starts = hits("^    def ");
  ASSERT_EQ(starts.size(), 4u);
  EXPECT_EQ(hits("\\A    def "), starts) << "\\A is the start of a line";
  EXPECT_EQ(hits("(?-m)^    def "), starts) << "(?-m) cannot make ^ the start of the file";
  EXPECT_EQ(hits("(?s-m:^)    def "), starts);
  EXPECT_EQ(hits("(?i-m)^    DEF "), starts);
  auto ends = hits("\\(self\\):$");
  ASSERT_EQ(ends.size(), 1u);
  EXPECT_EQ(hits("\\(self\\):\\z"), ends) << "\\z is the end of a line";
  EXPECT_TRUE(contains(t.grep("[\\A]", "pkg", false).error, "invalid escape")) << "inside a class, \\A is RE2's";
  // A match never spans lines.
  for (const char* p : {"[\\s\\S]*\\n", "rows\\nclass", "(?s)rows.*Store", "store\\s+def"})
    EXPECT_TRUE(hits(p).empty()) << p;
  // An empty match marks its line: every line of the file, blank ones included, once.
  EXPECT_EQ(hits("[\\s\\S]*", "pkg/store.py").size(), 8u);
  EXPECT_EQ(hits("\\Q(self)\\E", "pkg/store.py").size(), 1u) << "\\Q...\\E stays literal";
}

TEST(AgentTools, HugeArgumentsGetShortAnswers) {
  RepoTools t(*small().engine);
  std::string huge(16000, 'q');
  ToolCall propose{"propose_func", "", "", "pkg/core.py::" + huge, 0, 0, false};
  for (const ToolResult& r : {t.read_func(huge), t.search_func(huge), t.call(propose)}) {
    EXPECT_FALSE(r.ok);
    EXPECT_LT(r.error.size(), 300u) << r.error.substr(0, 300);
    EXPECT_TRUE(contains(r.error, "characters long; the limit is 500")) << r.error.substr(0, 300);
  }
  // Under the limit, arguments are quoted briefly in every message, and suggestions still come.
  std::string longish(450, 'z');
  for (const ToolResult& r :
       {t.read_func(longish), t.read_func("pkg/core.py::" + longish), t.ls(huge), t.read_lines(huge, 1, 2),
        t.grep(std::string(900, 'x'), "", true), t.grep(std::string(900, '('), "", false)}) {
    std::string text = r.text();
    EXPECT_LT(text.size(), 1000u) << text.substr(0, 300);
    EXPECT_TRUE(contains(text, "characters)")) << text.substr(0, 300);
  }
  auto near = t.read_func("Report.sumarize");
  EXPECT_TRUE(contains(near.error, "pkg/core.py::Report.summarize")) << near.error;
}
