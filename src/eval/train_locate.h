// Training of the `locate` strategy's two logistic models (retrieve/locate/locate.h) from localization tasks:
// every indexed file of a task's base is a row (gold file or not), then every entity candidate, whose
// features include the trained file model's logit of its file. Each task weighs as much as any other: its
// positives and its negatives each sum to one.
#pragma once

#include <string>
#include <vector>

#include "eval/localize.h"
#include "retrieve/locate/locate.h"

namespace repoctx {

struct LocateTrainOptions {
  double l2 = 1.0;
  int iterations = 30;  // Newton steps
};

struct LocateTrainReport {
  size_t tasks = 0, skipped = 0, file_rows = 0, file_positives = 0, entity_rows = 0, entity_positives = 0;
  double file_log_loss = 0, entity_log_loss = 0;
  std::vector<std::string> repos;
};

// Weighted, L2-regularised logistic regression (Newton/IRLS, Eigen) over standardised features.
LogisticModel fit_logistic(const std::vector<std::vector<double>>& rows, const std::vector<double>& labels,
                           const std::vector<double>& weights, const std::vector<std::string>& names,
                           const LocateTrainOptions& o, double* log_loss);

LocateModel train_locate(const std::vector<LocalizeTask>& tasks, const LocalizeEvalOptions& where,
                         const LocateTrainOptions& o, LocateTrainReport* rep);

}  // namespace repoctx
