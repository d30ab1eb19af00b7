// The structural model's fitting and held-out scoring (eval/train_structural.h, eval/loro.h) on samples whose
// answer is known: the leave-one-repository-out table is only as right as these two steps.
#include <gtest/gtest.h>

#include "eval/loro.h"
#include "util/hash.h"

using namespace repoctx;

namespace {

const size_t kClassDirect = 0, kVote = 22;  // indices in structural_feature_names()

// Targets with 12 candidates; the positives (2 per target) have class_direct = 1 and a high vote, the
// negatives noise in every feature (some with class_direct = 1 too, fewer with votes).
StructuralRepoSamples synthetic(const std::string& name, int targets, uint64_t seed) {
  const size_t d = structural_feature_names().size();
  StructuralRepoSamples s;
  s.repo = name;
  for (int t = 0; t < targets; ++t) {
    StructuralTargetSample ts;
    ts.entity = t;
    ts.oracle_size = 2;
    for (int c = 0; c < 12; ++c) {
      std::vector<double> x(d);
      for (size_t j = 0; j < d; ++j)
        x[j] = static_cast<double>(hash64(name + std::to_string(seed + t * 100 + c * 7 + j)) % 100) / 100.0;
      bool pos = c == 3 || c == 8;
      x[kClassDirect] = pos || c % 4 == 0 ? 1 : 0;
      x[kVote] = pos ? 1.0 + x[kVote] : x[kVote] * 0.5;
      ts.candidates.push_back(t * 100 + c);
      ts.features.push_back(std::move(x));
      ts.positive.push_back(pos ? 1 : 0);
    }
    s.targets.push_back(std::move(ts));
  }
  return s;
}

}  // namespace

TEST(Loro, ListwiseAndLogisticFitsRankTheSeparableCandidatesFirst) {
  ASSERT_EQ(structural_feature_names()[kClassDirect], "class_direct");
  ASSERT_EQ(structural_feature_names()[kVote], "vote");
  auto a = synthetic("a", 60, 1), b = synthetic("b", 60, 2), held = synthetic("held", 40, 3);
  for (const char* loss : {"listwise", "logistic"}) {
    TrainOptions o;
    o.loss = loss;
    o.negatives = 5;  // subsampled (and reweighted) negatives
    TrainReport rep;
    StructuralModel m = fit_structural({&a, &b}, o, &rep);
    EXPECT_EQ(rep.targets, 120u) << loss;
    EXPECT_EQ(rep.positives, 240u) << loss;
    EXPECT_GT(m.weights[kVote], 0) << loss;
    EXPECT_GT(m.weights[kClassDirect], 0) << loss;
    StrategyScores sc = score_structural_samples(held, m, {1, 2, 20}, 100);
    EXPECT_EQ(sc.targets, 40) << loss;
    EXPECT_DOUBLE_EQ(sc.recall[2], 1.0) << loss;
    EXPECT_DOUBLE_EQ(sc.recall[1], 0.5) << loss;  // one of two oracle entities at rank 1
    EXPECT_DOUBLE_EQ(sc.mrr, 1.0) << loss;
  }
}

TEST(Loro, RecallCountsOracleEntitiesOutsideThePoolAsMissesAndTiesKeepStoredOrder) {
  const size_t d = structural_feature_names().size();
  StructuralRepoSamples s;
  StructuralTargetSample t;
  t.oracle_size = 4;  // two of the four used entities are not candidates at all
  for (int c = 0; c < 5; ++c) {
    t.candidates.push_back(c);
    t.features.emplace_back(d, 0.0);  // every score ties: the stored (tie-break) order decides
    t.positive.push_back(c == 1 || c == 4 ? 1 : 0);
  }
  s.targets.push_back(t);
  StructuralModel m;
  m.features = structural_feature_names();
  m.weights.assign(d, 1.0);
  m.mean.assign(d, 0.0);
  m.scale.assign(d, 1.0);
  StrategyScores sc = score_structural_samples(s, m, {1, 2, 5}, 100);
  EXPECT_DOUBLE_EQ(sc.recall[1], 0.0);
  EXPECT_DOUBLE_EQ(sc.recall[2], 0.25);
  EXPECT_DOUBLE_EQ(sc.recall[5], 0.5);
  EXPECT_DOUBLE_EQ(sc.mrr, 0.5);
}
