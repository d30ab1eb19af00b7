#include "projection/subspace.h"

#include <cblas.h>
#include <lapacke.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "util/dynlib.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/paths.h"

namespace repoctx {

namespace {

// The three BLAS/LAPACK routines of the subspace, resolved from OpenBLAS and LAPACKE at first use
// (util/dynlib.h says why not at program start); the headers give their exact types.
struct Blas {
  DynLib cblas{{"libopenblas.so.0", "libcblas.so.3", "libblas.so.3"}, "install libopenblas0 (apt)"};
  DynLib lapacke{{"liblapacke.so.3"}, "install liblapacke (apt)"};
  decltype(&cblas_dsyrk) dsyrk = cblas.function<decltype(cblas_dsyrk)>("cblas_dsyrk");
  decltype(&cblas_sgemv) sgemv = cblas.function<decltype(cblas_sgemv)>("cblas_sgemv");
  decltype(&LAPACKE_dsyevr) dsyevr = lapacke.function<decltype(LAPACKE_dsyevr)>("LAPACKE_dsyevr");
};

const Blas& blas() {
  static const Blas b;  // thread-safe initialisation
  return b;
}

}  // namespace

void gram_eigen(const std::function<void(const std::function<void(int64_t, int64_t, const float*)>&)>& blocks,
                int64_t dim, std::vector<double>& eigenvalues_asc, std::vector<double>& eigvecs_asc_colmajor) {
  const size_t d = static_cast<size_t>(dim);
  std::vector<double> gram(d * d, 0.0);  // column-major, upper triangle filled by dsyrk
  {
    std::vector<double> block;
    blocks([&](int64_t, int64_t rows, const float* data) {
      block.resize(static_cast<size_t>(rows) * d);
      for (size_t i = 0; i < block.size(); ++i) block[i] = data[i];
      // G += B^T B with B row-major rows x d, i.e. column-major d x rows: C := A A^T with A = that view.
      blas().dsyrk(CblasColMajor, CblasUpper, CblasNoTrans, dim, static_cast<int>(rows), 1.0, block.data(), dim, 1.0,
                   gram.data(), dim);
    });
  }  // the block buffer is freed before the eigen-solve
  // dsyevr (MRRR): O(d) workspace, unlike dsyevd's 2 d^2 (420 MB more at d = 5120).
  eigenvalues_asc.assign(d, 0.0);
  eigvecs_asc_colmajor.assign(d * d, 0.0);
  std::vector<lapack_int> support(2 * d);
  lapack_int found = 0;
  int info = blas().dsyevr(LAPACK_COL_MAJOR, 'V', 'A', 'U', dim, gram.data(), dim, 0.0, 0.0, 0, 0, 0.0, &found,
                           eigenvalues_asc.data(), eigvecs_asc_colmajor.data(), dim, support.data());
  if (info != 0 || found != dim)
    throw Error(ExitCode::failure, "LAPACK dsyevr failed on the Gram matrix (info " + std::to_string(info) + ")");
  for (double& e : eigenvalues_asc) e = std::max(0.0, e);  // W^T W is positive semi-definite; clamp rounding noise
}

std::vector<double> ReasoningSubspace::energy_curve() const {
  std::vector<double> c(singular_.size());
  double total = 0;
  for (double s : singular_) total += energy_ == EnergyDefinition::squared ? s * s : s;
  double acc = 0;
  for (size_t i = 0; i < singular_.size(); ++i) {
    acc += energy_ == EnergyDefinition::squared ? singular_[i] * singular_[i] : singular_[i];
    c[i] = total > 0 ? acc / total : 1.0;
  }
  return c;
}

void ReasoningSubspace::finish(const std::vector<double>& ev_asc, const std::vector<double>& vecs_asc,
                               const SubspaceOptions& o) {
  dim_ = static_cast<int>(ev_asc.size());
  threshold_ = o.energy_threshold;
  energy_ = o.energy;
  singular_.resize(ev_asc.size());
  for (size_t i = 0; i < ev_asc.size(); ++i) singular_[i] = std::sqrt(ev_asc[ev_asc.size() - 1 - i]);  // decreasing
  auto curve = energy_curve();
  k_ = dim_;
  for (int i = 0; i < dim_; ++i)
    if (curve[static_cast<size_t>(i)] >= threshold_ - 1e-12) {
      k_ = i + 1;
      break;
    }
  if (k_ >= dim_) k_ = dim_ - 1;  // keep at least one reasoning direction
  // Descending position k + j is ascending column d - 1 - (k + j): the reasoning directions are the first
  // d - k ascending columns, stored here in decreasing singular value order.
  const size_t d = static_cast<size_t>(dim_), m = static_cast<size_t>(dim_ - k_);
  basis_.assign(d * m, 0.0f);
  for (size_t j = 0; j < m; ++j) {
    size_t col = d - 1 - (static_cast<size_t>(k_) + j);
    for (size_t i = 0; i < d; ++i) basis_[j * d + i] = static_cast<float>(vecs_asc[col * d + i]);
  }
}

std::vector<float> ReasoningSubspace::project(const float* h) const {
  const size_t d = static_cast<size_t>(dim_), m = static_cast<size_t>(dim_ - k_);
  std::vector<float> out(m);
  // out = V_R^T h, V_R column-major d x m.
  blas().sgemv(CblasColMajor, CblasTrans, static_cast<int>(d), static_cast<int>(m), 1.0f, basis_.data(),
               static_cast<int>(d), h, 1, 0.0f, out.data(), 1);
  return out;
}

std::vector<float> ReasoningSubspace::project_mean(const float* rows, size_t n) const {
  const size_t d = static_cast<size_t>(dim_), m = static_cast<size_t>(dim_ - k_);
  std::vector<float> out(m, 0.0f);
  if (n == 0) return out;
  // Mean pooling commutes with the linear projection: project the mean state.
  std::vector<float> mean(d, 0.0f);
  for (size_t r = 0; r < n; ++r)
    for (size_t i = 0; i < d; ++i) mean[i] += rows[r * d + i];
  for (float& x : mean) x /= static_cast<float>(n);
  return project(mean.data());
}

namespace {
constexpr uint32_t kMagic = 0x52535331;  // "RSS1"

std::string cache_path(const std::string& dir, const std::string& id) {
  std::string base = dir;
  if (base.empty()) base = user_cache_dir() + "/subspaces";
  return base + "/" + content_hash(id) + ".bin";
}
}  // namespace

void ReasoningSubspace::save(const std::string& path) const {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  std::string tmp = path + ".tmp";
  std::ofstream f(tmp, std::ios::binary);
  uint32_t hdr[3] = {kMagic, static_cast<uint32_t>(dim_), static_cast<uint32_t>(k_)};
  f.write(reinterpret_cast<const char*>(hdr), sizeof hdr);
  f.write(reinterpret_cast<const char*>(&threshold_), sizeof threshold_);
  uint32_t idlen = static_cast<uint32_t>(id_.size());
  f.write(reinterpret_cast<const char*>(&idlen), sizeof idlen);
  f.write(id_.data(), idlen);
  f.write(reinterpret_cast<const char*>(singular_.data()),
          static_cast<std::streamsize>(singular_.size() * sizeof(double)));
  f.write(reinterpret_cast<const char*>(basis_.data()), static_cast<std::streamsize>(basis_.size() * sizeof(float)));
  f.close();
  if (f) std::filesystem::rename(tmp, path, ec);
}

bool ReasoningSubspace::load(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  if (!f) return false;
  uint32_t hdr[3];
  f.read(reinterpret_cast<char*>(hdr), sizeof hdr);
  if (!f || hdr[0] != kMagic) return false;
  dim_ = static_cast<int>(hdr[1]);
  k_ = static_cast<int>(hdr[2]);
  f.read(reinterpret_cast<char*>(&threshold_), sizeof threshold_);
  uint32_t idlen = 0;
  f.read(reinterpret_cast<char*>(&idlen), sizeof idlen);
  std::string id(idlen, '\0');
  f.read(id.data(), idlen);
  if (id != id_) return false;
  singular_.resize(static_cast<size_t>(dim_));
  f.read(reinterpret_cast<char*>(singular_.data()), static_cast<std::streamsize>(singular_.size() * sizeof(double)));
  basis_.resize(static_cast<size_t>(dim_) * static_cast<size_t>(dim_ - k_));
  f.read(reinterpret_cast<char*>(basis_.data()), static_cast<std::streamsize>(basis_.size() * sizeof(float)));
  return static_cast<bool>(f);
}

ReasoningSubspace ReasoningSubspace::compute(LlmBackend& model, const SubspaceOptions& o) {
  if (!model.capabilities().hidden_states)
    throw Error(ExitCode::usage,
                "the reasoning subspace needs the model's unembedding matrix: use the llama backend "
                "with a local GGUF (--model path.gguf)");
  ReasoningSubspace s;
  s.energy_ = o.energy;
  s.id_ = model.identity() + "|energy=" + (o.energy == EnergyDefinition::squared ? "s2" : "s") +
          "|t=" + std::to_string(o.energy_threshold);
  std::string path = cache_path(o.cache_dir, s.id_);
  if (o.use_cache && s.load(path)) {
    s.from_cache_ = true;
    return s;
  }
  auto info = model.unembedding_info();
  log_info("reasoning subspace: W is {} x {} ({}{}); accumulating W^T W", info.vocab, info.dim, info.tensor_type,
           info.tied ? ", tied to the token embeddings" : "");
  auto t0 = std::chrono::steady_clock::now();
  std::vector<double> ev, vecs;
  gram_eigen(
      [&](const std::function<void(int64_t, int64_t, const float*)>& sink) {
        model.read_unembedding(o.block_rows, sink);
      },
      info.dim, ev, vecs);
  s.finish(ev, vecs, o);
  s.seconds_ = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (o.use_cache) s.save(path);
  return s;
}

ReasoningSubspace ReasoningSubspace::from_matrix(const std::vector<float>& w, int64_t rows, int64_t dim,
                                                 const SubspaceOptions& o) {
  ReasoningSubspace s;
  s.energy_ = o.energy;
  std::vector<double> ev, vecs;
  gram_eigen(
      [&](const std::function<void(int64_t, int64_t, const float*)>& sink) {
        for (int64_t r = 0; r < rows; r += o.block_rows) sink(r, std::min(o.block_rows, rows - r), w.data() + r * dim);
      },
      dim, ev, vecs);
  s.finish(ev, vecs, o);
  s.id_ = "matrix";
  return s;
}

}  // namespace repoctx
