// The `llama` backend: llama.cpp in-process on a GGUF file. The only backend with the model's internals:
// last-layer hidden states of response tokens (captured with llama.cpp's eval callback) and the
// unembedding matrix (read from the GGUF file).
#pragma once

#include <memory>
#include <string>

#include "llm/backend.h"

namespace repoctx {

struct LlamaOptions {
  std::string model_path;
  int threads = 0;                            // 0 = all cores
  int ctx = 8192;                             // context length (capped at the model's training context)
  int batch = 512;                            // prompt processing batch
  int gpu_layers = 0;                         // layers offloaded to a GPU (GPU builds only)
  std::string query_prefix, document_prefix;  // embedding task prompts; defaults by model family
  bool verbose = false;                       // llama.cpp's own logging
};

std::unique_ptr<LlmBackend> make_llama_backend(const LlamaOptions& o);

// Content hash of a model file, memoised by (path, size, mtime) in ~/.cache/repoctx/model-ids.json.
std::string model_file_identity(const std::string& path);

}  // namespace repoctx
