// Random-weight GGUF models for tests and benchmarks: the real llama.cpp runtime, real tokenizers,
// gibberish outputs. The tokenizer and chat template come from a vocab-only GGUF (llama.cpp's models/
// folder ships ggml-vocab-qwen2.gguf); the weights are drawn from a seeded normal distribution.
#pragma once

#include <cstdint>
#include <string>

namespace repoctx {

struct TestModelSpec {
  std::string vocab_path;  // vocab-only GGUF (qwen2: 151,936 tokens, chatml template)
  std::string out_path;
  int hidden = 64;   // Qwen2.5-0.5B: 896
  int layers = 2;    // Qwen2.5-0.5B: 24
  int heads = 4;     // Qwen2.5-0.5B: 14
  int kv_heads = 2;  // Qwen2.5-0.5B: 2
  int ff = 128;      // Qwen2.5-0.5B: 4864
  int context = 4096;
  bool tied = false;  // no output.weight: the unembedding is token_embd.weight
  bool f16 = false;   // weights in float16 (halves the file of a large model)
  // Add output.bias = -30 for every token whose bytes are not printable ASCII, so that sampled text is
  // always valid UTF-8. Servers parse replies (llama-server's chat and completion endpoints reject text
  // that ends inside a UTF-8 sequence, which random byte-level tokens often do).
  bool ascii_only = false;
  uint64_t seed = 1;
};

// Writes the model; throws Error on a missing vocab file or write failure.
void write_test_model(const TestModelSpec& s);

// Where setup.sh put llama.cpp's vocab files (REPOCTX_DEPS or ~/.cache/repoctx), or "" when absent.
std::string default_vocab_path(const std::string& name = "ggml-vocab-qwen2.gguf");

}  // namespace repoctx
