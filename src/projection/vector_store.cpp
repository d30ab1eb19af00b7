#include "projection/vector_store.h"

#include <hnswlib/hnswlib.h>

#if defined(__AVX2__) && defined(__FMA__)
#include <immintrin.h>
#endif

#include <algorithm>
#include <cmath>
#include <mutex>
#include <queue>
#include <thread>

#include "util/error.h"
#include "util/file_io.h"

namespace repoctx {

float dot(const float* a, const float* b, int n) {
#if defined(__AVX2__) && defined(__FMA__)
  // Four independent accumulators hide the FMA latency; the scan is memory-bound beyond that.
  __m256 s0 = _mm256_setzero_ps(), s1 = _mm256_setzero_ps(), s2 = _mm256_setzero_ps(), s3 = _mm256_setzero_ps();
  int i = 0;
  for (; i + 32 <= n; i += 32) {
    s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
    s1 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 8), _mm256_loadu_ps(b + i + 8), s1);
    s2 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 16), _mm256_loadu_ps(b + i + 16), s2);
    s3 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i + 24), _mm256_loadu_ps(b + i + 24), s3);
  }
  for (; i + 8 <= n; i += 8) s0 = _mm256_fmadd_ps(_mm256_loadu_ps(a + i), _mm256_loadu_ps(b + i), s0);
  __m256 s = _mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3));
  __m128 lo = _mm256_castps256_ps128(s), hi = _mm256_extractf128_ps(s, 1);
  lo = _mm_add_ps(lo, hi);
  lo = _mm_hadd_ps(lo, lo);
  lo = _mm_hadd_ps(lo, lo);
  float r = _mm_cvtss_f32(lo);
  for (; i < n; ++i) r += a[i] * b[i];
  return r;
#else
  float r = 0;
  for (int i = 0; i < n; ++i) r += a[i] * b[i];
  return r;
#endif
}

void normalize(float* v, int n) {
  double s = 0;
  for (int i = 0; i < n; ++i) s += static_cast<double>(v[i]) * v[i];
  if (s <= 0) return;
  float inv = static_cast<float>(1.0 / std::sqrt(s));
  for (int i = 0; i < n; ++i) v[i] *= inv;
}

namespace {

using Scored = std::pair<int64_t, float>;
// Better = higher score, then smaller id.
bool better(const Scored& a, const Scored& b) {
  return a.second != b.second ? a.second > b.second : a.first < b.first;
}

// Exact search laid out for streaming: vectors are stored in blocks of 64, dimension-major inside a block
// ([block][dim][64]), so a query scores 64 vectors with broadcast FMAs over contiguous memory and no
// per-vector horizontal sum; the scan runs at memory bandwidth.
class FlatStore : public VectorStore {
 public:
  static constexpr size_t kB = 64;
  FlatStore(int dim, const VectorStoreOptions& o) : dim_(dim), threads_(o.threads) {
    if (threads_ <= 0) threads_ = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  }
  std::string name() const override { return "flat"; }
  int dim() const override { return dim_; }
  size_t size() const override { return ids_.size(); }
  void reserve(size_t n) override {
    ids_.reserve(n);
    data_.reserve((n + kB - 1) / kB * kB * static_cast<size_t>(dim_));
  }
  void add(int64_t id, const float* v) override {
    size_t i = ids_.size();
    if (i % kB == 0) data_.resize(data_.size() + kB * static_cast<size_t>(dim_), 0.0f);
    std::vector<float> x(v, v + dim_);
    normalize(x.data(), dim_);
    float* blk = data_.data() + (i / kB) * kB * static_cast<size_t>(dim_);
    for (int d = 0; d < dim_; ++d) blk[static_cast<size_t>(d) * kB + i % kB] = x[static_cast<size_t>(d)];
    ids_.push_back(id);
  }
  std::vector<Scored> search(const float* q_in, size_t k, float min_score) const override {
    std::vector<float> q(q_in, q_in + dim_);
    normalize(q.data(), dim_);
    const size_t n = ids_.size(), nblocks = (n + kB - 1) / kB;
    int nt = n < 20000 ? 1 : threads_;
    std::vector<std::vector<Scored>> parts(static_cast<size_t>(nt));
    auto work = [&](int t) {
      size_t a = nblocks * static_cast<size_t>(t) / static_cast<size_t>(nt);
      size_t b = nblocks * static_cast<size_t>(t + 1) / static_cast<size_t>(nt);
      auto cmp = [](const Scored& x, const Scored& y) { return better(x, y); };  // min-heap on "better"
      std::priority_queue<Scored, std::vector<Scored>, decltype(cmp)> heap(cmp);
      alignas(32) float acc[kB];
      float floor = min_score;
      for (size_t blk = a; blk < b; ++blk) {
        score_block(data_.data() + blk * kB * static_cast<size_t>(dim_), q.data(), acc);
        size_t base = blk * kB, rows = std::min(kB, n - base);
        for (size_t r = 0; r < rows; ++r) {
          if (acc[r] < floor) continue;
          Scored c{ids_[base + r], acc[r]};
          if (heap.size() < k) {
            heap.push(c);
            if (heap.size() == k) floor = std::max(min_score, heap.top().second);
          } else if (better(c, heap.top())) {
            heap.pop();
            heap.push(c);
            floor = std::max(min_score, heap.top().second);
          }
        }
      }
      auto& out = parts[static_cast<size_t>(t)];
      while (!heap.empty()) {
        out.push_back(heap.top());
        heap.pop();
      }
    };
    parallel_for(static_cast<size_t>(nt), nt, [&](size_t t) { work(static_cast<int>(t)); });
    std::vector<Scored> all;
    for (auto& p : parts) all.insert(all.end(), p.begin(), p.end());
    std::sort(all.begin(), all.end(), better);
    if (all.size() > k) all.resize(k);
    return all;
  }

