// The projection engine's linear algebra against independent constructions, Algorithm 1's stopping rule
// on constructed sequences, eq. 3's guarantees, and the vector stores.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <random>

#include "projection/debias.h"
#include "projection/subspace.h"
#include "projection/vector_store.h"
#include "util/error.h"

using namespace repoctx;

namespace {

// W = Q1 diag(s) Q2^T with orthonormal Q1 (rows x d) and orthogonal Q2 (d x d): known singular values s
// and right singular vectors Q2.
std::vector<float> matrix_with_singular_values(const std::vector<double>& s, int rows, Eigen::MatrixXd& Q2,
                                               uint64_t seed) {
  const int d = static_cast<int>(s.size());
  std::mt19937_64 rng(seed);
  std::normal_distribution<double> nd;
  Eigen::MatrixXd A(rows, d), B(d, d);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < d; ++j) A(i, j) = nd(rng);
  for (int i = 0; i < d; ++i)
    for (int j = 0; j < d; ++j) B(i, j) = nd(rng);
  Eigen::MatrixXd Q1 = Eigen::HouseholderQR<Eigen::MatrixXd>(A).householderQ() * Eigen::MatrixXd::Identity(rows, d);
  Q2 = Eigen::HouseholderQR<Eigen::MatrixXd>(B).householderQ();
  Eigen::MatrixXd W = Q1 * Eigen::VectorXd::Map(s.data(), d).asDiagonal() * Q2.transpose();
  std::vector<float> w(static_cast<size_t>(rows) * static_cast<size_t>(d));
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < d; ++j)
      w[static_cast<size_t>(i) * static_cast<size_t>(d) + static_cast<size_t>(j)] = static_cast<float>(W(i, j));
  return w;
}

}  // namespace

TEST(Subspace, RecoversKnownSingularValuesAndTheReasoningDirections) {
  const int d = 40, rows = 3000;
  std::vector<double> s;
  for (int i = 0; i < d; ++i) s.push_back(i < 30 ? 10.0 - 0.2 * i : 0.5 - 0.04 * (i - 30));  // 30 big, 10 small
  Eigen::MatrixXd Q2;
  auto w = matrix_with_singular_values(s, rows, Q2, 7);
  SubspaceOptions o;
  o.block_rows = 257;  // blocks that do not divide the rows
  o.energy_threshold = 0.98;
  auto sub = ReasoningSubspace::from_matrix(w, rows, d, o);
  ASSERT_EQ(sub.dim(), d);
  for (int i = 0; i < d; ++i)
    EXPECT_NEAR(sub.singular_values()[static_cast<size_t>(i)], s[static_cast<size_t>(i)], 1e-3) << i;
  // k from the definition: smallest k with sum_{i<=k} s_i^2 / sum s_i^2 >= 0.98.
  double total = 0;
  for (double x : s) total += x * x;
  int k = 0;
  for (double acc = 0; k < d;) {
    acc += s[static_cast<size_t>(k)] * s[static_cast<size_t>(k)];
    ++k;
    if (acc / total >= 0.98) break;
  }
  EXPECT_EQ(sub.k(), k);
  EXPECT_NEAR(sub.reasoning_fraction(), static_cast<double>(d - k) / d, 1e-12);
  // V_R spans the last d - k right singular vectors: the same orthogonal projector.
  const int m = sub.reasoning_dim();
  Eigen::MatrixXd VR(d, m), expected = Q2.rightCols(m);
  for (int j = 0; j < m; ++j)
    for (int i = 0; i < d; ++i) VR(i, j) = sub.basis()[static_cast<size_t>(j * d + i)];
  EXPECT_LT(((VR * VR.transpose()) - expected * expected.transpose()).norm(), 1e-3);
  EXPECT_LT((VR.transpose() * VR - Eigen::MatrixXd::Identity(m, m)).norm(), 1e-4);
  // proj_R(h) = V_R^T h, and mean pooling commutes with it.
  std::vector<float> h(static_cast<size_t>(2 * d));
  for (size_t i = 0; i < h.size(); ++i) h[i] = static_cast<float>(std::sin(static_cast<double>(i)));
  auto p0 = sub.project(h.data()), p1 = sub.project(h.data() + d), pm = sub.project_mean(h.data(), 2);
  for (int j = 0; j < m; ++j)
    EXPECT_NEAR(pm[static_cast<size_t>(j)], 0.5 * (p0[static_cast<size_t>(j)] + p1[static_cast<size_t>(j)]), 1e-5);
  // The linear-energy definition keeps more dominant directions for the same threshold.
  o.energy = EnergyDefinition::linear;
  EXPECT_GE(ReasoningSubspace::from_matrix(w, rows, d, o).k(), sub.k());
}

