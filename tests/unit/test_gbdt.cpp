// The structural strategy's gradient-boosted ranker (retrieve/structural/gbdt.h, issue 19): it must learn
// what a linear model cannot, and its model file must give back the very same scores.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <limits>

#include "eval/loro.h"
#include "retrieve/structural/gbdt.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/hash.h"
#include "util/temp_dir.h"

using namespace repoctx;

namespace {

const size_t kClassDirect = 0, kModule = 2, kVote = 22;  // indices in structural_feature_names()

double noise(const std::string& name, uint64_t key) {
  return static_cast<double>(hash64(name + "|" + std::to_string(key)) % 1000) / 1000.0;
}

// Targets with 10 candidates, 2 of them relevant. Relevance is an XOR of two binary features: a candidate
// is used when exactly one of class_direct and module fires. Each target holds (1,0) and (0,1) once, (1,1)
// three times and (0,0) five times. No weighted sum w1*x1 + w2*x2 ranks both relevant candidates first: that
// needs w1 > 0 and w2 > 0 (above (0,0)) and w1 > w1 + w2 (above (1,1)). The counts are unbalanced on purpose:
// with a perfectly balanced XOR no single split gains anything and greedy trees cannot start either. Every
// other feature is noise.
StructuralRepoSamples xor_samples(const std::string& name, int targets) {
  const size_t d = structural_feature_names().size();
  StructuralRepoSamples s;
  s.repo = name;
  // (class_direct, module) of each candidate slot; slots 1 and 6 are the relevant ones.
  const int combos[10][2] = {{0, 0}, {1, 0}, {1, 1}, {0, 0}, {1, 1}, {0, 0}, {0, 1}, {1, 1}, {0, 0}, {0, 0}};
  for (int t = 0; t < targets; ++t) {
    StructuralTargetSample ts;
    ts.entity = t;
    ts.oracle_size = 2;
    for (int c = 0; c < 10; ++c) {
      // Rotate the slots so the relevant candidates are not always at the same stored position.
      int slot = (c + t) % 10;
      std::vector<double> x(d);
      for (size_t j = 0; j < d; ++j) x[j] = noise(name, static_cast<uint64_t>(t * 1000 + c * 50 + static_cast<int>(j)));
      x[kClassDirect] = combos[slot][0];
      x[kModule] = combos[slot][1];
      ts.candidates.push_back(t * 100 + c);
      ts.features.push_back(std::move(x));
      ts.positive.push_back(combos[slot][0] != combos[slot][1] ? 1 : 0);
    }
    s.targets.push_back(std::move(ts));
  }
  return s;
}

TrainOptions gbdt_options() {
  TrainOptions o;
  o.ranker = "gbdt";
  o.negatives = 0;  // all of them
  o.gbdt.trees = 40;
  o.gbdt.max_depth = 3;
  o.gbdt.eta = 0.3;
  return o;
}

}  // namespace

TEST(Gbdt, LearnsAnInteractionThatNoLinearRankerCan) {
  ASSERT_EQ(structural_feature_names()[kClassDirect], "class_direct");
  ASSERT_EQ(structural_feature_names()[kModule], "module");
  auto a = xor_samples("a", 80), b = xor_samples("b", 80), held = xor_samples("held", 40);
  TrainReport rep;
  auto gbdt = fit_structural_ranker({&a, &b}, gbdt_options(), &rep);
  EXPECT_EQ(gbdt->kind(), "gbdt");
  EXPECT_EQ(rep.targets, 160u);
  EXPECT_EQ(rep.positives, 320u);
  StrategyScores g = score_structural_samples(held, *gbdt, {2}, 100);
  EXPECT_DOUBLE_EQ(g.recall[2], 1.0);  // both relevant candidates first, in every held-out target
  EXPECT_DOUBLE_EQ(g.mrr, 1.0);
  // The linear ranker on the same rows cannot: the interaction is not a weighted sum of the two features.
  TrainOptions lin;
  lin.negatives = 0;
  StructuralModel linear = fit_structural({&a, &b}, lin, nullptr);
  StrategyScores l = score_structural_samples(held, linear, {2}, 100);
  EXPECT_LT(l.recall[2], 0.75);
}

