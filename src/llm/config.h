// Which models a run uses, from a JSON config file and command-line flags (flags win).
//
//   {
//     "llm":       {"backend": "openai", "endpoints": ["http://gpu1:8000/v1", "http://gpu2:8000/v1"],
//                   "model": "Qwen/Qwen2.5-Coder-14B-Instruct", "concurrency": 16},
//     "embedding": {"backend": "llama", "model": "/models/embeddinggemma-300m.gguf"},
//     "hidden_states": {"backend": "llama", "model": "/models/qwen2.5-coder-14b-instruct-q4_k_m.gguf"},
//     "cache": "~/.cache/repoctx/llm-cache.db"
//   }
//
// Looked up in this order: --config PATH, $REPOCTX_CONFIG, ./repoctx.json, ~/.config/repoctx/config.json.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "llm/cache.h"
#include "llm/llama_backend.h"
#include "llm/openai_backend.h"

namespace repoctx {

struct ModelConfig {
  std::string backend;  // "llama" | "openai"; empty = not configured
  LlamaOptions llama;
  OpenAiOptions openai;
  bool configured() const { return !backend.empty(); }
};

struct LlmConfig {
  ModelConfig llm;        // generation, judging, hidden states
  ModelConfig embedding;  // embeddings (dense retrieval, snippet validation); defaults to `llm`
  // Hidden states and the unembedding matrix (ProjAgent's projections): a white-box model in process.
  // Defaults to `llm`; set it when `llm` is an OpenAI-compatible server, which cannot show its internals
  // (the paper uses one model for both; with two, steps are judged by one and projected by the other).
  ModelConfig hidden_states;
  std::string cache_path;  // empty = LlmCache::default_path()
  bool cache_read = true;  // --no-cache: fresh calls (results are still stored)
  std::string source;      // the file it was read from, if any

  // Reads the first config file found (or `path`); throws Error(bad_input) naming the problem.
  static LlmConfig load(const std::string& path = "");
  void apply_json(const nlohmann::json& j);
  // Every configured role has what its backend needs (a model file, endpoints); Error(bad_input) naming
  // the missing piece otherwise. Call after command-line flags are applied over the file.
  void validate() const;
};

// Backends wrapped in the shared cache. Throw Error(usage) when the role is not configured.
class LlmSession {
 public:
  explicit LlmSession(LlmConfig cfg);
  LlmBackend& llm();
  LlmBackend& embedder();
  LlmBackend& hidden_states();  // the hidden_states role, else llm()
  bool has_llm() const { return cfg_.llm.configured(); }
  bool has_embedder() const { return cfg_.embedding.configured() || cfg_.llm.configured(); }
  LlmCache& cache();
  const LlmConfig& config() const { return cfg_; }

 private:
  std::unique_ptr<LlmBackend> make(const ModelConfig& m);
  LlmConfig cfg_;
  std::shared_ptr<LlmCache> cache_;
  std::unique_ptr<LlmBackend> llm_, embedder_, hidden_;
};

}  // namespace repoctx
