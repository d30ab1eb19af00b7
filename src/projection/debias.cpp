#include "projection/debias.h"

#include <Eigen/Dense>

#include <cmath>
#include <random>

#include "util/error.h"

namespace repoctx {

MuPc1 build_mu_pc1(const std::vector<std::vector<float>>& P) {
  MuPc1 out;
  out.n = P.size();
  if (P.empty()) return out;
  const Eigen::Index m = static_cast<Eigen::Index>(P[0].size());
  Eigen::MatrixXd X(static_cast<Eigen::Index>(P.size()), m);
  for (size_t i = 0; i < P.size(); ++i) {
    if (static_cast<Eigen::Index>(P[i].size()) != m)
      throw Error(ExitCode::bad_input, "projections of different widths cannot be debiased together");
    for (Eigen::Index j = 0; j < m; ++j) X(static_cast<Eigen::Index>(i), j) = P[i][static_cast<size_t>(j)];
  }
  Eigen::RowVectorXd mu = X.colwise().mean();
  X.rowwise() -= mu;
  out.mu.resize(static_cast<size_t>(m));
  for (Eigen::Index j = 0; j < m; ++j) out.mu[static_cast<size_t>(j)] = static_cast<float>(mu(j));
  out.pc1.assign(static_cast<size_t>(m), 0.0f);
  if (P.size() < 2) return out;
  // Covariance m x m (m = d - k is a few hundred): a symmetric eigen-solve is exact and fast.
  Eigen::MatrixXd C = (X.transpose() * X) / static_cast<double>(P.size());
  Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(C);
  Eigen::VectorXd v = es.eigenvectors().col(m - 1);  // eigenvalues ascending
  double total = es.eigenvalues().sum();
  out.explained = total > 0 ? es.eigenvalues()(m - 1) / total : 0;
  // A fixed sign (largest component positive) keeps traces comparable across runs; eq. 3 does not care.
  Eigen::Index imax;
  v.cwiseAbs().maxCoeff(&imax);
  if (v(imax) < 0) v = -v;
  v.normalize();
  for (Eigen::Index j = 0; j < m; ++j) out.pc1[static_cast<size_t>(j)] = static_cast<float>(v(j));
  return out;
}

std::vector<float> debias(const std::vector<float>& p, const MuPc1& m) {
  std::vector<float> c(p.size());
  double dot = 0;
  for (size_t i = 0; i < p.size(); ++i) {
    c[i] = p[i] - (i < m.mu.size() ? m.mu[i] : 0.0f);
    dot += static_cast<double>(c[i]) * (i < m.pc1.size() ? m.pc1[i] : 0.0f);
  }
  for (size_t i = 0; i < c.size() && i < m.pc1.size(); ++i) c[i] = static_cast<float>(c[i] - dot * m.pc1[i]);
  return c;
}

double cosine(const std::vector<float>& a, const std::vector<float>& b) {
  double ab = 0, aa = 0, bb = 0;
  for (size_t i = 0; i < a.size() && i < b.size(); ++i) {
    ab += static_cast<double>(a[i]) * b[i];
    aa += static_cast<double>(a[i]) * a[i];
    bb += static_cast<double>(b[i]) * b[i];
  }
  return aa > 0 && bb > 0 ? ab / std::sqrt(aa * bb) : 0.0;
}

double mean_pairwise_cosine(const std::vector<std::vector<float>>& v) {
  if (v.size() < 2) return 0;
  double sum = 0;
  size_t n = 0;
  if (v.size() <= 2000) {
    for (size_t i = 0; i < v.size(); ++i)
      for (size_t j = i + 1; j < v.size(); ++j, ++n) sum += cosine(v[i], v[j]);
  } else {
    std::mt19937_64 rng(1);
    std::uniform_int_distribution<size_t> pick(0, v.size() - 1);
    for (; n < 200000; ++n) {
      size_t i = pick(rng), j = pick(rng);
      if (i == j) continue;
      sum += cosine(v[i], v[j]);
    }
  }
  return n ? sum / static_cast<double>(n) : 0;
}

static double norm(const std::vector<float>& a) {
  double s = 0;
  for (float x : a) s += static_cast<double>(x) * x;
  return std::sqrt(s);
}

StabilityResult estimate_stable_mu_pc1(
    std::vector<std::vector<float>> P,
    const std::function<std::optional<std::vector<std::vector<float>>>()>& next_batch, const StabilityOptions& o) {
  StabilityResult res;
  MuPc1 old = build_mu_pc1(P);
  for (;;) {
    auto batch = next_batch();
    if (!batch) break;  // all functions processed (Algorithm 1, line 13)
    for (auto& p : *batch) P.push_back(std::move(p));
    MuPc1 cur = build_mu_pc1(P);
    StabilityStep st;
    st.n = P.size();
    double on = norm(old.mu);
    std::vector<float> diff(cur.mu.size());
    for (size_t i = 0; i < diff.size(); ++i) diff[i] = cur.mu[i] - (i < old.mu.size() ? old.mu[i] : 0.0f);
    st.mu_change = on > 0 ? norm(diff) / on : (norm(diff) == 0 ? 0.0 : INFINITY);
    st.pc1_cos = std::fabs(cosine(old.pc1, cur.pc1));
    st.stable = st.mu_change <= o.tau_mu && st.pc1_cos >= o.tau_pc1;
    res.history.push_back(st);
    old = std::move(cur);
    if (st.stable) {
      res.converged = true;
      break;
    }
  }
  res.estimate = build_mu_pc1(P);
  return res;
}

}  // namespace repoctx
