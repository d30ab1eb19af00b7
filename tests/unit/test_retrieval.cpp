#include <gtest/gtest.h>

#include <iostream>
#include <set>

#include "helpers.h"
#include "index/index.h"
#include "indexed_repo.h"
#include "report_repo.h"
#include "retrieve/retriever.h"
#include "retrieve/structural/structural.h"
#include "scripted_backend.h"
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

// The two-module package most tests here retrieve from: pkg/store.py (kStore) and pkg/core.py (kCore).
std::unique_ptr<Engine> open_store_and_core(TempDir& repo, const TempDir& tmp) {
  repo.write("pkg/__init__.py", "");
  repo.write("pkg/store.py", kStore);
  repo.write("pkg/core.py", kCore);
  return open(repo, tmp);
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
  auto e = open_store_and_core(repo, tmp);
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
  auto e = open_store_and_core(repo, tmp);
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
  sp.cascade.keep = ro.cascade_keep;
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
    std::vector<double> scores = rank_pool(*model, cand.features, sp.cascade);  // as the retriever ranks
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

// issue 19: `imports` orders ProjAgent 4.3's pool by the structural ranker by default; the pool itself is the
// paper's (imports_order=bm25): the same symbols, the pool symbols the structural ranker scores first in its
// order, then the others in the paper's order.
TEST(Retrieval, ImportsStructuralOrderKeepsThePaperPoolAndTakesTheStructuralOrder) {
  const Engine& e = *repoctx::testing::flask_index().engine;
  const auto& ents = e.view().entities();
  RetrieverOptions paper_opts;
  paper_opts.imports_order = "bm25";
  auto structural_order = make_retriever("imports", e, {}, {});
  auto paper_order = make_retriever("imports", e, {}, paper_opts);
  auto structural = make_retriever("structural", e, {}, {});
  size_t targets = 0, reordered = 0, wider = 0;
  for (size_t i = 0; i < ents.size() && targets < 40; i += 5) {
    if (!is_callable(ents[i].kind)) continue;
    ++targets;
    RetrievalQuery q;
    q.target = e.resolve_target(e.target_name(static_cast<int>(i)));
    q.top_k = 0;  // the whole pool
    auto ours = structural_order->retrieve(q);
    auto paper = paper_order->retrieve(q);
    std::set<int> a, b;
    for (const auto& h : ours) a.insert(h.entity);
    for (const auto& h : paper) b.insert(h.entity);
    ASSERT_EQ(a.size(), ours.size());
    // Everything the paper's order ranks is there; the structural order also ranks pool symbols that BM25
    // scores 0 (the paper's order leaves them out), and nothing outside the pool: top-level symbols only,
    // no more than the pool holds.
    for (int x : b) EXPECT_TRUE(a.count(x)) << e.target_name(static_cast<int>(i)) << " lost " << e.target_name(x);
    ASSERT_FALSE(ours.empty());
    EXPECT_LE(ours.size(), static_cast<size_t>(ours[0].features.at("pool_size")));
    for (int x : a) EXPECT_LT(ents[x].parent_index, 0) << e.target_name(x);
    if (a.size() > b.size()) ++wider;
    std::vector<int> expected;
    for (const auto& h : structural->retrieve(q))
      if (a.count(h.entity)) expected.push_back(h.entity);
    std::set<int> seen(expected.begin(), expected.end());
    for (const auto& h : paper)
      if (!seen.count(h.entity)) expected.push_back(h.entity);
    std::vector<int> got;
    for (const auto& h : ours) got.push_back(h.entity);
    EXPECT_EQ(got, expected) << e.target_name(static_cast<int>(i));  // also: nothing else is in `ours`
    for (size_t k = 1; k < ours.size(); ++k) EXPECT_GT(ours[k - 1].score, ours[k].score);
    if (got.size() > 1 && got.front() != paper.front().entity) ++reordered;
    q.top_k = 5;  // top_k cuts the same order
    auto top = structural_order->retrieve(q);
    ASSERT_EQ(top.size(), std::min<size_t>(5, got.size()));
    for (size_t k = 0; k < top.size(); ++k) EXPECT_EQ(top[k].entity, got[k]);
  }
  EXPECT_EQ(targets, 40u);
  EXPECT_GT(reordered, 10u);  // the orders differ: the structural one is not the paper's
  std::cout << "targets " << targets << ", reordered " << reordered << ", wider " << wider << "\n";
}

TEST(Retrieval, FuseRankingsStructuralFirstAndReciprocalRankFusion) {
  TempDir repo, tmp;
  auto e = open_store_and_core(repo, tmp);
  auto hit = [&](const std::string& qualname) {
    for (size_t i = 0; i < e->view().entities().size(); ++i)
      if (e->view().entities()[i].qualname == qualname) return entity_hit(*e, static_cast<int>(i), 0.5);
    throw std::runtime_error("no entity " + qualname);
  };
  auto name = [&](const Hit& h) { return e->view().entities()[h.entity].qualname; };
  std::vector<Hit> first = {hit("Report"), hit("load_rows")}, second = {hit("Store"), hit("load_rows")};
  auto sf = fuse_rankings(*e, first, second, "structural-first", 0);
  ASSERT_EQ(sf.size(), 3u);
  EXPECT_EQ(name(sf[0]), "Report");
  EXPECT_EQ(name(sf[1]), "load_rows");
  EXPECT_EQ(name(sf[2]), "Store");
  EXPECT_EQ(sf[1].features["first_rank"], 2);
  EXPECT_EQ(sf[1].features["second_rank"], 2);
  EXPECT_EQ(fuse_rankings(*e, first, second, "structural-first", 2).size(), 2u);
  // RRF: load_rows is in both rankings (2 / 62) and beats the first of either alone (1 / 61).
  auto rrf = fuse_rankings(*e, first, second, "rrf", 0);
  ASSERT_EQ(rrf.size(), 3u);
  EXPECT_EQ(name(rrf[0]), "load_rows");
  EXPECT_DOUBLE_EQ(rrf[0].score, 2.0 / 62.0);
  EXPECT_DOUBLE_EQ(rrf[1].score, 1.0 / 61.0);
  EXPECT_THROW(fuse_rankings(*e, first, second, "max", 0), Error);
}

// issue 19: `hybrid` with a target ranks the structural ranking first, then eq. 6's extras (the default), and
// is eq. 6 alone with hybrid_fusion=none and without a target.
TEST(Retrieval, HybridWithATargetPutsTheStructuralRankingFirst) {
  TempDir repo, tmp;
  auto e = open_store_and_core(repo, tmp);
  repoctx::testing::ScriptedBackend embedder;
  embedder.embed_fn = [](const std::string& t) {
    return std::vector<float>{static_cast<float>(t.size() % 7 + 1), static_cast<float>(t.find("row") != t.npos), 1};
  };
  Models m;
  m.embedder = &embedder;
  RetrieverOptions none;
  none.hybrid_fusion = "none";
  RetrievalQuery q;
  q.target = e->resolve_target("pkg/core.py::Report.summarize");
  q.top_k = 0;
  auto fused = make_retriever("hybrid", *e, m, {})->retrieve(q);
  auto eq6 = make_retriever("hybrid", *e, m, none)->retrieve(q);
  auto structural = make_retriever("structural", *e, {}, {})->retrieve(q);
  ASSERT_FALSE(structural.empty());
  ASSERT_GE(eq6.size(), structural.size());
  std::vector<int> expected;
  std::set<int> seen;
  for (const auto& h : structural) expected.push_back(h.entity), seen.insert(h.entity);
  for (const auto& h : eq6)
    if (!seen.count(h.entity)) expected.push_back(h.entity);
  std::vector<int> got;
  for (const auto& h : fused) got.push_back(h.entity);
  EXPECT_EQ(got, expected);
  std::vector<int> eq6_order;
  for (const auto& h : eq6) eq6_order.push_back(h.entity);
  EXPECT_NE(got, eq6_order);                                            // the fusion changed the order here
  for (const auto& h : eq6) EXPECT_TRUE(h.score >= 0 && h.score <= 1);  // eq. 6's scores, unfused
  // Without a target, hybrid is eq. 6 whatever the fusion says.
  RetrievalQuery text;
  text.text = "load rows store";
  text.top_k = 10;
  auto a = make_retriever("hybrid", *e, m, {})->retrieve(text);
  auto b = make_retriever("hybrid", *e, m, none)->retrieve(text);
  ASSERT_EQ(a.size(), b.size());
  for (size_t k = 0; k < a.size(); ++k) EXPECT_TRUE(a[k].entity == b[k].entity && a[k].score == b[k].score);
}
