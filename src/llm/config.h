// Which models a run uses, from a JSON config file and command-line flags (flags win).
//
//   {
//     "llm":       {"backend": "openai", "endpoints": ["http://gpu1:8000/v1", "http://gpu2:8000/v1"],
//                   "model": "Qwen/Qwen2.5-Coder-14B-Instruct", "concurrency": 16},
//     "embedding": {"backend": "llama", "model": "/models/embeddinggemma-300m.gguf"},
//     "snippet_embedding": {"backend": "llama", "model": "/models/codet5p-110m-embedding.gguf"},
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
#include "llm/models.h"
#include "llm/openai_backend.h"

namespace repoctx {

struct ModelConfig {
  std::string backend;  // "llama" | "openai"; empty = not configured
  LlamaOptions llama;
  OpenAiOptions openai;
  bool configured() const { return !backend.empty(); }
  // Throws Error(usage) when the backend lacks what it needs (a model file, an endpoint), naming the flag
  // and the config key; checked when the backend is made, after the flags were applied.
  void validate(const std::string& role, const std::string& source) const;
};

struct LlmConfig {
  ModelConfig llm;        // generation, judging, hidden states
  ModelConfig embedding;  // embeddings (dense retrieval, ProjAgent's eq. 6); defaults to `llm`
  // ProjAgent's snippet validation (4.1) compares a step's description with its snippet by another embedding
  // model than the semantic retrieval's; defaults to `embedding` (then `llm`).
  ModelConfig snippet_embedding;
  // Hidden states and the unembedding matrix (ProjAgent's projections): a white-box model in process.
  // Defaults to `llm`; set it when `llm` is an OpenAI-compatible server, which cannot show its internals
  // (the paper uses one model for both; with two, steps are judged by one and projected by the other).
  ModelConfig hidden_states;
  std::string cache_path;  // empty = LlmCache::default_path()
  // The python3 of the generation's syntax check (top-level "python"; generate/python_syntax.h), kept here
  // because it lives in the same config file; the LLM layer does not use it.
  std::string python;
  bool cache_read = true;  // --no-cache: fresh calls (results are still stored)
  std::string source;      // the file it was read from, if any

  // Reads the first config file found (or `path`); throws Error(bad_input) naming the problem.
  static LlmConfig load(const std::string& path = "");
  // Unknown keys and values of the wrong type are errors (Error(bad_input) naming `file` and the key).
  void apply_json(const nlohmann::json& j, const std::string& file = "config");
};

// The model flags every front end spells the same way (the CLI's "Model" group, the public API's
// ModelParams): empty/zero = not given.
struct ModelFlags {
  std::string config, backend, model, embed_backend, embed_model, snippet_embed_backend, snippet_embed_model,
      hidden_model, cache;
  std::vector<std::string> endpoints, embed_endpoints, snippet_embed_endpoints;
  int threads = 0, ctx = 0;
  bool no_cache = false;
};
// The configuration the flags and the config file give (flags win). The config file is read here, so only
// callers that use a model read it. Throws Error(usage) for an unknown backend name.
LlmConfig llm_config_from(const ModelFlags& flags);

// Backends wrapped in the shared cache. Throw Error(usage) when the role is not configured.
class LlmSession {
 public:
  explicit LlmSession(LlmConfig cfg);
  LlmBackend& llm();
  LlmBackend& embedder();
  LlmBackend& snippet_embedder();  // the snippet_embedding role, else embedder()
  LlmBackend& hidden_states();     // the hidden_states role, else llm()
  bool has_llm() const { return cfg_.llm.configured(); }
  bool has_embedder() const { return cfg_.embedding.configured() || cfg_.llm.configured(); }
  LlmCache& cache();
  const LlmConfig& config() const { return cfg_; }
  // The roles `needs` asks for, loaded now (each at most once per session). A required role that is not
  // configured throws Error(usage); an embedder that falls back to the LLM is announced with a warning.
  Models models(const ModelNeeds& needs);

 private:
  std::unique_ptr<LlmBackend> make(const ModelConfig& m, const std::string& role);
  LlmConfig cfg_;
  std::shared_ptr<LlmCache> cache_;
  std::unique_ptr<LlmBackend> llm_, embedder_, snippet_embedder_, hidden_;
  bool embedder_warned_ = false;
};

}  // namespace repoctx
