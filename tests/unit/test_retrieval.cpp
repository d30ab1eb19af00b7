#include <gtest/gtest.h>

#include "helpers.h"
#include "index/index.h"
#include "indexed_repo.h"
#include "report_repo.h"
#include "retrieve/retriever.h"
#include "retrieve/structural.h"
#include "util/error.h"

using namespace repoctx;
using repoctx::testing::kCore;
using repoctx::testing::kStore;
using repoctx::testing::TempDir;

namespace {

// The hidden form of core.py for Report.summarize (tests/integration/hidden_body.py does the same
// transformation independently with Python's ast on real code).
const char* kCoreHidden =
    "import json\n"
    "from .store import Store, load_rows\n"
    "\n"
    "class Report:\n"
    "    \"\"\"A report over rows.\"\"\"\n"
    "    def __init__(self, store):\n"
    "        self.store = store\n"
    "\n"
    "    def summarize(self, key):\n"
    "        \"\"\"Summarize rows by key into a json string.\"\"\"\n"
    "        #\n"
    "        #\n"
    "            #\n"
    "\n"
    "        #\n"
    "        #\n"
    "            #\n"
    "        ...\n"
    "\n"
    "    def format(self, counts):\n"
    "        \"\"\"Format counts as rows.\"\"\"\n"
    "        return sorted(counts.items())\n";

struct Row {
  std::string file, name;
  int start, end;
  double score;
  bool operator==(const Row& o) const {
    return file == o.file && name == o.name && start == o.start && end == o.end && score == o.score;
  }
};

std::vector<Row> run(const Engine& e, const std::string& strategy, const std::string& corpus,
                     const std::string& target) {
  RetrieverOptions ro;
  ro.corpus = corpus;
  auto r = make_retriever(strategy, e, {}, ro);
  RetrievalQuery q;
  q.target = e.resolve_target(target);
  q.top_k = 50;
  std::vector<Row> rows;
  for (const auto& h : r->retrieve(q)) {
    std::string name = h.entity >= 0 ? e.view().entities()[h.entity].qualname : h.label;
    rows.push_back({h.file >= 0 ? e.view().files()[h.file].path : "", name, h.start_line, h.end_line, h.score});
  }
  return rows;
}

std::unique_ptr<Engine> open(const TempDir& repo, const TempDir& tmp) {
  IndexOptions o;
  o.db_path = tmp.str() + "/i.db";
  o.progress = false;
  build_index(repo.str(), o);
  return Engine::open(o.db_path);
}

}  // namespace

TEST(Retrieval, HiddenBodyAnswersEqualThoseOnACopyWithoutTheBody) {
  TempDir orig, copy, t1, t2;
  for (auto* d : {&orig, &copy}) {
    d->write("pkg/__init__.py", "");
    d->write("pkg/store.py", kStore);
  }
  orig.write("pkg/core.py", kCore);
  copy.write("pkg/core.py", kCoreHidden);
  auto a = open(orig, t1);
  auto b = open(copy, t2);
  // The masking the engine applies is exactly the file above.
  auto target = a->resolve_target("pkg/core.py::Report.summarize");
  EXPECT_EQ(a->make_context(target).masked_content, kCoreHidden);
  const std::string t = "pkg/core.py::Report.summarize";
  for (auto [strategy, corpus] : std::vector<std::pair<std::string, std::string>>{{"sparse", "entities"},
                                                                                  {"sparse", "snippets"},
                                                                                  {"same-file", ""},
                                                                                  {"imports", ""},
                                                                                  {"aligncoder-snippets", ""},
                                                                                  {"structural", ""}}) {
    auto ra = run(*a, strategy, corpus, t);
    auto rb = run(*b, strategy, corpus, t);
    EXPECT_FALSE(ra.empty()) << strategy;
    EXPECT_EQ(ra.size(), rb.size()) << strategy << " " << corpus;
    for (size_t i = 0; i < std::min(ra.size(), rb.size()); ++i) {
      EXPECT_TRUE(ra[i] == rb[i]) << strategy << " " << corpus << " rank " << i << ": " << ra[i].name << " "
                                  << ra[i].score << " vs " << rb[i].name << " " << rb[i].score;
    }
    for (const auto& r : ra) {
      EXPECT_NE(r.name, "Report.summarize") << strategy;
      EXPECT_EQ(r.name.find("zebra"), std::string::npos) << strategy;
    }
  }
}

TEST(Retrieval, SparseFindsByQueryAndUnknownStrategyIsAUsageError) {
  TempDir repo, tmp;
  repo.write("pkg/__init__.py", "");
  repo.write("pkg/store.py", kStore);
  repo.write("pkg/core.py", kCore);
  auto e = open(repo, tmp);
  auto r = make_retriever("sparse", *e);
  RetrievalQuery q;
  q.text = "load rows store";
  q.top_k = 3;
  auto hits = r->retrieve(q);
  ASSERT_FALSE(hits.empty());
  EXPECT_EQ(e->view().entities()[hits[0].entity].qualname, "load_rows");
  try {
    make_retriever("nope", *e);
    FAIL();
  } catch (const Error& err) {
    EXPECT_EQ(err.code(), ExitCode::usage);
    EXPECT_NE(std::string(err.what()).find("sparse"), std::string::npos);
  }
}

