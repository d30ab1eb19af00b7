// The content-addressed LLM cache: every result is stored under hash(model identity, operation, full
// request) in SQLite, the moment it arrives. A re-run of any pipeline repeats no LLM work, and a run that
// is interrupted resumes with what it already had. Shared by every repository (default
// ~/.cache/repoctx/llm-cache.db, or --cache PATH).
#pragma once

#include <atomic>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>

#include "llm/backend.h"
#include "util/sqlite.h"

namespace repoctx {

struct CacheStats {
  struct Row {
    int64_t entries = 0, prompt_tokens = 0, completion_tokens = 0;
    double ms = 0;
  };
  std::map<std::string, Row> by_op_model;  // "op\tmodel"
  int64_t hits = 0, misses = 0;            // this process
};

class LlmCache {
 public:
  explicit LlmCache(const std::string& path);
  static std::string default_path();
  std::optional<nlohmann::json> get(const std::string& key);
  void put(const std::string& key, const std::string& op, const std::string& model, const nlohmann::json& request,
           const nlohmann::json& response, int prompt_tokens, int completion_tokens, double ms);
  CacheStats stats();
  int64_t clear(const std::string& model_filter);
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  sql::Db db_;
  std::mutex mu_;
  std::atomic<int64_t> hits_{0}, misses_{0};
};

// Wraps any backend: results come from the cache when present; misses go to the backend and are stored.
// `read` = false (--no-cache) skips lookups but still stores fresh results.
class CachedBackend : public LlmBackend {
 public:
  CachedBackend(std::unique_ptr<LlmBackend> inner, std::shared_ptr<LlmCache> cache, bool read = true);
  std::string identity() const override { return inner_->identity(); }
  Capabilities capabilities() const override { return inner_->capabilities(); }
  GenerateResult generate(const GenerateRequest& r) override;
  std::vector<GenerateResult> generate_many(const std::vector<GenerateRequest>& rs,
                                            const OnDone& on_done = {}) override;
  LogprobResult logprobs(const LogprobRequest& r) override;
  EmbedResult embed(const EmbedRequest& r) override;
  UnembeddingInfo unembedding_info() override { return inner_->unembedding_info(); }
  void read_unembedding(int64_t block_rows, const std::function<void(int64_t, int64_t, const float*)>& sink) override {
    inner_->read_unembedding(block_rows, sink);
  }
  int hidden_dim() const override { return inner_->hidden_dim(); }
  int context_length() override { return inner_->context_length(); }
  LlmBackend& inner() { return *inner_; }
  LlmCache& cache() { return *cache_; }
  std::string key_of(const nlohmann::json& request) const;

 private:
  std::unique_ptr<LlmBackend> inner_;
  std::shared_ptr<LlmCache> cache_;
  bool read_;
};

}  // namespace repoctx
