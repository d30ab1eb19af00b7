// `repoctx bench-projection`: subspace computation cost, flat search throughput against memory
// bandwidth, HNSW recall (see bench_projection.cpp).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace repoctx {

struct BenchProjectionOptions {
  std::string self_exe;
  int threads = 0;
  bool large = true;  // also the 152064 x 5120 W (writes 1.5 GB to /tmp)
  std::vector<size_t> vectors = {100000, 1000000};
  std::vector<int> widths = {45, 256};  // ~5% of 896 and of 5120
  size_t hnsw_vectors = 20000;
};

nlohmann::json run_bench_projection(const BenchProjectionOptions& o);
nlohmann::json internal_subspace(const std::string& gguf);
std::string bench_projection_markdown(const nlohmann::json& r);

}  // namespace repoctx
