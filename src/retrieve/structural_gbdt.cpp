#include "retrieve/structural_gbdt.h"

#include <fmt/core.h>
#include <xgboost/c_api.h>

#include <cmath>
#include <cstdint>
#include <limits>

#include "util/cancel.h"
#include "util/error.h"

namespace repoctx {

namespace {

// Every XGBoost call returns 0 or -1 with the reason in XGBGetLastError(), followed by a native stack trace
// that says nothing to a user: keep the first line.
std::string xgb_error() {
  std::string e = XGBGetLastError();
  return e.substr(0, e.find('\n'));
}

void xgb_check(int rc, const std::string& what) {
  if (rc != 0) throw Error(ExitCode::failure, "xgboost: " + what + " failed: " + xgb_error());
}

// XGBoost logs warnings to stderr by default; repoctx reports its own errors.
void quiet_xgboost() {
  static std::once_flag once;
  std::call_once(once, [] { xgb_check(XGBSetGlobalConfig(R"({"verbosity": 0})"), "setting verbosity"); });
}

struct DMatrix {
  DMatrixHandle h = nullptr;
  // Dense rows; NaN marks a missing value, so 0 (a feature that does not fire) is an ordinary value.
  // `threads` 1 for a query's pool: waking OpenMP workers for a few hundred rows is not worth it.
  DMatrix(const float* x, size_t rows, size_t cols, int threads) {
    xgb_check(XGDMatrixCreateFromMat_omp(x, rows, cols, std::numeric_limits<float>::quiet_NaN(), &h, threads),
              "building a matrix");
  }
  ~DMatrix() {
    if (h) XGDMatrixFree(h);
  }
  DMatrix(const DMatrix&) = delete;
  DMatrix& operator=(const DMatrix&) = delete;
};

void set_param(BoosterHandle b, const char* name, const std::string& value) {
  xgb_check(XGBoosterSetParam(b, name, value.c_str()), std::string("setting ") + name);
}

}  // namespace

nlohmann::json GbdtParams::to_json() const {
  return {{"objective", objective},
          {"trees", trees},
          {"max_depth", max_depth},
          {"eta", eta},
          {"min_child_weight", min_child_weight},
          {"lambda", lambda},
          {"nthread", nthread},
          {"seed", seed}};
}

GbdtParams GbdtParams::from_json(const nlohmann::json& j) {
  GbdtParams p;
  p.objective = j.value("objective", p.objective);
  p.trees = j.value("trees", p.trees);
  p.max_depth = j.value("max_depth", p.max_depth);
  p.eta = j.value("eta", p.eta);
  p.min_child_weight = j.value("min_child_weight", p.min_child_weight);
  p.lambda = j.value("lambda", p.lambda);
  p.nthread = j.value("nthread", p.nthread);
  p.seed = j.value("seed", p.seed);
  return p;
}

void GbdtTrainSet::add_row(const std::vector<double>& features, double relevance) {
  if (features.size() != n_features)
    throw Error(ExitCode::failure, "gbdt training row has " + std::to_string(features.size()) + " features, not " +
                                       std::to_string(n_features));
  if (group_sizes.empty()) begin_group();
  for (double f : features) x.push_back(static_cast<float>(f));
  label.push_back(static_cast<float>(relevance));
  ++group_sizes.back();
}

GbdtRanker::~GbdtRanker() {
  if (booster_) XGBoosterFree(static_cast<BoosterHandle>(booster_));
}

std::unique_ptr<GbdtRanker> GbdtRanker::train(const GbdtTrainSet& data, const GbdtParams& p,
                                              const std::string& provenance_json,
                                              std::vector<std::string> feature_names) {
  quiet_xgboost();
  if (data.rows() == 0)
    throw Error(ExitCode::bad_input,
                "no training rows for the gbdt ranker (no target has a "
                "positive candidate)");
  DMatrix dm(data.x.data(), data.rows(), data.n_features, p.nthread);
  xgb_check(XGDMatrixSetFloatInfo(dm.h, "label", data.label.data(), data.label.size()), "setting labels");
  xgb_check(XGDMatrixSetUIntInfo(dm.h, "group", data.group_sizes.data(), data.group_sizes.size()),
            "setting query groups");
  std::unique_ptr<GbdtRanker> r(new GbdtRanker());
  r->params_ = p;
  r->features_ = feature_names.empty() ? structural_feature_names() : std::move(feature_names);
  r->provenance_json_ = provenance_json;
  BoosterHandle b = nullptr;
  xgb_check(XGBoosterCreate(&dm.h, 1, &b), "creating a booster");
  r->booster_ = b;
  set_param(b, "objective", p.objective);
  set_param(b, "max_depth", std::to_string(p.max_depth));
  set_param(b, "eta", std::to_string(p.eta));
  set_param(b, "min_child_weight", std::to_string(p.min_child_weight));
  set_param(b, "lambda", std::to_string(p.lambda));
  set_param(b, "nthread", std::to_string(p.nthread));
  set_param(b, "seed", std::to_string(p.seed));
  set_param(b, "tree_method", "hist");
  set_param(b, "verbosity", "0");
  for (int it = 0; it < p.trees; ++it) {
    throw_if_interrupted("no model is written");
    xgb_check(XGBoosterUpdateOneIter(b, it, dm.h), "boosting round " + std::to_string(it));
  }
  // Prediction runs inside retrieval, which has its own parallelism.
  set_param(b, "nthread", "1");
  return r;
}

std::vector<double> GbdtRanker::score_rows(const std::vector<std::vector<double>>& rows) const {
  if (rows.empty()) return {};
  const size_t d = features_.size();
  std::vector<float> x;
  x.reserve(rows.size() * d);
  for (const auto& row : rows) {
    if (row.size() != d)
      throw Error(ExitCode::failure,
                  "gbdt ranker got " + std::to_string(row.size()) + " features, expected " + std::to_string(d));
    for (double f : row) x.push_back(static_cast<float>(f));
  }
  // In-place prediction over the dense rows (an __array_interface__ naming the buffer): no DMatrix is built,
  // and XGBoost documents it as safe and lock free from several threads (the output buffer is per thread),
  // so concurrent requests of a warm server predict in parallel. Through a DMatrix a lock was needed around
  // every prediction, and it was a third of a structural request's time (docs/BENCHMARKS.md, issue 17).
  // The trees and the sum are those of the DMatrix path: the scores are the same floats.
  const std::string array = fmt::format(R"({{"data": [{}, true], "shape": [{}, {}], "typestr": "<f4", "version": 3}})",
                                        reinterpret_cast<uintptr_t>(x.data()), rows.size(), d);
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* out = nullptr;
  xgb_check(XGBoosterPredictFromDense(static_cast<BoosterHandle>(booster_), array.c_str(),
                                      R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, )"
                                      R"("strict_shape": false, "missing": NaN, "cache_id": 0})",
                                      nullptr, &shape, &dim, &out),
            "predicting");
  return std::vector<double>(out, out + rows.size());
}

