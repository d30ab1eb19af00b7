// REPOCOD's task semantics (eval/repocod.h): targets named by at most two components and told apart by
// full_function, relevant tests read from the dataset's node-id files, rows in the published schema.
#include <gtest/gtest.h>

#include <fstream>

#include "eval/repocod.h"
#include "eval/runner.h"
#include "indexed_repo.h"
#include "util/error.h"

using namespace repoctx;
using repoctx::testing::IndexedRepo;
using repoctx::testing::TempDir;

namespace {

// Same names on purpose: a function defined on both branches of an if, and `Inner.run` in two classes.
const char* kSource = R"(import sys

if sys.platform == "win32":
    def clear(x):
        return x + 1
else:
    def clear(x):
        return x + 2


class Outer:
    class Inner:
        @staticmethod
        def run():
            return "outer"


class Other:
    class Inner:
        @staticmethod
        def run():
            return "other"
)";

struct Repo {
  TempDir dir;
  std::unique_ptr<IndexedRepo> index;
  Repo() {
    dir.write("pkg/mod.py", kSource);
    index = std::make_unique<IndexedRepo>(dir.str());
  }
  const Engine& eng() const { return *index->engine; }
  std::string line_of(const TargetRef& t) const { return std::to_string(eng().view().entities()[t.entity].start_line); }
};

std::string resolve(const Repo& r, const std::string& fn, const std::string& full, std::string* how = nullptr) {
  TargetRef t = resolve_repocod_target(r.eng(), "pkg/mod.py", fn, full, how);
  return r.eng().view().entities()[t.entity].qualname + "@" + r.line_of(t);
}

}  // namespace

TEST(Repocod, FullFunctionPicksTheDefinitionTheTaskMeans) {
  Repo r;
  std::string how;
  // A name defined twice: without full_function, the engine's rule (the last definition); with it, the one
  // whose text it is, whatever its indentation in the file.
  EXPECT_EQ(resolve(r, "clear", "", &how), "clear@7");
  EXPECT_EQ(how, "qualname");
  EXPECT_EQ(resolve(r, "clear", "def clear(x):\n    return x + 1\n", &how), "clear@4");
  EXPECT_EQ(how, "full_function");
  EXPECT_EQ(resolve(r, "clear", "def clear(x):\n    return x + 2\n"), "clear@7");
  // REPOCOD's two-component names: "Inner.run" is Outer.Inner.run or Other.Inner.run; full_function decides
  // (decorators and indentation aside).
  EXPECT_EQ(resolve(r, "Inner.run", "def run():\n    return \"other\"\n", &how), "Other.Inner.run@21");
  EXPECT_EQ(how, "full_function");
  EXPECT_EQ(resolve(r, "Inner.run", "    def run():\n        return \"outer\"\n"), "Outer.Inner.run@14");
  // The full name needs nothing else.
  EXPECT_EQ(resolve(r, "Other.Inner.run", "", &how), "Other.Inner.run@21");
  EXPECT_EQ(how, "qualname");
}

TEST(Repocod, AmbiguousOrMissingTargetsSayWhy) {
  Repo r;
  try {
    resolve(r, "Inner.run", "");
    FAIL() << "two candidates and no full_function: expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    std::string w = e.what();
    EXPECT_NE(w.find("Outer.Inner.run"), std::string::npos) << w;
    EXPECT_NE(w.find("Other.Inner.run"), std::string::npos) << w;
    EXPECT_NE(w.find("full_function"), std::string::npos) << w;
  }
  try {
    resolve(r, "Inner.run", "def something_else():\n    pass\n");
    FAIL() << "full_function matching neither: expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
  }
  try {
    resolve(r, "nowhere", "");
    FAIL() << "unknown name: expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::not_found);
  }
}

TEST(Repocod, DefinitionMatchIgnoresIndentationAndPenalisesExtraLines) {
  EXPECT_DOUBLE_EQ(definition_match("def f():\n    return 1\n", "    @d\n    def f():\n        return 1\n"), 1.0);
  EXPECT_LT(definition_match("def f():\n    return 1\n", "def f():\n    x = 0\n    return 1\n"), 1.0);
  EXPECT_DOUBLE_EQ(definition_match("", "def f(): pass"), 0.0);
}

// Rows as the dataset publishes them (field names and value shapes of lt-asset/REPOCOD): repo_id a string,
// function_name of two components, relevant tests as the path of a node-id file inside REPOCOD's image.
TEST(Repocod, LoaderReadsRowsInThePublishedSchema) {
  TempDir d;
  d.write("cases/failed_tests_Continuous.label.txt",
          "tests/_core/test_scales.py::TestContinuous::test_label_formatter\n\n"
          "tests/_core/test_scales.py::TestContinuous::test_label_like_pattern\n");
  d.write("tasks.jsonl",
          R"({"repository": "seaborn", "repo_id": "0", "target_module_path": "seaborn/_core/scales.py", )"
          R"("prompt": "    def label(\n        self,\n    ) -> Continuous:\n", )"
          R"("relavent_test_path": "/usr/src/app/target_test_cases/failed_tests_Continuous.label.txt", )"
          R"("full_function": "    def label(\n        self,\n    ) -> Continuous:\n        return self\n", )"
          R"("function_name": "Continuous.label"})"
          "\n");
  TaskLoadOptions o;
  o.repos["seaborn"] = "/src/seaborn";
  o.test_cases_dir = d.str() + "/cases";
  auto tasks = load_tasks(d.str() + "/tasks.jsonl", o);
  ASSERT_EQ(tasks.size(), 1u);
  const EvalTask& t = tasks[0];
  EXPECT_EQ(t.id, "seaborn/0");
  EXPECT_EQ(t.repo, "/src/seaborn");
  EXPECT_EQ(t.file, "seaborn/_core/scales.py");
  EXPECT_EQ(t.function, "Continuous.label");
  EXPECT_NE(t.full_function.find("return self"), std::string::npos);
  std::vector<std::string> want = {"python3",
                                   "-m",
                                   "pytest",
                                   "-q",
                                   "-p",
                                   "no:cacheprovider",
                                   "--continue-on-collection-errors",
                                   "tests/_core/test_scales.py::TestContinuous::test_label_formatter",
                                   "tests/_core/test_scales.py::TestContinuous::test_label_like_pattern"};
  EXPECT_EQ(t.test_argv, want);
  // The documentation's spelling of the field, and -x only when asked.
  d.write("tasks2.jsonl",
          R"({"repository": "seaborn", "repo_id": "1", "target_module_path": "a.py", "function_name": "f", )"
          R"("relevant_test_path": "/usr/src/app/target_test_cases/failed_tests_Continuous.label.txt"})"
          "\n");
  o.early_stop = true;
  auto t2 = load_tasks(d.str() + "/tasks2.jsonl", o).at(0);
  EXPECT_EQ(t2.test_argv.at(7), "-x");
  // The node-id file missing: exit 3 naming it and what to pass.
  o.test_cases_dir.clear();
  try {
    load_tasks(d.str() + "/tasks.jsonl", o);
    FAIL() << "missing relevant-tests file: expected an error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::not_found);
    EXPECT_NE(std::string(e.what()).find("--test-cases-dir"), std::string::npos) << e.what();
  }
}
