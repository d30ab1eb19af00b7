// Training the structural strategy's gradient-boosted trees (retrieve/structural/gbdt.h) with XGBoost's C API:
// rows grouped by target, a ranking objective, and the fitted booster handed to the ranker as a model file
// (the same path a shipped model takes, so a trained ranker and a loaded one score alike).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "retrieve/structural/gbdt.h"

namespace repoctx {

// Training rows grouped by query: every target's candidates are contiguous and form one group.
struct GbdtTrainSet {
  size_t n_features = 0;
  std::vector<float> x;  // row-major, rows() x n_features
  std::vector<float> label;
  std::vector<unsigned> group_sizes;

  explicit GbdtTrainSet(size_t features) : n_features(features) {}
  size_t rows() const { return label.size(); }
  // Rows are added to the group opened last; begin_group() opens a new one.
  void begin_group() { group_sizes.push_back(0); }
  void add_row(const std::vector<double>& features, double relevance);
};

// Fits `p.trees` rounds; honours Ctrl-C between rounds. Feature names are structural_feature_names() unless
// given (the unit tests train on synthetic features). Throws Error(bad_input) when there is no row.
std::unique_ptr<GbdtRanker> train_gbdt(const GbdtTrainSet& data, const GbdtParams& p,
                                       const std::string& provenance_json, std::vector<std::string> feature_names = {});

}  // namespace repoctx
