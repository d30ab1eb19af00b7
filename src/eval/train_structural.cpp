#include "eval/train_structural.h"

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>
#include <numeric>

#include "eval/gbdt_training.h"
#include "eval/logistic_irls.h"
#include "eval/retrieval_eval.h"
#include "util/cancel.h"
#include "util/error.h"
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

// Listwise (softmax over each target's candidates; a conditional logit) by Newton's method. Per target q
// with positives P: loss_q = -(1/|P|) sum_{i in P} log softmax(X_q beta)_i, gradient E_p[x] - mean_P x,
// Hessian Cov_p[x]. Targets without a positive in the pool carry no information and are skipped. Negatives
// are subsampled like the logistic loss's, each kept one standing for w = all/kept of them through a log(w)
// offset on its logit (sampled softmax), which keeps the fit fast on large pools.
Eigen::VectorXd fit_listwise(const std::vector<const StructuralRepoSamples*>& repos, const StructuralModel& m,
                             const TrainOptions& o, double* mean_loss) {
  const long d = static_cast<long>(m.features.size());
  std::vector<Eigen::MatrixXd> Xs;
  std::vector<Eigen::VectorXd> offsets;  // log of each kept row's weight (sampled softmax)
  std::vector<std::vector<long>> pos;
  for (const auto* rs : repos)
    for (const auto& t : rs->targets) {
      std::vector<size_t> rows, neg;
      for (size_t i = 0; i < t.positive.size(); ++i) (t.positive[i] ? rows : neg).push_back(i);
      if (rows.empty()) continue;
      size_t n_pos = rows.size();
      auto key = [&](size_t i) { return hash64(std::to_string(o.seed) + "|" + std::to_string(t.candidates[i])); };
      std::sort(neg.begin(), neg.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
      size_t keep = std::min<size_t>(neg.size(), static_cast<size_t>(o.negatives));
      double w = keep ? static_cast<double>(neg.size()) / static_cast<double>(keep) : 1;
      rows.insert(rows.end(), neg.begin(), neg.begin() + static_cast<long>(keep));
      Eigen::MatrixXd X(static_cast<long>(rows.size()), d);
      Eigen::VectorXd off = Eigen::VectorXd::Zero(static_cast<long>(rows.size()));
      for (size_t r = 0; r < rows.size(); ++r) {
        for (long j = 0; j < d; ++j)
          X(static_cast<long>(r), j) = (t.features[rows[r]][static_cast<size_t>(j)] - m.mean[j]) / m.scale[j];
        if (r >= n_pos) off(static_cast<long>(r)) = std::log(w);
      }
      std::vector<long> p(n_pos);
      std::iota(p.begin(), p.end(), 0L);
      Xs.push_back(std::move(X));
      offsets.push_back(std::move(off));
      pos.push_back(std::move(p));
    }
  // The penalised loss, and (when asked) its gradient and Hessian at beta.
  auto evaluate = [&](const Eigen::VectorXd& beta, Eigen::VectorXd* grad, Eigen::MatrixXd* H) {
    double loss = 0.5 * o.l2 * beta.squaredNorm();
    if (grad) *grad = o.l2 * beta;
    if (H) *H = Eigen::MatrixXd::Identity(d, d) * o.l2;
    for (size_t q = 0; q < Xs.size(); ++q) {
      const Eigen::MatrixXd& X = Xs[q];
      Eigen::VectorXd z = X * beta + offsets[q];
      double zmax = z.maxCoeff();
      Eigen::VectorXd p = (z.array() - zmax).exp().matrix();
      double norm = p.sum();
      p /= norm;
      double lse = zmax + std::log(norm);
      double n_pos = static_cast<double>(pos[q].size());
      for (long i : pos[q]) loss += (lse - z(i)) / n_pos;
      if (!grad) continue;
      Eigen::VectorXd ex = X.transpose() * p;
      Eigen::VectorXd mp = Eigen::VectorXd::Zero(d);
      for (long i : pos[q]) mp += X.row(i).transpose();
      *grad += ex - mp / n_pos;
      *H += X.transpose() * p.asDiagonal() * X - ex * ex.transpose();
    }
    return loss;
  };
  // Newton with step halving: a full Newton step from zero can overshoot on nearly separating features.
  Eigen::VectorXd beta = Eigen::VectorXd::Zero(d), grad;
  Eigen::MatrixXd H;
  double loss = evaluate(beta, nullptr, nullptr);
  for (int it = 0; it < o.iterations; ++it) {
    throw_if_interrupted("no model is written");
    evaluate(beta, &grad, &H);
    Eigen::VectorXd step = H.ldlt().solve(grad);
    double t = 1;
    for (; t > 1e-4; t /= 2) {
      double next = evaluate(beta - t * step, nullptr, nullptr);
      if (next <= loss) {
        loss = next;
        break;
      }
    }
    if (t <= 1e-4) break;
    beta -= t * step;
    if (t * step.norm() < 1e-6) break;
  }
  *mean_loss = Xs.empty() ? 0 : loss / static_cast<double>(Xs.size());
  return beta;
}

void fit_binary(const Rows& rows, StructuralModel& m, const TrainOptions& o, double* mean_loss) {
  const size_t d = m.features.size(), n = rows.x.size();
  Eigen::MatrixXd X(n, d + 1);
  Eigen::VectorXd y(n), sw(n);
  for (size_t i = 0; i < n; ++i) {
    X(static_cast<long>(i), 0) = 1.0;
    for (size_t j = 0; j < d; ++j)
      X(static_cast<long>(i), static_cast<long>(j + 1)) = ((*rows.x[i])[j] - m.mean[j]) / m.scale[j];
    y(static_cast<long>(i)) = rows.label[i];
    sw(static_cast<long>(i)) = rows.weight[i];
  }
  double loss = 0;
  Eigen::VectorXd beta = fit_logistic_irls(X, y, sw, o.l2, o.iterations, &loss);
  *mean_loss = loss / std::max(1e-12, sw.sum());
  m.bias = beta(0);
  m.weights.resize(d);
  for (size_t j = 0; j < d; ++j) m.weights[j] = beta(static_cast<long>(j + 1));
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
  if (o.loss == "listwise") {
    Eigen::VectorXd beta = fit_listwise(repos, m, o, &r.log_loss);
    m.bias = 0;  // a per-target softmax has no intercept: only the order of a target's candidates counts
    m.weights.assign(beta.data(), beta.data() + beta.size());
  } else {
    fit_binary(rows, m, o, &r.log_loss);
  }
  nlohmann::json prov = {
      {"trained_on", r.repos},         {"targets", r.targets}, {"rows", r.rows}, {"positives", r.positives},
      {"samples_per_repo", o.samples}, {"seed", o.seed},       {"l2", o.l2},     {"loss", o.loss},
      {"log_loss", r.log_loss}};
  m.provenance_json = prov.dump();
  if (rep) *rep = r;
  return m;
}

namespace {

// One group per target with a positive in its pool: every positive (label 1) and the same deterministic
// subsample of negatives (label 0) as the linear losses. Targets without a positive carry no ranking signal.
GbdtTrainSet gbdt_rows(const std::vector<const StructuralRepoSamples*>& repos, const TrainOptions& o, TrainReport& r) {
  GbdtTrainSet set(structural_feature_names().size());
  for (const auto* rs : repos) {
    r.repos.push_back(rs->repo);
    for (const auto& t : rs->targets) {
      ++r.targets;
      std::vector<size_t> pos, neg;
      for (size_t i = 0; i < t.positive.size(); ++i) (t.positive[i] ? pos : neg).push_back(i);
      if (pos.empty()) continue;
      auto key = [&](size_t i) { return hash64(std::to_string(o.seed) + "|" + std::to_string(t.candidates[i])); };
      std::sort(neg.begin(), neg.end(), [&](size_t a, size_t b) { return key(a) < key(b); });
      if (o.negatives > 0 && neg.size() > static_cast<size_t>(o.negatives))
        neg.resize(static_cast<size_t>(o.negatives));
      std::vector<size_t> rows = pos;
      rows.insert(rows.end(), neg.begin(), neg.end());
      std::sort(rows.begin(), rows.end());  // the stored (tie-break) order
      set.begin_group();
      for (size_t i : rows) set.add_row(t.features[i], t.positive[i] ? 1.0 : 0.0);
      r.positives += pos.size();
    }
  }
  r.rows = set.rows();
  return set;
}

}  // namespace

std::unique_ptr<StructuralRanker> fit_structural_ranker(const std::vector<const StructuralRepoSamples*>& repos,
                                                        const TrainOptions& o, TrainReport* rep) {
  if (o.ranker == "linear") return std::make_unique<StructuralModel>(fit_structural(repos, o, rep));
  if (o.ranker != "gbdt") throw Error(ExitCode::usage, "unknown structural ranker '" + o.ranker + "' (linear or gbdt)");
  TrainReport r;
  GbdtTrainSet set = gbdt_rows(repos, o, r);
  nlohmann::json prov = {{"trained_on", r.repos},
                         {"targets", r.targets},
                         {"rows", r.rows},
                         {"positives", r.positives},
                         {"samples_per_repo", o.samples},
                         {"seed", o.seed},
                         {"negatives_per_target", o.negatives},
                         {"ranker", "gbdt"},
                         {"gbdt", o.gbdt.to_json()}};
  auto m = train_gbdt(set, o.gbdt, prov.dump());
  if (rep) *rep = r;
  return m;
}

std::unique_ptr<StructuralRanker> train_structural(const std::vector<const Engine*>& engines, const TrainOptions& o,
                                                   TrainReport* rep) {
  std::vector<StructuralRepoSamples> samples;
  for (const Engine* e : engines) samples.push_back(extract_structural_samples(*e, o));
  std::vector<const StructuralRepoSamples*> ptrs;
  for (const auto& s : samples) ptrs.push_back(&s);
  return fit_structural_ranker(ptrs, o, rep);
}

}  // namespace repoctx
