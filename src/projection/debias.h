// PCA debiasing of projections (ProjAgent eq. 2-3) and the stable estimate of the mean and first
// principal component (Algorithm 1).
//
// Projections of unrelated steps have uniformly high cosine (anisotropy: a common direction dominates).
// With mu the mean and PC1 the first principal component of a representative set,
//   debias(p) = (p - mu) - ((p - mu) . PC1) PC1,
// leaving vectors that are centred and orthogonal to PC1, whose cosines discriminate.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <vector>

namespace repoctx {

struct MuPc1 {
  std::vector<float> mu, pc1;  // pc1 has unit length
  size_t n = 0;                // projections it was estimated from
  double explained = 0;        // share of the variance along PC1
};

// Mean and first principal component (eigenvector of the covariance with the largest eigenvalue).
MuPc1 build_mu_pc1(const std::vector<std::vector<float>>& projections);

std::vector<float> debias(const std::vector<float>& p, const MuPc1& m);

double cosine(const std::vector<float>& a, const std::vector<float>& b);
// Mean cosine over all pairs (the anisotropy the paper reports), exact for n <= 2000, sampled above.
double mean_pairwise_cosine(const std::vector<std::vector<float>>& v);

struct StabilityOptions {
  double tau_mu = 1e-3;   // eq. 4: ||mu_curr - mu_old|| / ||mu_old|| <= tau_mu
  double tau_pc1 = 0.99;  // eq. 5: |cos(PC1_old, PC1_curr)| >= tau_pc1
  int batch_files = 5;    // files added per iteration
};

struct StabilityStep {
  size_t n = 0;          // projections after this iteration
  double mu_change = 0;  // eq. 4's left side
  double pc1_cos = 0;    // eq. 5's left side
  bool stable = false;
};

struct StabilityResult {
  MuPc1 estimate;
  std::vector<StabilityStep> history;
  bool converged = false;  // false when every function was processed before both criteria held
};

// Algorithm 1. `next_batch()` decomposes the functions of the next `batch_files` ranked files and returns
// their projections, or nullopt when all functions have been processed.
StabilityResult estimate_stable_mu_pc1(
    std::vector<std::vector<float>> initial,
    const std::function<std::optional<std::vector<std::vector<float>>>()>& next_batch, const StabilityOptions& o = {});

}  // namespace repoctx