TEST(Gbdt, ModelFileRoundTripsWithIdenticalScoresAndTrainingIsDeterministic) {
  auto a = xor_samples("a", 30), held = xor_samples("held", 5);
  auto m = fit_structural_ranker({&a}, gbdt_options(), nullptr);
  std::string file = m->to_json();
  auto loaded = structural_ranker_from_json(file, "round trip");
  ASSERT_EQ(loaded->kind(), "gbdt");
  for (const auto& t : held.targets) {
    std::vector<double> x = m->score_rows(t.features), y = loaded->score_rows(t.features);
    ASSERT_EQ(x.size(), t.features.size());
    for (size_t i = 0; i < x.size(); ++i) EXPECT_EQ(x[i], y[i]) << "candidate " << i;
  }
  EXPECT_EQ(loaded->to_json(), file);  // loading and saving again gives back the same file
  // Same rows, same parameters: the same model, byte for byte.
  EXPECT_EQ(fit_structural_ranker({&a}, gbdt_options(), nullptr)->to_json(), file);
  auto j = nlohmann::json::parse(file);
  EXPECT_EQ(j["ranker"], "gbdt");
  EXPECT_EQ(j["params"]["trees"], 40);
}

TEST(Gbdt, RejectsModelFilesOfOtherFeaturesOrBrokenTrees) {
  auto a = xor_samples("a", 10);
  auto j = nlohmann::json::parse(fit_structural_ranker({&a}, gbdt_options(), nullptr)->to_json());
  auto other = j;
  other["features"][0] = "not_a_feature";
  try {
    structural_ranker_from_json(other.dump(), "other");
    FAIL() << "a model of other features was accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("retrain"), std::string::npos) << e.what();
  }
  auto broken = j;
  broken["xgboost"] = {{"learner", "nonsense"}};
  try {
    structural_ranker_from_json(broken.dump(), "broken");
    FAIL() << "broken trees were accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    std::string what = e.what();
    EXPECT_NE(what.find("cannot load its trees"), std::string::npos) << what;
    EXPECT_EQ(what.find("Stack trace"), std::string::npos) << what;  // one line for the user, no native trace
  }
  auto unknown = j;
  unknown["ranker"] = "forest";
  EXPECT_THROW(structural_ranker_from_json(unknown.dump(), "unknown"), Error);
}

TEST(Gbdt, SharedRankerIsLoadedOncePerModelFileAndAgainWhenTheFileChanges) {
  auto a = xor_samples("a", 10), held = xor_samples("held", 2);
  TempDir dir("repoctx-gbdt-");
  std::string path = (dir / "m.json").string();
  TrainOptions o = gbdt_options();
  dir.write("m.json", fit_structural_ranker({&a}, o, nullptr)->to_json());
  auto first = shared_structural_ranker(path);
  EXPECT_EQ(shared_structural_ranker(path).get(), first.get());  // the server's per-request retrievers share it
  o.gbdt.trees = 7;                                              // another model, another size
  dir.write("m.json", fit_structural_ranker({&a}, o, nullptr)->to_json());
  auto second = shared_structural_ranker(path);
  ASSERT_NE(second.get(), first.get());
  EXPECT_EQ(dynamic_cast<const GbdtRanker&>(*second).params().trees, 7);
  EXPECT_NE(second->score_rows(held.targets[0].features), first->score_rows(held.targets[0].features));
  EXPECT_EQ(shared_structural_ranker("").get(), shared_structural_ranker("").get());  // the built-in model
}