TEST(Debias, CentredAndOrthogonalToPc1AndAnisotropyDrops) {
  // A common offset and a dominant shared direction, as the paper observes for raw projections.
  std::mt19937_64 rng(3);
  std::normal_distribution<float> nd;
  const int m = 24, n = 300;
  std::vector<float> offset(m), dir(m);
  for (int i = 0; i < m; ++i) {
    offset[static_cast<size_t>(i)] = 5.0f + 0.1f * static_cast<float>(i);
    dir[static_cast<size_t>(i)] = nd(rng);
  }
  std::vector<std::vector<float>> P;
  for (int k = 0; k < n; ++k) {
    std::vector<float> p(m);
    float a = 3.0f * nd(rng);
    for (int i = 0; i < m; ++i)
      p[static_cast<size_t>(i)] = offset[static_cast<size_t>(i)] + a * dir[static_cast<size_t>(i)] + 0.3f * nd(rng);
    P.push_back(p);
  }
  auto mp = build_mu_pc1(P);
  std::vector<std::vector<float>> D;
  for (const auto& p : P) D.push_back(debias(p, mp));
  std::vector<double> mean(m, 0.0);
  for (const auto& v : D) {
    double along = 0;
    for (int i = 0; i < m; ++i) {
      along += static_cast<double>(v[static_cast<size_t>(i)]) * mp.pc1[static_cast<size_t>(i)];
      mean[static_cast<size_t>(i)] += v[static_cast<size_t>(i)] / n;
    }
    EXPECT_NEAR(along, 0.0, 1e-4);  // orthogonal to PC1
  }
  for (double x : mean) EXPECT_NEAR(x, 0.0, 1e-4);  // centred
  EXPECT_GT(std::fabs(cosine(mp.pc1, dir)), 0.99);  // PC1 found the shared direction
  double before = mean_pairwise_cosine(P), after = mean_pairwise_cosine(D);
  EXPECT_GT(before, 0.7);
  EXPECT_LT(std::fabs(after), 0.05);
}

TEST(Algorithm1, StopsWhenMeanAndPc1AreStableOrWhenFilesRunOut) {
  // Batches drawn from one fixed distribution: mean and PC1 settle, and the loop stops early.
  std::mt19937_64 rng(11);
  std::normal_distribution<float> nd;
  const int m = 8;
  auto sample = [&](int count) {
    std::vector<std::vector<float>> b;
    for (int k = 0; k < count; ++k) {
      std::vector<float> p(m);
      float a = 4.0f * nd(rng);
      for (int i = 0; i < m; ++i) p[static_cast<size_t>(i)] = 10.0f + (i == 0 ? a : 0.0f) + 0.5f * nd(rng);
      b.push_back(p);
    }
    return b;
  };
  int calls = 0;
  auto res = estimate_stable_mu_pc1(sample(400), [&]() -> std::optional<std::vector<std::vector<float>>> {
    ++calls;
    if (calls > 1000) return std::nullopt;
    return sample(400);
  });
  EXPECT_TRUE(res.converged);
  ASSERT_FALSE(res.history.empty());
  EXPECT_LT(calls, 1000);
  const auto& last = res.history.back();
  EXPECT_LE(last.mu_change, 1e-3);
  EXPECT_GE(last.pc1_cos, 0.99);
  for (size_t i = 0; i + 1 < res.history.size(); ++i) EXPECT_FALSE(res.history[i].stable);

  // Batches whose mean keeps drifting never satisfy eq. 4: the loop ends when the files run out.
  int batches = 0;
  float shift = 0;
  auto drift = estimate_stable_mu_pc1(sample(50), [&]() -> std::optional<std::vector<std::vector<float>>> {
    if (++batches > 6) return std::nullopt;
    shift += 100.0f;
    auto b = sample(50);
    for (auto& p : b)
      for (auto& x : p) x += shift;
    return b;
  });
  EXPECT_FALSE(drift.converged);
  EXPECT_EQ(drift.history.size(), 6u);
  EXPECT_EQ(drift.estimate.n, 50u + 6u * 50u);

  // Stricter thresholds are honoured (configurable).
  StabilityOptions strict;
  strict.tau_mu = 0.0;
  strict.tau_pc1 = 1.1;
  int n = 0;
  auto never = estimate_stable_mu_pc1(
      sample(20),
      [&]() -> std::optional<std::vector<std::vector<float>>> {
        if (++n > 3) return std::nullopt;
        return sample(20);
      },
      strict);
  EXPECT_FALSE(never.converged);
}

TEST(VectorStore, FlatIsExactAndHnswRecallsItsNeighbours) {
  const int d = 48, n = 3000;
  std::mt19937_64 rng(5);
  std::normal_distribution<float> nd;
  std::vector<std::vector<float>> data(n, std::vector<float>(d));
  for (auto& v : data)
    for (auto& x : v) x = nd(rng);
  auto flat = make_vector_store("flat", d);
  auto hnsw = make_vector_store("hnsw", d);
  for (int i = 0; i < n; ++i) {
    flat->add(i, data[static_cast<size_t>(i)].data());
    hnsw->add(i, data[static_cast<size_t>(i)].data());
  }
  EXPECT_EQ(flat->size(), static_cast<size_t>(n));
  double recall = 0;
  for (int qi = 0; qi < 50; ++qi) {
    std::vector<float> q(d);
    for (auto& x : q) x = nd(rng);
    auto exact = flat->search(q.data(), 10);
    // Against a direct computation.
    std::vector<std::pair<float, int>> brute;
    for (int i = 0; i < n; ++i) brute.push_back({static_cast<float>(cosine(q, data[static_cast<size_t>(i)])), i});
    std::sort(brute.begin(), brute.end(), [](auto& a, auto& b) { return a.first > b.first; });
    ASSERT_EQ(exact.size(), 10u);
    for (size_t r = 0; r < 10; ++r) {
      EXPECT_EQ(exact[r].first, brute[r].second);
      EXPECT_NEAR(exact[r].second, brute[r].first, 1e-5);
    }
    auto approx = hnsw->search(q.data(), 10);
    int hit = 0;
    for (const auto& a : approx)
      for (const auto& e : exact) hit += a.first == e.first;
    recall += hit / 10.0;
    // Thresholded search returns only scores above it.
    for (const auto& s : flat->search(q.data(), 100, 0.3f)) EXPECT_GE(s.second, 0.3f);
  }
  EXPECT_GT(recall / 50, 0.95);
  EXPECT_THROW(make_vector_store("annoy", d), Error);
}
