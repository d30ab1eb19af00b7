#include "eval/train_structural.h"

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

#include "eval/retrieval_eval.h"
#include "util/cancel.h"
#include "util/hash.h"
#include "util/progress.h"

namespace repoctx {

StructuralModel train_structural(const std::vector<const Engine*>& engines, const TrainOptions& o, TrainReport* rep) {
  const size_t d = structural_feature_names().size();
  std::vector<std::vector<double>> rows;
  std::vector<double> labels, weights;
  TrainReport r;
  for (const Engine* e : engines) {
    EvalOptions eo;
    eo.samples = o.samples;
    eo.seed = o.seed;
    auto targets = sample_targets(*e, eo);
    StructuralFeatures feats(*e);
    Progress prog("features " + e->view().root(), targets.size());
    r.repos.push_back(e->view().root());
    for (const auto& t : targets) {
      throw_if_interrupted("no model is written");
      TargetRef ref{e->view().entities()[t.entity].file, t.entity};
      TargetContext ctx = e->make_context(ref);
      auto cand = feats.build(ctx, ctx.visible_text, o.params);
      std::vector<size_t> neg;
      for (size_t i = 0; i < cand.entities.size(); ++i) {
        bool pos = std::binary_search(t.oracle.begin(), t.oracle.end(), cand.entities[i]);
        if (pos) {
          rows.push_back(cand.features[i]);
          labels.push_back(1);
          weights.push_back(1);
          ++r.positives;
        } else {
          neg.push_back(i);
        }
      }
      // A deterministic subsample of negatives, each weighted to stand for the ones left out.
      std::sort(neg.begin(), neg.end(), [&](size_t a, size_t b) {
        return hash64(std::to_string(o.seed) + "|" + std::to_string(cand.entities[a])) <
               hash64(std::to_string(o.seed) + "|" + std::to_string(cand.entities[b]));
      });
      size_t keep = std::min<size_t>(neg.size(), static_cast<size_t>(o.negatives));
      double w = keep ? static_cast<double>(neg.size()) / static_cast<double>(keep) : 0;
      for (size_t k = 0; k < keep; ++k) {
        rows.push_back(cand.features[neg[k]]);
        labels.push_back(0);
        weights.push_back(w);
      }
      ++r.targets;
      prog.add();
    }
  }
  r.rows = rows.size();
  const size_t n = rows.size();
  Eigen::MatrixXd X(n, d + 1);
  Eigen::VectorXd y(n), sw(n);
  StructuralModel m;
  m.features = structural_feature_names();
  m.mean.assign(d, 0);
  m.scale.assign(d, 1);
  double wsum = 0;
  for (size_t i = 0; i < n; ++i) wsum += weights[i];
  for (size_t j = 0; j < d; ++j) {
    double mu = 0, var = 0;
    for (size_t i = 0; i < n; ++i) mu += weights[i] * rows[i][j];
    mu /= wsum;
    for (size_t i = 0; i < n; ++i) var += weights[i] * (rows[i][j] - mu) * (rows[i][j] - mu);
    var /= wsum;
    m.mean[j] = mu;
    m.scale[j] = var > 1e-12 ? std::sqrt(var) : 1.0;
  }
  for (size_t i = 0; i < n; ++i) {
    X(static_cast<long>(i), 0) = 1.0;
    for (size_t j = 0; j < d; ++j)
      X(static_cast<long>(i), static_cast<long>(j + 1)) = (rows[i][j] - m.mean[j]) / m.scale[j];
    y(static_cast<long>(i)) = labels[i];
    sw(static_cast<long>(i)) = weights[i];
  }
  // Weighted, L2-regularised logistic regression by Newton's method (IRLS). Eigen's LDLT solves the
  // (d+1)x(d+1) normal equations; the bias is not regularised.
  Eigen::VectorXd beta = Eigen::VectorXd::Zero(static_cast<long>(d + 1));
  Eigen::MatrixXd reg = Eigen::MatrixXd::Identity(static_cast<long>(d + 1), static_cast<long>(d + 1)) * o.l2;
  reg(0, 0) = 0;
  double loss = 0;
  for (int it = 0; it < o.iterations; ++it) {
    Eigen::VectorXd z = X * beta;
    Eigen::VectorXd p = z.unaryExpr([](double v) { return 1.0 / (1.0 + std::exp(-v)); });
    Eigen::VectorXd w = (p.array() * (1.0 - p.array()) * sw.array()).max(1e-12).matrix();
    Eigen::VectorXd grad = X.transpose() * (sw.array() * (p - y).array()).matrix() + reg * beta;
    Eigen::MatrixXd H = X.transpose() * w.asDiagonal() * X + reg;
    Eigen::VectorXd step = H.ldlt().solve(grad);
    beta -= step;
    loss = 0;
    for (long i = 0; i < static_cast<long>(n); ++i) {
      double pi = std::clamp(p(i), 1e-12, 1 - 1e-12);
      loss -= sw(i) * (y(i) * std::log(pi) + (1 - y(i)) * std::log(1 - pi));
    }
    if (step.norm() < 1e-8) break;
  }
  r.log_loss = loss / wsum;
  m.bias = beta(0);
  m.weights.resize(d);
  for (size_t j = 0; j < d; ++j) m.weights[j] = beta(static_cast<long>(j + 1));
  nlohmann::json prov = {
      {"trained_on", r.repos},         {"targets", r.targets}, {"rows", r.rows}, {"positives", r.positives},
      {"samples_per_repo", o.samples}, {"seed", o.seed},       {"l2", o.l2},     {"log_loss", r.log_loss}};
  m.provenance_json = prov.dump();
  if (rep) *rep = r;
  return m;
}

}  // namespace repoctx
