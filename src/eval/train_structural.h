// Training of the `structural` strategy's logistic model from real repositories: every sampled documented
// function is a query, the repository symbols its real body references are the positives among the
// candidates, the other candidates the negatives.
#pragma once

#include <string>
#include <vector>

#include "retrieve/structural.h"

namespace repoctx {

struct TrainOptions {
  int samples = 300;    // targets per repository
  uint64_t seed = 7;    // differs from `repoctx eval`'s default seed 1
  int negatives = 100;  // negatives kept per target (reweighted to stand for all of them)
  double l2 = 1.0;
  int iterations = 30;  // Newton steps
  StructuralParams params;
};

struct TrainReport {
  size_t targets = 0, rows = 0, positives = 0;
  double log_loss = 0;
  std::vector<std::string> repos;
};

StructuralModel train_structural(const std::vector<const Engine*>& engines, const TrainOptions& o, TrainReport* rep);

}  // namespace repoctx
