// The linear ranker: a logistic model over standardised features, and its model file.
#include <nlohmann/json.hpp>

#include <string>
#include <vector>

#include "retrieve/structural/structural.h"
#include "util/error.h"

namespace repoctx {

double StructuralModel::score(const std::vector<double>& x) const {
  double log_odds = bias;
  for (size_t i = 0; i < weights.size() && i < x.size(); ++i) log_odds += weights[i] * (x[i] - mean[i]) / scale[i];
  return log_odds;
}

std::vector<double> StructuralModel::score_rows(const std::vector<std::vector<double>>& rows) const {
  std::vector<double> out;
  out.reserve(rows.size());
  for (const auto& x : rows) out.push_back(score(x));
  return out;
}

std::string StructuralModel::to_json() const {
  nlohmann::json file;
  file["ranker"] = "linear";
  file["features"] = features;
  file["weights"] = weights;
  file["mean"] = mean;
  file["scale"] = scale;
  file["bias"] = bias;
  file["provenance"] = nlohmann::json::parse(provenance_json, nullptr, false);
  return file.dump(1);
}

StructuralModel StructuralModel::from_json(const std::string& text, const std::string& origin) {
  auto file = nlohmann::json::parse(text, nullptr, false);
  if (file.is_discarded() || !file.contains("weights"))
    throw Error(ExitCode::bad_input,
                "structural model '" + origin + "' is not a linear model file (JSON with features and weights)");
  StructuralModel model;
  model.features = file["features"].get<std::vector<std::string>>();
  model.weights = file["weights"].get<std::vector<double>>();
  model.mean = file["mean"].get<std::vector<double>>();
  model.scale = file["scale"].get<std::vector<double>>();
  model.bias = file["bias"].get<double>();
  if (file.contains("provenance")) model.provenance_json = file["provenance"].dump();
  if (model.features != structural_feature_names())
    throw Error(ExitCode::bad_input, "structural model '" + origin +
                                         "' was trained on other features than this build computes; retrain it with "
                                         "`repoctx train-structural`");
  for (auto& feature_scale : model.scale)
    if (feature_scale <= 0) feature_scale = 1;
  return model;
}

}  // namespace repoctx
