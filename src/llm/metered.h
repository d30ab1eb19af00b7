// Accounting of LLM work by purpose (the pipeline stage that asked): calls, how many the cache served,
// prompt and completion tokens (counted for cached calls too: they are what a fresh run would cost), and
// the wall time of calls. Wraps any backend (usually a CachedBackend) without owning it; the procedural
// pipeline reports its usage table per target in its trace, and BENCHMARKS.md tabulates it.
#pragma once

#include <map>
#include <mutex>
#include <string>

#include <nlohmann/json.hpp>

#include "llm/backend.h"

namespace repoctx {

struct LlmUsage {
  struct Row {
    int64_t calls = 0, cached = 0, prompt_tokens = 0, completion_tokens = 0, embedded_texts = 0;
    double seconds = 0;  // wall time inside the backend (cached calls included; they are ~0)
    Row& operator+=(const Row& o);
  };
  std::map<std::string, Row> by_purpose;  // "" = untagged
  Row total() const;
  void add(const LlmUsage& o);  // row by row, by purpose
  // The work done since `earlier` (a snapshot of the same meter): row by row, rows left at zero dropped.
  LlmUsage since(const LlmUsage& earlier) const;
  nlohmann::json to_json() const;  // {purpose: {...}, "total": {...}}
};

class MeteredBackend : public LlmBackend {
 public:
  explicit MeteredBackend(LlmBackend& inner) : inner_(inner) {}
  std::string identity() const override { return inner_.identity(); }
  Capabilities capabilities() const override { return inner_.capabilities(); }
  GenerateResult generate(const GenerateRequest& r) override;
  std::vector<GenerateResult> generate_many(const std::vector<GenerateRequest>& rs,
                                            const OnDone& on_done = {}) override;
  LogprobResult logprobs(const LogprobRequest& r) override;
  EmbedResult embed(const EmbedRequest& r) override;
  UnembeddingInfo unembedding_info() override { return inner_.unembedding_info(); }
  void read_unembedding(int64_t block_rows, const std::function<void(int64_t, int64_t, const float*)>& sink) override {
    inner_.read_unembedding(block_rows, sink);
  }
  int hidden_dim() const override { return inner_.hidden_dim(); }
  LlmUsage usage() const;

 private:
  void record(const std::string& purpose, const GenerateResult& g, double seconds);
  LlmBackend& inner_;
  mutable std::mutex mu_;
  LlmUsage usage_;
};

}  // namespace repoctx
