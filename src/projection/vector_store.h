// One interface for similarity search over (debiased) projections and embeddings, implementations chosen
// by name like FAISS's index factory: "flat" (exact brute force, AVX2/FMA, both cores) and "hnsw"
// (approximate, hnswlib from Debian). Vectors are L2-normalised when added, so scores are cosines.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

namespace repoctx {

struct VectorStoreOptions {
  int threads = 0;            // flat: search threads (0 = all cores)
  int M = 16;                 // hnsw: graph degree
  int ef_construction = 200;  // hnsw
  int ef_search = 128;        // hnsw: candidates kept while searching (recall vs speed)
};

class VectorStore {
 public:
  virtual ~VectorStore() = default;
  virtual std::string name() const = 0;
  virtual int dim() const = 0;
  virtual size_t size() const = 0;
  virtual void add(int64_t id, const float* v) = 0;
  virtual void reserve(size_t n) { (void)n; }
  // Best k by cosine (ties: smaller id first), only those with score >= min_score.
  virtual std::vector<std::pair<int64_t, float>> search(const float* q, size_t k, float min_score = -2.0f) const = 0;
};

// kind: "flat" or "hnsw"; throws Error(usage) naming the valid kinds otherwise.
std::unique_ptr<VectorStore> make_vector_store(const std::string& kind, int dim, const VectorStoreOptions& o = {});

// Dot product (AVX2/FMA when the build targets it).
float dot(const float* a, const float* b, int n);
void normalize(float* v, int n);

}  // namespace repoctx
