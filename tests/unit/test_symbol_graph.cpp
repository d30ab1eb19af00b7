#include <gtest/gtest.h>

#include <set>

#include "helpers.h"
#include "index/index.h"
#include "indexed_repo.h"
#include "retrieve/engine.h"

using namespace repoctx;
using repoctx::testing::TempDir;

namespace {

class GraphTest : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_.write("app/__init__.py", "from .core import Engine\nfrom .util import *\n__all__ = ['Engine']\n");
    repo_.write("app/util.py", "def helper(x):\n    return x\n\nCONST = 3\n");
    repo_.write("app/base.py",
                "class Base:\n"
                "    def shared(self):\n        return 1\n"
                "    def overridden(self):\n        return 0\n");
    repo_.write("app/core.py",
                "import os\n"
                "import app.util\n"
                "from . import util as u\n"
                "from .base import Base\n"
                "from app import helper as h2\n"
                "\n"
                "class Engine(Base):\n"
                "    LIMIT = 10\n"
                "    def run(self, n):\n"
                "        from .util import CONST\n"
                "        self.shared()\n"
                "        x = self.step(n) + CONST + self.LIMIT\n"
                "        os.path.join('a')\n"
                "        return app.util.helper(x) + u.helper(1) + h2(2)\n"
                "    def step(self, n):\n"
                "        return n\n"
                "    def overridden(self):\n"
                "        return super().overridden() + Engine.LIMIT\n"
                "    @classmethod\n"
                "    def make(cls):\n"
                "        return cls.step(None, 1)\n"
                "    @staticmethod\n"
                "    def st(self):\n"
                "        return self.step\n"
                "\n"
                "def shadow(helper):\n"
                "    return helper(1)\n");
    IndexOptions o;
    o.db_path = tmp_.str() + "/i.db";
    o.progress = false;
    build_index(repo_.str(), o);
    eng_ = Engine::open(o.db_path);
  }

  std::set<std::string> refs(const std::string& target) {
    auto t = eng_->resolve_target(target);
    std::set<std::string> out;
    for (int e : eng_->graph().referenced_entities(t.entity)) out.insert(eng_->target_name(e));
    return out;
  }

  TempDir repo_, tmp_;
  std::unique_ptr<Engine> eng_;
};

}  // namespace

TEST_F(GraphTest, ResolvesImportsSelfFunctionImportsAndReexports) {
  EXPECT_EQ(refs("app/core.py::Engine.run"),
            (std::set<std::string>{"app/base.py::Base.shared", "app/core.py::Engine.LIMIT", "app/core.py::Engine.step",
                                   "app/util.py::CONST", "app/util.py::helper"}));
}

TEST_F(GraphTest, SuperClassmethodAndStaticmethod) {
  EXPECT_EQ(
      refs("app/core.py::Engine.overridden"),
      (std::set<std::string>{"app/base.py::Base.overridden", "app/core.py::Engine", "app/core.py::Engine.LIMIT"}));
  EXPECT_EQ(refs("app/core.py::Engine.make"), (std::set<std::string>{"app/core.py::Engine.step"}));
  // In a staticmethod `self` is an ordinary parameter: nothing is resolved through it.
  EXPECT_TRUE(refs("app/core.py::Engine.st").empty());
  // A parameter shadows the module-level name.
  EXPECT_TRUE(refs("app/core.py::shadow").empty());
}

TEST_F(GraphTest, MroAndAccessibleFiles) {
  const auto& g = eng_->graph();
  auto engine = eng_->resolve_target("app/core.py::Engine.run");
  int cls = g.enclosing_class(engine.entity);
  auto mro = g.mro(cls);
  ASSERT_EQ(mro.size(), 2u);
  EXPECT_EQ(eng_->target_name(mro[1]), "app/base.py::Base");
  std::set<std::string> files;
  for (int f : g.accessible_files(engine.file)) files.insert(eng_->view().files()[f].path);
  EXPECT_EQ(files, (std::set<std::string>{"app/__init__.py", "app/base.py", "app/core.py", "app/util.py"}));
  auto m = g.module_member(*eng_->view().file_by_module("app"), "helper");  // through `from .util import *`
  ASSERT_EQ(m.kind, Resolution::Kind::entity);
  EXPECT_EQ(eng_->target_name(m.entity), "app/util.py::helper");
}

