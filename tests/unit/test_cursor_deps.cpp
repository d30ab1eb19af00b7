// cursor-deps on a small generated package indexed by the real indexer: an imported function mentioned just
// above the cursor ranks first, text after the cursor never lifts a candidate, and module attributes
// (`alias.name`) and the methods of the enclosing class's bases (`self.name`) are candidates.
#include <gtest/gtest.h>

#include <cmath>

#include "helpers.h"
#include "index/index.h"
#include "retrieve/aligncoder/codebase.h"
#include "retrieve/cursor_deps.h"
#include "retrieve/retriever.h"

using namespace repoctx;
using repoctx::testing::TempDir;

namespace {

const char* kUtil =
    "def load(path):\n"
    "    return open(path).read()\n"
    "\n"
    "\n"
    "def save(path, text):\n"
    "    open(path, 'w').write(text)\n"
    "\n"
    "\n"
    "def parse(text):\n"
    "    return text.split()\n";
const char* kBase =
    "class Base:\n"
    "    def prepare(self, x):\n"
    "        return x\n"
    "\n"
    "    def finish(self, x):\n"
    "        return x\n";
// Line numbers matter: the cursors below sit at the indentation of a body line.
const char* kApp =
    "from pkg.util import load, save, parse\n"  // 1
    "from pkg import helpers as hp\n"           // 2
    "from pkg.base import Base\n"               // 3
    "\n"                                        // 4
    "\n"                                        // 5
    "def run(path):\n"                          // 6
    "    text = load(path)\n"                   // 7
    "    words = parse(text)\n"                 // 8
    "    n = len(words)\n"                      // 9
    "    out = str(n)\n"                        // 10
    "    save(path, out)\n"                     // 11
    "    save(path, out)\n"                     // 12
    "    save(path, out)\n"                     // 13
    "    return out\n"                          // 14
    "\n"                                        // 15
    "\n"                                        // 16
    "def other(path):\n"                        // 17
    "    value = hp.clean(path)\n"              // 18
    "    return value\n"                        // 19
    "\n"                                        // 20
    "\n"                                        // 21
    "class Job(Base):\n"                        // 22
    "    def go(self, x):\n"                    // 23
    "        y = x + 1\n"                       // 24
    "        return y\n";                       // 25
const char* kHelpers =
    "def clean(text):\n"
    "    return text.strip()\n"
    "\n"
    "\n"
    "def shout(text):\n"
    "    return text.upper()\n";

struct Fixture {
  TempDir repo, tmp;
  std::unique_ptr<Engine> e;
  int app = -1;
  Fixture() {
    repo.write("pkg/__init__.py", "");
    repo.write("pkg/util.py", kUtil);
    repo.write("pkg/base.py", kBase);
    repo.write("pkg/helpers.py", kHelpers);
    repo.write("pkg/app.py", kApp);
    IndexOptions o;
    o.db_path = tmp.str() + "/i.db";
    o.progress = false;
    build_index(repo.str(), o);
    e = Engine::open(o.db_path);
    app = *e->view().file_by_path("pkg/app.py");
  }
  std::vector<Hit> retrieve(int line, int column, int k = 10) {
    RetrievalQuery q;
    q.cursor = make_cursor_context(*e, Cursor{app, line, column});
    q.top_k = k;
    return make_retriever("cursor-deps", *e)->retrieve(q);
  }
  std::string name_of(const Hit& h) const {
    if (h.type != Hit::Type::entity || h.entity < 0) return "";
    const auto& en = e->view().entities()[h.entity];
    return e->view().files()[en.file].path + "::" + en.qualname;
  }
  int rank_of(const std::vector<Hit>& hits, const std::string& name) const {
    for (size_t i = 0; i < hits.size(); ++i)
      if (name_of(hits[i]) == name) return static_cast<int>(i) + 1;
    return 0;
  }
};

TEST(CursorDeps, ImportedFunctionMentionedJustAboveRanksFirst) {
  Fixture f;
  auto hits = f.retrieve(9, 4);  // before "n = len(words)": parse was mentioned on the line above
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(f.name_of(hits[0]), "pkg/util.py::parse");
  EXPECT_EQ(hits[0].label, "definition");
  EXPECT_GT(hits[0].features.at("inv_gap"), 0.0);
  EXPECT_EQ(hits[0].type, Hit::Type::entity);
  // Never fewer hits than BM25 gives: the definitions, then the snippets.
  EXPECT_EQ(hits.size(), 10u);
}

TEST(CursorDeps, TextAfterTheCursorNeverLiftsACandidate) {
  Fixture f;
  // Before line 11: save is mentioned only from the cursor on (three times); load was mentioned on line 7.
  auto hits = f.retrieve(11, 4);
  int load = f.rank_of(hits, "pkg/util.py::load"), save = f.rank_of(hits, "pkg/util.py::save");
  ASSERT_GT(load, 0);
  ASSERT_GT(save, 0);
  // The score is a function of the features alone: none of save's may see the calls after the cursor.
  const Hit& s = hits[static_cast<size_t>(save - 1)];
  // Its one mention before the cursor is the import statement.
  EXPECT_DOUBLE_EQ(s.features.at("prefix_mentions"), std::log1p(1.0));
  EXPECT_EQ(s.features.at("fn_mentions"), 0.0);
  EXPECT_EQ(s.features.at("uses"), 0.0);
  EXPECT_EQ(s.features.at("fn_uses"), 0.0);
  EXPECT_LT(s.features.at("inv_gap"), hits[static_cast<size_t>(load - 1)].features.at("inv_gap"));
}

TEST(CursorDeps, ModuleAttributeAndSelfBaseCandidates) {
  Fixture f;
  auto hits = f.retrieve(19, 4, 50);  // after "value = hp.clean(path)"
  int clean = f.rank_of(hits, "pkg/helpers.py::clean");
  ASSERT_GT(clean, 0);
  const Hit& c = hits[static_cast<size_t>(clean - 1)];
  EXPECT_EQ(c.description, "hp.clean");
  EXPECT_EQ(c.features.at("via_module"), 1.0);
  EXPECT_GT(c.features.at("fn_mentions"), 0.0);
  EXPECT_GT(f.rank_of(hits, "pkg/helpers.py::shout"), 0);
  auto in_method = f.retrieve(25, 8, 50);  // inside Job.go: Base's methods are reachable as self.name
  int prepare = f.rank_of(in_method, "pkg/base.py::Base.prepare");
  ASSERT_GT(prepare, 0);
  EXPECT_EQ(in_method[static_cast<size_t>(prepare - 1)].features.at("via_self"), 1.0);
  // Outside the class nothing is reachable through self.
  for (const auto& h : f.retrieve(14, 4, 50)) {
    auto it = h.features.find("via_self");
    EXPECT_TRUE(it == h.features.end() || it->second == 0.0) << f.name_of(h);
  }
}

}  // namespace
