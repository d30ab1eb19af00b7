// The reasoning subspace of a model (ProjAgent section 3, after Hu et al.'s HARP): from the SVD of the
// unembedding matrix W = U S V^T (W: vocab x d), the right singular vectors of the dominant singular values
// span the semantic subspace and the rest span the reasoning subspace V_R; a hidden state h projects to
// proj_R(h) = V_R^T h.
//
// Energy (ProjAgent's threshold, 0.98 by default): energy(k) = sum_{i<=k} s_i^2 / sum_i s_i^2 with singular
// values sorted decreasing (the squared singular values are the variance W captures along each direction).
// k = the smallest k with energy(k) >= threshold; V_R = the d - k right singular vectors after it.
// (`EnergyDefinition::linear` uses s_i instead of s_i^2, for comparison with papers that do.)
//
// W is never held in memory: it is read in row blocks from the model file and only the d x d Gram matrix
// W^T W (in double) is accumulated (BLAS dsyrk); its eigen-decomposition (LAPACK dsyevd) gives s_i^2 and
// V. The result is cached per model file and threshold.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "llm/backend.h"

namespace repoctx {

enum class EnergyDefinition { squared, linear };

struct SubspaceOptions {
  double energy_threshold = 0.98;
  EnergyDefinition energy = EnergyDefinition::squared;
  int64_t block_rows = 2048;  // rows of W read at a time
  std::string cache_dir;      // empty = user_cache_dir()/subspaces (util/paths.h)
  bool use_cache = true;
};

class ReasoningSubspace {
 public:
  // Computes (or loads from the cache) the subspace of the backend's model. Needs a white-box backend.
  static ReasoningSubspace compute(LlmBackend& model, const SubspaceOptions& o = {});
  // From an explicit matrix (row-major vocab x d), for tests.
  static ReasoningSubspace from_matrix(const std::vector<float>& w, int64_t rows, int64_t dim,
                                       const SubspaceOptions& o = {});

  int dim() const { return dim_; }                                                     // d
  int k() const { return k_; }                                                         // dominant (semantic) directions
  int reasoning_dim() const { return dim_ - k_; }                                      // d - k
  double reasoning_fraction() const { return static_cast<double>(dim_ - k_) / dim_; }  // the paper's ~5%
  double threshold() const { return threshold_; }
  const std::vector<double>& singular_values() const { return singular_; }  // decreasing
  std::vector<double> energy_curve() const;                                 // energy(k) for k = 1..d
  const std::string& id() const { return id_; }                             // model identity + threshold + definition
  double seconds() const { return seconds_; }                               // time of the computation (0 when cached)
  bool from_cache() const { return from_cache_; }

  // proj_R(h) = V_R^T h, for one state (d floats) -> d - k floats.
  std::vector<float> project(const float* h) const;
  // Mean over rows of V_R^T h_t: the projection of a step's response (rows x d, row-major).
  std::vector<float> project_mean(const float* rows, size_t n_rows) const;
  // Column-major d x (d-k) basis, orthonormal.
  const std::vector<float>& basis() const { return basis_; }

 private:
  void finish(const std::vector<double>& eigenvalues_asc, const std::vector<double>& eigvecs_asc_colmajor,
              const SubspaceOptions& o);
  bool load(const std::string& path);
  void save(const std::string& path) const;
  int dim_ = 0, k_ = 0;
  double threshold_ = 0, seconds_ = 0;
  bool from_cache_ = false;
  EnergyDefinition energy_ = EnergyDefinition::squared;
  std::vector<double> singular_;
  std::vector<float> basis_;  // column-major d x (d - k): column j = j-th reasoning direction
  std::string id_;
};

// Accumulates G = W^T W over row blocks and returns its eigen-decomposition, eigenvalues increasing
// (column j of the column-major matrix is the eigenvector of eigenvalue j). Exposed for the benchmarks.
void gram_eigen(const std::function<void(const std::function<void(int64_t, int64_t, const float*)>&)>& blocks,
                int64_t dim, std::vector<double>& eigenvalues_asc, std::vector<double>& eigvecs_asc_colmajor);

}  // namespace repoctx
