// `repoctx bench-llm`: LLM runtime costs on generated models (see bench_llm.cpp).
#pragma once

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

namespace repoctx {

struct BenchLlmOptions {
  int threads = 0;
  int repeat = 3;
  int gen_tokens = 64;
  bool large = true;       // also the Qwen2.5-0.5B-shaped model (writes ~1 GB to /tmp)
  std::string server_bin;  // llama-server for the openai backend's throughput; empty = skip
  std::vector<int> concurrency = {1, 4, 16};
};

nlohmann::json run_bench_llm(const BenchLlmOptions& o);
std::string bench_llm_markdown(const nlohmann::json& r);

}  // namespace repoctx
