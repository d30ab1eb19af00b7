#include "eval/gbdt_training.h"

#include <nlohmann/json.hpp>

#include "retrieve/structural/xgboost_api.h"
#include "util/cancel.h"
#include "util/error.h"

namespace repoctx {

void GbdtTrainSet::add_row(const std::vector<double>& features, double relevance) {
  if (features.size() != n_features)
    throw Error(ExitCode::failure, "gbdt training row has " + std::to_string(features.size()) + " features, not " +
                                       std::to_string(n_features));
  if (group_sizes.empty()) begin_group();
  for (double f : features) x.push_back(static_cast<float>(f));
  label.push_back(static_cast<float>(relevance));
  ++group_sizes.back();
}

namespace {
// The booster being fitted, freed on every exit (a Ctrl-C between rounds included).
struct Booster {
  BoosterHandle h = nullptr;
  ~Booster() {
    if (h) xgboost_api().XGBoosterFree(h);
  }
};
}  // namespace

std::unique_ptr<GbdtRanker> train_gbdt(const GbdtTrainSet& data, const GbdtParams& p,
                                       const std::string& provenance_json, std::vector<std::string> feature_names) {
  xgboost_quiet();
  if (data.rows() == 0)
    throw Error(ExitCode::bad_input, "no training rows for the gbdt ranker (no target has a positive candidate)");
  if (feature_names.empty()) feature_names = structural_feature_names();
  XgbMatrix dm(data.x.data(), data.rows(), data.n_features, p.nthread);
  xgboost_check(xgboost_api().XGDMatrixSetFloatInfo(dm.h, "label", data.label.data(), data.label.size()),
                "setting labels");
  xgboost_check(xgboost_api().XGDMatrixSetUIntInfo(dm.h, "group", data.group_sizes.data(), data.group_sizes.size()),
                "setting query groups");
  Booster b;
  xgboost_check(xgboost_api().XGBoosterCreate(&dm.h, 1, &b.h), "creating a booster");
  xgboost_set_param(b.h, "objective", p.objective);
  xgboost_set_param(b.h, "max_depth", std::to_string(p.max_depth));
  xgboost_set_param(b.h, "eta", std::to_string(p.eta));
  xgboost_set_param(b.h, "min_child_weight", std::to_string(p.min_child_weight));
  xgboost_set_param(b.h, "lambda", std::to_string(p.lambda));
  xgboost_set_param(b.h, "nthread", std::to_string(p.nthread));
  xgboost_set_param(b.h, "seed", std::to_string(p.seed));
  xgboost_set_param(b.h, "tree_method", "hist");
  xgboost_set_param(b.h, "verbosity", "0");
  for (int it = 0; it < p.trees; ++it) {
    throw_if_interrupted("no model is written");
    xgboost_check(xgboost_api().XGBoosterUpdateOneIter(b.h, it, dm.h), "boosting round " + std::to_string(it));
  }
  bst_ulong len = 0;
  const char* buf = nullptr;
  xgboost_check(xgboost_api().XGBoosterSaveModelToBuffer(b.h, R"({"format": "json"})", &len, &buf), "saving the model");
  nlohmann::json model = {{"ranker", "gbdt"},
                          {"features", feature_names},
                          {"params", p.to_json()},
                          {"provenance", nlohmann::json::parse(provenance_json, nullptr, false)},
                          {"xgboost", nlohmann::json::parse(std::string(buf, len))}};
  return GbdtRanker::from_json(model, "the trained model", &feature_names);
}

}  // namespace repoctx
