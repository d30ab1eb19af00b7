#include "eval/train_structural.h"

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "eval/retrieval_eval.h"
#include "util/cancel.h"
#include "util/hash.h"
#include "util/progress.h"

namespace repoctx {

StructuralRepoSamples extract_structural_samples(const Engine& e, const TrainOptions& o) {
  EvalOptions eo;
  eo.samples = o.samples;
  eo.seed = o.seed;
  eo.include_tests = o.include_tests;
  auto targets = sample_targets(e, eo);
  StructuralFeatures feats(e);
  StructuralRepoSamples out;
  out.repo = e.view().root();
  Progress prog("features " + e.view().root(), targets.size());
  for (const auto& t : targets) {
    throw_if_interrupted("no model is written");
    TargetRef ref{e.view().entities()[t.entity].file, t.entity};
    TargetContext ctx = e.make_context(ref);
    auto cand = feats.build(ctx, ctx.visible_text, o.params);
    // The retriever breaks score ties by entity_before; keeping the candidates in that order lets a
    // stable sort by score reproduce its ranking without the engine.
    std::vector<size_t> order(cand.entities.size());
    std::iota(order.begin(), order.end(), size_t{0});
    std::sort(order.begin(), order.end(),
              [&](size_t a, size_t b) { return entity_before(e.view(), cand.entities[a], cand.entities[b]); });
    StructuralTargetSample s;
    s.entity = t.entity;
    s.oracle_size = t.oracle.size();
    for (size_t i : order) {
      s.candidates.push_back(cand.entities[i]);
      s.features.push_back(std::move(cand.features[i]));
      s.positive.push_back(std::binary_search(t.oracle.begin(), t.oracle.end(), cand.entities[i]) ? 1 : 0);
    }
    out.targets.push_back(std::move(s));
    prog.add();
  }
  prog.finish();
  return out;
}

namespace {

struct Rows {
  std::vector<const std::vector<double>*> x;
  std::vector<double> label, weight;
};

// Every positive, and a deterministic subsample of each target's negatives weighted to stand for all of them.
Rows training_rows(const std::vector<const StructuralRepoSamples*>& repos, const TrainOptions& o, TrainReport& r) {
  Rows rows;
  for (const auto* rs : repos) {
    r.repos.push_back(rs->repo);
    for (const auto& t : rs->targets) {
      std::vector<size_t> neg;
      for (size_t i = 0; i < t.candidates.size(); ++i) {
        if (t.positive[i]) {
          rows.x.push_back(&t.features[i]);
          rows.label.push_back(1);
          rows.weight.push_back(1);
          ++r.positives;
        } else {
          neg.push_back(i);
        }
      }
      auto key = [&](size_t i) { return hash64(std::to_string(o.seed) + "|" + std::to_string(t.candidates[i])); };
      std::sort(neg.begin(), neg.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
      size_t keep = std::min<size_t>(neg.size(), static_cast<size_t>(o.negatives));
      double w = keep ? static_cast<double>(neg.size()) / static_cast<double>(keep) : 0;
      for (size_t k = 0; k < keep; ++k) {
        rows.x.push_back(&t.features[neg[k]]);
        rows.label.push_back(0);
        rows.weight.push_back(w);
      }
      ++r.targets;
    }
  }
  r.rows = rows.x.size();
  return rows;
}

// Weighted, L2-regularised logistic regression by Newton's method (IRLS). Eigen's LDLT solves the
// (d+1)x(d+1) normal equations; the bias is not regularised. Returns beta (bias first) and the mean loss.
Eigen::VectorXd fit_logistic(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const Eigen::VectorXd& sw,
                             const TrainOptions& o, double* mean_loss) {
  const long d1 = X.cols(), n = X.rows();
  Eigen::VectorXd beta = Eigen::VectorXd::Zero(d1);
  Eigen::MatrixXd reg = Eigen::MatrixXd::Identity(d1, d1) * o.l2;
  reg(0, 0) = 0;
  double loss = 0;
  for (int it = 0; it < o.iterations; ++it) {
    throw_if_interrupted("no model is written");
    Eigen::VectorXd z = X * beta;
    Eigen::VectorXd p = z.unaryExpr([](double v) { return 1.0 / (1.0 + std::exp(-v)); });
    Eigen::VectorXd w = (p.array() * (1.0 - p.array()) * sw.array()).max(1e-12).matrix();
    Eigen::VectorXd grad = X.transpose() * (sw.array() * (p - y).array()).matrix() + reg * beta;
    Eigen::MatrixXd H = X.transpose() * w.asDiagonal() * X + reg;
    Eigen::VectorXd step = H.ldlt().solve(grad);
    beta -= step;
    loss = 0;
    for (long i = 0; i < n; ++i) {
      double pi = std::clamp(p(i), 1e-12, 1 - 1e-12);
      loss -= sw(i) * (y(i) * std::log(pi) + (1 - y(i)) * std::log(1 - pi));
    }
    if (step.norm() < 1e-8) break;
  }
  *mean_loss = loss / std::max(1e-12, sw.sum());
  return beta;
}

}  // namespace

StructuralModel fit_structural(const std::vector<const StructuralRepoSamples*>& repos, const TrainOptions& o,
                               TrainReport* rep) {
  const size_t d = structural_feature_names().size();
  TrainReport r;
  Rows rows = training_rows(repos, o, r);
  const size_t n = rows.x.size();
  StructuralModel m;
  m.features = structural_feature_names();
  m.mean.assign(d, 0);
  m.scale.assign(d, 1);
  double wsum = 0;
  for (size_t i = 0; i < n; ++i) wsum += rows.weight[i];
  for (size_t j = 0; j < d && n > 0; ++j) {
    double mu = 0, var = 0;
    for (size_t i = 0; i < n; ++i) mu += rows.weight[i] * (*rows.x[i])[j];
    mu /= wsum;
    for (size_t i = 0; i < n; ++i) var += rows.weight[i] * ((*rows.x[i])[j] - mu) * ((*rows.x[i])[j] - mu);
    var /= wsum;
    m.mean[j] = mu;
    m.scale[j] = var > 1e-12 ? std::sqrt(var) : 1.0;
  }
  Eigen::MatrixXd X(n, d + 1);
  Eigen::VectorXd y(n), sw(n);
  for (size_t i = 0; i < n; ++i) {
    X(static_cast<long>(i), 0) = 1.0;
    for (size_t j = 0; j < d; ++j)
      X(static_cast<long>(i), static_cast<long>(j + 1)) = ((*rows.x[i])[j] - m.mean[j]) / m.scale[j];
    y(static_cast<long>(i)) = rows.label[i];
    sw(static_cast<long>(i)) = rows.weight[i];
  }
  Eigen::VectorXd beta = fit_logistic(X, y, sw, o, &r.log_loss);
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

StructuralModel train_structural(const std::vector<const Engine*>& engines, const TrainOptions& o, TrainReport* rep) {
  std::vector<StructuralRepoSamples> samples;
  for (const Engine* e : engines) samples.push_back(extract_structural_samples(*e, o));
  std::vector<const StructuralRepoSamples*> ptrs;
  for (const auto& s : samples) ptrs.push_back(&s);
  return fit_structural(ptrs, o, rep);
}

}  // namespace repoctx
