// The structural strategy's non-linear ranker: gradient-boosted regression trees with a ranking
// objective (LambdaMART: rank:ndcg, or rank:pairwise / rank:map) over the same candidate features as the
// linear model. XGBoost's C API (Debian's libxgboost-dev) does the training and the prediction; the model
// file holds XGBoost's own JSON model inside ours ({"ranker": "gbdt", "features", "params", "xgboost",
// "provenance"}), so the shipped model is embedded in the binary like the linear one and loads offline.
//
// Training is the lab's (eval/gbdt_training.h); a trained model comes here through from_json.
//
// Determinism: no row or column subsampling, the histogram tree method, a fixed seed and `nthread` 1 by
// default; the same rows and parameters give the same model bytes (tests/unit/test_gbdt.cpp checks it).
#pragma once

#include <nlohmann/json.hpp>

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "retrieve/structural/structural.h"

namespace repoctx {

// Defaults: the shipped model's settings, chosen on 6 of the 16 leave-one-repository-out folds (docs/EVAL.md).
struct GbdtParams {
  std::string objective = "rank:pairwise";  // rank:pairwise, rank:ndcg (LambdaMART), rank:map
  int trees = 200;                          // boosting rounds
  int max_depth = 6;
  double eta = 0.1;  // learning rate
  double min_child_weight = 1;
  double lambda = 1;  // L2 on leaf weights
  int nthread = 1;    // training threads (1 keeps training deterministic whatever the machine)
  uint64_t seed = 7;

  nlohmann::json to_json() const;
  static GbdtParams from_json(const nlohmann::json& j);
};

class GbdtRanker : public StructuralRanker {
 public:
  ~GbdtRanker() override;
  GbdtRanker(const GbdtRanker&) = delete;
  GbdtRanker& operator=(const GbdtRanker&) = delete;

  // `j` is a whole model file; throws Error(bad_input) when it is not a GBDT model of this build's features.
  static std::unique_ptr<GbdtRanker> from_json(const nlohmann::json& j, const std::string& origin,
                                               const std::vector<std::string>* expected_features = nullptr);

  std::string kind() const override { return "gbdt"; }
  // The complete-tree evaluator's scores when the model has one (see CompleteForest), else XGBoost's.
  std::vector<double> score_rows(const std::vector<std::vector<double>>& rows) const override;
  // The cascade (RankCascade) over the first kCascadePrefixTrees trees, on models of at least twice as many
  // trees that QuickScorer evaluates; else score_rows.
  std::vector<double> rank_rows(const std::vector<std::vector<double>>& rows, const RankCascade& c) const override;
  // 20 of the shipped model's 200: every distinct row of a pool (~900 on sympy) passes through
  // these, so they were half of the trees' cost at 40; LORO with 20 equals 40's to four places but for one
  // hypothesis target (R@20 0.8855 vs 0.8856, MRR 0.6658 both) and sympy's top 20 are the same for 500 targets
  // (docs/EVAL.md; 10 lost a little more: report folds' R@20 0.8733 vs 0.8736).
  static constexpr size_t kCascadePrefixTrees = 20;
  // Whether rank_rows can cascade on this model.
  bool can_cascade() const;
  // XGBoost's own prediction (the reference the complete-tree evaluator must equal bit for bit).
  std::vector<double> score_rows_xgboost(const std::vector<std::vector<double>>& rows) const;
  // Whether score_rows() runs the complete-tree evaluator (false: the model has a shape it does not cover).
  bool has_complete_forest() const { return forest_ != nullptr; }
  // "quickscorer" (QuickScorer's traversal of the complete trees), "complete-tree" (level by level) or
  // "xgboost": the first of these that reproduces XGBoost's scores on this model.
  const char* evaluator() const;
  std::string to_json() const override;
  const std::string& provenance() const override { return provenance_json_; }
  const GbdtParams& params() const { return params_; }

 private:
  GbdtRanker() = default;
  // Builds forest_ from the model's trees (`model`: XGBoost's JSON, `model_text` its text) when the
  // complete-tree evaluator reproduces XGBoost on them.
  void compile_forest(const nlohmann::json& model, const std::string& model_text);
  std::vector<float> predict_xgboost(const std::vector<float>& x, size_t rows) const;
  struct CompleteForest;
  // Which evaluator of `f` equals XGBoost bit for bit on probe rows (an enum of gbdt.cpp).
  int check_forest(CompleteForest& f) const;
  void* booster_ = nullptr;  // BoosterHandle (XGBoost's C API keeps its types in its own header)
  std::shared_ptr<const CompleteForest> forest_;
  GbdtParams params_;
  std::vector<std::string> features_;
  std::string provenance_json_ = "{}";
};

}  // namespace repoctx