std::string GbdtRanker::to_json() const {
  bst_ulong len = 0;
  const char* buf = nullptr;
  xgb_check(XGBoosterSaveModelToBuffer(static_cast<BoosterHandle>(booster_), R"({"format": "json"})", &len, &buf),
            "saving the model");
  nlohmann::json j;
  j["ranker"] = "gbdt";
  j["features"] = features_;
  j["params"] = params_.to_json();
  j["provenance"] = nlohmann::json::parse(provenance_json_, nullptr, false);
  j["xgboost"] = nlohmann::json::parse(std::string(buf, len));
  return j.dump();  // compact: the trees are most of the file
}

std::unique_ptr<GbdtRanker> GbdtRanker::from_json(const nlohmann::json& j, const std::string& origin,
                                                  const std::vector<std::string>* expected_features) {
  quiet_xgboost();
  if (!j.is_object() || !j.contains("xgboost") || !j.contains("features") || !j["features"].is_array())
    throw Error(ExitCode::bad_input,
                "structural model '" + origin + "' is not a gbdt model file (JSON with features and xgboost)");
  std::unique_ptr<GbdtRanker> r(new GbdtRanker());
  r->features_ = j["features"].get<std::vector<std::string>>();
  if (r->features_ != (expected_features ? *expected_features : structural_feature_names()))
    throw Error(ExitCode::bad_input, "structural model '" + origin +
                                         "' was trained on other features than this build computes; retrain it with "
                                         "`repoctx train-structural --ranker gbdt`");
  if (j.contains("params")) r->params_ = GbdtParams::from_json(j["params"]);
  if (j.contains("provenance")) r->provenance_json_ = j["provenance"].dump();
  BoosterHandle b = nullptr;
  xgb_check(XGBoosterCreate(nullptr, 0, &b), "creating a booster");
  r->booster_ = b;
  std::string model = j["xgboost"].dump();
  if (XGBoosterLoadModelFromBuffer(b, model.data(), model.size()) != 0)
    throw Error(ExitCode::bad_input, "structural model '" + origin + "': xgboost cannot load its trees (" +
                                         xgb_error() + "); retrain it with `repoctx train-structural`");
  bst_ulong n_features = 0;
  xgb_check(XGBoosterGetNumFeature(b, &n_features), "reading the feature count");
  if (n_features != r->features_.size())
    throw Error(ExitCode::bad_input, "structural model '" + origin + "': its trees expect " +
                                         std::to_string(n_features) + " features, its feature list has " +
                                         std::to_string(r->features_.size()));
  set_param(b, "nthread", "1");
  return r;
}

}  // namespace repoctx