// The complete-tree evaluator (issue 17) replaces XGBoost's predictor only where it gives the very same
// floats: on the shipped model (200 trees of depth 6) and on a trained one, over rows of varied values,
// values exactly at split thresholds, and rows with a missing value (those go to XGBoost).
TEST(Gbdt, CompleteTreeEvaluatorGivesXgboostsScoresBitForBit) {
  auto shipped = load_structural_ranker("");
  auto a = xor_samples("a", 30);
  auto trained = fit_structural_ranker({&a}, gbdt_options(), nullptr);
  // Trees deeper than 6 levels (over 64 leaves) are walked level by level instead of by QuickScorer.
  auto many = xor_samples("deep", 400);
  for (auto& ts : many.targets)  // labels no shallow tree separates: the trees grow to their depth limit
    for (size_t c = 0; c < ts.positive.size(); ++c)
      ts.positive[c] = hash64("deep|" + std::to_string(ts.entity) + "|" + std::to_string(c)) % 3 == 0 ? 1 : 0;
  TrainOptions deep_options = gbdt_options();
  deep_options.gbdt.max_depth = 9;
  deep_options.gbdt.trees = 8;
  deep_options.gbdt.min_child_weight = 0;
  auto deep = fit_structural_ranker({&many}, deep_options, nullptr);
  for (const StructuralRanker* r : {shipped.get(), trained.get(), deep.get()}) {
    const auto* g = dynamic_cast<const GbdtRanker*>(r);
    ASSERT_NE(g, nullptr);
    ASSERT_TRUE(g->has_complete_forest()) << "the evaluator refused the model";
    EXPECT_STREQ(g->evaluator(), r == deep.get() ? "complete-tree" : "quickscorer");
    const size_t d = structural_feature_names().size();
    // Threshold-like values (multiples of 1/64 and log1p of counts) and plain noise, 3,000 rows.
    std::vector<std::vector<double>> rows;
    for (int i = 0; i < 3000; ++i) {
      std::vector<double> x(d);
      for (size_t j = 0; j < d; ++j) {
        uint64_t h = hash64(std::to_string(i) + "|" + std::to_string(j));
        x[j] = h % 3 == 0   ? 0.0
               : h % 3 == 1 ? static_cast<double>(h % 65) / 64.0
                            : std::log1p(static_cast<double>(h % 40));
      }
      rows.push_back(std::move(x));
    }
    std::vector<double> mine = g->score_rows(rows), theirs = g->score_rows_xgboost(rows);
    ASSERT_EQ(mine.size(), rows.size());
    size_t differ = 0;
    for (size_t i = 0; i < rows.size(); ++i) differ += mine[i] != theirs[i] ? 1 : 0;
    EXPECT_EQ(differ, 0u) << "rows scored differently from XGBoost";
    // A missing value: XGBoost's default directions decide, so the scores are XGBoost's.
    rows[0][3] = std::numeric_limits<double>::quiet_NaN();
    EXPECT_EQ(g->score_rows({rows[0]}), g->score_rows_xgboost({rows[0]}));
  }
}