TEST_F(GraphTest, UnknownTargetsNameTheClosestOnes) {
  try {
    eng_->resolve_target("app/core.py::Engine.rnu");
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("Engine.run"), std::string::npos) << e.what();
  }
  try {
    eng_->resolve_target("core.py::Engine.run");
    FAIL();
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("app/core.py"), std::string::npos) << e.what();
  }
}

namespace {

// accessible_files without its per-engine table: a breadth-first walk over imported_files.
std::vector<int> closure_by_walk(const SymbolGraph& g, int file, const HiddenBody* hidden) {
  std::vector<int> order{file};
  std::set<int> seen{file};
  for (size_t i = 0; i < order.size(); ++i)
    for (int f : g.imported_files(order[i], order[i] == file ? hidden : nullptr))
      if (seen.insert(f).second) order.push_back(f);
  return order;
}

}  // namespace

// accessible_files reads each file's imports from a table built once per engine; it must give the files
// (and their order) of a walk over the import statements, and still drop the imports inside a hidden body
// of the start file.
TEST(AccessibleFiles, CachedImportTableMatchesAWalkOverTheImports) {
  TempDir repo, db;
  repo.write("pkg/__init__.py", "");
  repo.write("pkg/a.py", "def lazy_user():\n    from . import lazy\n    return lazy.X\n\ndef other():\n    return 1\n");
  repo.write("pkg/lazy.py", "X = 1\n");
  IndexOptions o;
  o.db_path = db.str() + "/i.db";
  o.progress = false;
  build_index(repo.str(), o);
  auto eng = Engine::open(o.db_path);
  const auto& g = eng->graph();
  auto names = [&](const std::vector<int>& fs) {
    std::set<std::string> out;
    for (int f : fs) out.insert(eng->view().files()[f].path);
    return out;
  };
  auto user = eng->resolve_target("pkg/a.py::lazy_user");
  auto other = eng->resolve_target("pkg/a.py::other");
  HiddenBody hide_user{user.entity, user.file}, hide_other{other.entity, other.file};
  EXPECT_EQ(names(g.accessible_files(user.file)),
            (std::set<std::string>{"pkg/__init__.py", "pkg/a.py", "pkg/lazy.py"}));
  // The only imports of pkg.lazy (and of its package) are inside lazy_user's body.
  EXPECT_EQ(names(g.accessible_files(user.file, &hide_user)), (std::set<std::string>{"pkg/a.py"}));
  EXPECT_EQ(names(g.accessible_files(user.file, &hide_other)),
            (std::set<std::string>{"pkg/__init__.py", "pkg/a.py", "pkg/lazy.py"}));
  // Real code: every file of flask, as is and with each of its functions' bodies hidden.
  const Engine& fe = *repoctx::testing::flask_index().engine;
  const auto& fg = fe.graph();
  const auto& ents = fe.view().entities();
  size_t compared = 0;
  for (int f = 0; f < static_cast<int>(fe.view().files().size()); ++f) {
    EXPECT_EQ(fg.accessible_files(f), closure_by_walk(fg, f, nullptr)) << fe.view().files()[f].path;
    const FileRec& fr = fe.view().files()[f];
    for (int e = fr.first_entity; e < fr.first_entity + fr.n_entities; ++e) {
      if (!is_callable(ents[e].kind)) continue;
      HiddenBody h{e, f};
      EXPECT_EQ(fg.accessible_files(f, &h), closure_by_walk(fg, f, &h)) << fe.target_name(e);
      ++compared;
    }
  }
  EXPECT_GT(compared, 300u);
}