 private:
  // acc[j] = sum_d q[d] * blk[d][j], j < 64.
  void score_block(const float* blk, const float* q, float* acc) const {
#if defined(__AVX2__) && defined(__FMA__)
    __m256 s[8];
    for (auto& r : s) r = _mm256_setzero_ps();
    for (int d = 0; d < dim_; ++d) {
      __m256 qd = _mm256_set1_ps(q[d]);
      const float* row = blk + static_cast<size_t>(d) * kB;
      for (int r = 0; r < 8; ++r) s[r] = _mm256_fmadd_ps(qd, _mm256_loadu_ps(row + 8 * r), s[r]);
    }
    for (int r = 0; r < 8; ++r) _mm256_store_ps(acc + 8 * r, s[r]);
#else
    for (size_t j = 0; j < kB; ++j) acc[j] = 0.0f;
    for (int d = 0; d < dim_; ++d) {
      const float* row = blk + static_cast<size_t>(d) * kB;
      for (size_t j = 0; j < kB; ++j) acc[j] += q[d] * row[j];
    }
#endif
  }

  int dim_, threads_;
  std::vector<int64_t> ids_;
  std::vector<float> data_;  // [block][dim][64]
};

class HnswStore : public VectorStore {
 public:
  HnswStore(int dim, const VectorStoreOptions& o) : dim_(dim), o_(o), space_(static_cast<size_t>(dim)) {}
  std::string name() const override { return "hnsw"; }
  int dim() const override { return dim_; }
  size_t size() const override { return n_; }
  void reserve(size_t n) override { ensure(n); }
  void add(int64_t id, const float* v) override {
    ensure(n_ + 1);
    std::vector<float> x(v, v + dim_);
    normalize(x.data(), dim_);
    index_->addPoint(x.data(), static_cast<hnswlib::labeltype>(id));
    ++n_;
  }
  std::vector<Scored> search(const float* q_in, size_t k, float min_score) const override {
    std::vector<Scored> out;
    if (!index_ || n_ == 0) return out;
    std::vector<float> q(q_in, q_in + dim_);
    normalize(q.data(), dim_);
    std::lock_guard lk(mu_);  // setEf and the search's visited lists are per index
    index_->setEf(std::max<size_t>(static_cast<size_t>(o_.ef_search), k));
    auto pq = index_->searchKnn(q.data(), std::min(k, n_));
    while (!pq.empty()) {
      float s = 1.0f - pq.top().first;  // InnerProductSpace distance = 1 - ip
      if (s >= min_score) out.push_back({static_cast<int64_t>(pq.top().second), s});
      pq.pop();
    }
    std::sort(out.begin(), out.end(), better);
    return out;
  }

 private:
  void ensure(size_t n) {
    if (!index_) {
      cap_ = std::max<size_t>(n, 1024);
      index_ = std::make_unique<hnswlib::HierarchicalNSW<float>>(&space_, cap_, static_cast<size_t>(o_.M),
                                                                 static_cast<size_t>(o_.ef_construction));
    } else if (n > cap_) {
      cap_ = std::max(n, cap_ * 2);
      index_->resizeIndex(cap_);
    }
  }
  int dim_;
  VectorStoreOptions o_;
  hnswlib::InnerProductSpace space_;
  std::unique_ptr<hnswlib::HierarchicalNSW<float>> index_;
  size_t n_ = 0, cap_ = 0;
  mutable std::mutex mu_;
};

}  // namespace

std::unique_ptr<VectorStore> make_vector_store(const std::string& kind, int dim, const VectorStoreOptions& o) {
  if (dim <= 0) throw Error(ExitCode::usage, "vector store dimension must be positive");
  if (kind == "flat") return std::make_unique<FlatStore>(dim, o);
  if (kind == "hnsw") return std::make_unique<HnswStore>(dim, o);
  throw Error(ExitCode::usage, "unknown vector store '" + kind + "' (available: flat, hnsw)");
}

}  // namespace repoctx