// The cascade (RankCascade, issue 17): the candidates kept after the first trees get the full model's scores
// bit for bit, every other one ranks below all of them in the order of its partial score, and keep = 0 or a
// pool no larger than keep is ranked by the full model.
TEST(Gbdt, TheCascadeKeepsFullScoresForTheKeptAndRanksTheRestBelow) {
  auto shipped = load_structural_ranker("");
  const auto* g = dynamic_cast<const GbdtRanker*>(shipped.get());
  ASSERT_NE(g, nullptr);
  ASSERT_TRUE(g->can_cascade()) << "the shipped model has 200 trees that QuickScorer evaluates";
  const size_t d = structural_feature_names().size();
  std::vector<std::vector<double>> rows;
  for (int i = 0; i < 600; ++i) {
    std::vector<double> x(d);
    for (size_t j = 0; j < d; ++j) {
      uint64_t h = hash64("cascade|" + std::to_string(i) + "|" + std::to_string(j));
      x[j] = h % 3 == 0   ? 0.0
             : h % 3 == 1 ? static_cast<double>(h % 65) / 64.0
                          : std::log1p(static_cast<double>(h % 40));
    }
    rows.push_back(std::move(x));
  }
  const std::vector<double> full = g->score_rows(rows);
  EXPECT_EQ(g->rank_rows(rows, RankCascade{0}), full);
  EXPECT_EQ(g->rank_rows(rows, RankCascade{600}), full);
  const int keep = 100;
  const std::vector<double> cas = g->rank_rows(rows, RankCascade{keep});
  ASSERT_EQ(cas.size(), rows.size());
  std::vector<size_t> kept, rest;
  for (size_t i = 0; i < rows.size(); ++i) (cas[i] == full[i] ? kept : rest).push_back(i);
  ASSERT_GE(kept.size(), static_cast<size_t>(keep)) << "the kept candidates' scores are the full model's";
  // (a candidate left out may equal its full score by chance; then it also ranks below every kept one)
  double min_kept = std::numeric_limits<double>::infinity();
  for (size_t i : kept) min_kept = std::min(min_kept, full[i]);
  size_t below = 0;
  for (size_t i = 0; i < rows.size(); ++i) below += cas[i] < min_kept ? 1 : 0;
  EXPECT_EQ(below, rows.size() - keep) << "exactly keep candidates rank at or above the lowest kept score";
  // Not a copy of the full ranking: some candidate left out would have ranked among the kept by all trees.
  std::vector<double> sorted_full = full;
  std::sort(sorted_full.begin(), sorted_full.end(), std::greater<>());
  size_t lost = 0;
  for (size_t i = 0; i < rows.size(); ++i) lost += cas[i] < min_kept && full[i] > sorted_full[keep] ? 1 : 0;
  EXPECT_GT(lost, 0u) << "on noise rows the first trees cannot keep the full model's best exactly";
  // The pool-level ranking (equal rows scored once) gives the same scores.
  std::vector<std::vector<double>> pool = rows;
  pool.push_back(rows[7]);
  std::vector<double> pooled = rank_pool(*g, pool, RankCascade{keep});
  EXPECT_EQ(pool.size(), rows.size() + 1);
  EXPECT_EQ(pool.back(), rows[7]) << "rank_pool gives the rows back";
  EXPECT_EQ(pooled.back(), pooled[7]);
}

// Which evaluator reproduces XGBoost on a model is checked once per model text, XGBoost version and evaluator
// version, and kept in the user's cache: the next load reads it instead of probing again (most of a cold
// process's model load). A verdict file that says something else is obeyed, proving it is read; an unreadable
// one is checked again and rewritten.
TEST(Gbdt, TheEvaluatorVerdictIsKeptInTheCacheAndReadByTheNextLoad) {
  TempDir cache("repoctx-gbdt-cache-");
  const char* old = std::getenv("XDG_CACHE_HOME");
  const std::string saved = old ? old : "";
  ::setenv("XDG_CACHE_HOME", cache.path().c_str(), 1);
  auto a = xor_samples("verdict", 10);
  const std::string model = fit_structural_ranker({&a}, gbdt_options(), nullptr)->to_json();
  auto write_file = [](const std::filesystem::path& p, const std::string& text) { std::ofstream(p) << text; };
  auto load = [&] {
    auto r = structural_ranker_from_json(model, "test");
    return std::string(dynamic_cast<const GbdtRanker&>(*r).evaluator());
  };
  EXPECT_EQ(load(), "quickscorer");
  const auto dir = std::filesystem::path(cache.path()) / "repoctx" / "gbdt-evaluator";
  std::vector<std::filesystem::path> kept;
  for (const auto& e : std::filesystem::directory_iterator(dir)) kept.push_back(e.path());
  ASSERT_EQ(kept.size(), 1u);
  EXPECT_EQ(read_file(kept[0].string()), "quick-cascade\n");
  write_file(kept[0], "xgboost\n");  // a verdict is read, not recomputed
  EXPECT_EQ(load(), "xgboost");
  write_file(kept[0], "walk\n");
  EXPECT_EQ(load(), "complete-tree");
  write_file(kept[0], "garbage");  // not a verdict: checked again, and kept again
  EXPECT_EQ(load(), "quickscorer");
  EXPECT_EQ(read_file(kept[0].string()), "quick-cascade\n");
  if (old)
    ::setenv("XDG_CACHE_HOME", saved.c_str(), 1);
  else
    ::unsetenv("XDG_CACHE_HOME");
}