TEST(Retrieval, DependencySnippetsSummariseImportedClassesAndFunctions) {
  TempDir repo, tmp;
  repo.write("pkg/__init__.py", "");
  repo.write("pkg/store.py", kStore);
  repo.write("pkg/core.py", kCore);
  auto e = open(repo, tmp);
  RetrieverOptions ro;
  auto r = make_retriever("aligncoder-snippets", *e, {}, ro);
  RetrievalQuery q;
  q.target = e->resolve_target("pkg/core.py::Report.format");
  q.top_k = 100;
  bool cls = false, fn = false;
  for (const auto& h : r->retrieve(q)) {
    if (h.label != "dependency") continue;
    cls |= h.text.find("class Store:\n    def rows(self):") != std::string::npos;
    fn |= h.text == "def load_rows(store):\n";
  }
  EXPECT_TRUE(cls);
  EXPECT_TRUE(fn);
}

#include "retrieve/function_selection.h"

TEST(FunctionSelection, RanksFilesByTargetsThenFunctionsAndExcludesTargets) {
  TempDir repo, tmp;
  repo.write("a.py", "def a1(): pass\ndef a2(): pass\n");
  repo.write("b.py", "def b1(): pass\ndef b2(): pass\ndef b3(): pass\n");
  repo.write("c.py", "def c1(): pass\nclass K:\n    def m(self): pass\n");
  auto e = open(repo, tmp);
  std::vector<int> targets = {e->resolve_target("a.py::a1").entity, e->resolve_target("c.py::K.m").entity,
                              e->resolve_target("c.py::c1").entity};
  auto sel = select_functions(*e, targets, 2);
  ASSERT_EQ(sel.ranked_files.size(), 3u);
  EXPECT_EQ(e->view().files()[sel.ranked_files[0].file].path, "c.py");  // 2 targets
  EXPECT_EQ(e->view().files()[sel.ranked_files[1].file].path, "a.py");  // 1 target
  EXPECT_EQ(e->view().files()[sel.ranked_files[2].file].path, "b.py");  // 0 targets, 3 functions
  std::vector<std::string> ctx;
  for (int f : sel.context_functions) ctx.push_back(e->target_name(f));
  EXPECT_EQ(ctx, std::vector<std::string>{"a.py::a2"});
}

// A warm structural retriever shares its per-engine caches (file usage, references, popularity, the
// imports table) across requests; each answer must be the one of a feature builder that starts empty for
// that target alone: the same candidates with the same features and scores, on real code, with the
// targets visited in an order where earlier targets filled the caches (neighbours around a target, files
// seen before, the target's own references).
TEST(Retrieval, WarmStructuralAnswersEqualThoseOfAFreshFeatureBuilder) {
  const Engine& e = *repoctx::testing::flask_index().engine;
  const auto& ents = e.view().entities();
  auto model = shared_structural_ranker("");  // the shipped ranker, whichever kind it is
  RetrieverOptions ro;
  StructuralParams sp;
  sp.neighbours = ro.neighbours;
  sp.bm25 = ro.bm25;
  size_t targets = 0, hits_compared = 0;
  for (size_t i = 0; i < ents.size() && targets < 60; i += 7) {
    if (!is_callable(ents[i].kind)) continue;
    ++targets;
    RetrievalQuery q;
    q.target = e.resolve_target(e.target_name(static_cast<int>(i)));
    q.top_k = 10000;
    auto warm = make_retriever("structural", e, {}, ro)->retrieve(q);
    auto ctx = context_of(e, q);
    StructuralFeatures fresh(e);
    auto cand = fresh.build(*ctx, query_text(e, q, ctx.get()), sp);
    ASSERT_EQ(warm.size(), cand.entities.size()) << e.target_name(static_cast<int>(i));
    std::map<int, size_t> row;
    for (size_t k = 0; k < cand.entities.size(); ++k) row[cand.entities[k]] = k;
    std::vector<double> scores = model->score_rows(cand.features);
    for (const auto& h : warm) {
      ASSERT_TRUE(row.count(h.entity)) << e.target_name(h.entity);
      const auto& x = cand.features[row[h.entity]];
      EXPECT_EQ(h.score, scores[row[h.entity]])
          << e.target_name(static_cast<int>(i)) << " -> " << e.target_name(h.entity);
      for (size_t f = 0; f < x.size(); ++f) {
        auto it = h.features.find(structural_feature_names()[f]);
        EXPECT_EQ(it == h.features.end() ? 0.0 : it->second, x[f])
            << e.target_name(static_cast<int>(i)) << " -> " << e.target_name(h.entity) << " "
            << structural_feature_names()[f];
      }
      ++hits_compared;
    }
  }
  EXPECT_EQ(targets, 60u);
  EXPECT_GT(hits_compared, 1000u);
}
