// The `openai` backend: any OpenAI-compatible server (vLLM, llama-server, Ollama, hosted APIs).
// Several endpoint URLs are served round-robin with failover; requests are retried with exponential
// backoff on 429, 5xx, dropped connections, timeouts and malformed bodies; concurrency is bounded.
// Hidden states and the unembedding matrix are not available over this API.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "llm/backend.h"

namespace repoctx {

struct OpenAiOptions {
  std::vector<std::string> endpoints;          // base URLs, e.g. http://127.0.0.1:8080/v1
  std::string model;                           // empty = the first model the first endpoint lists
  std::string api_key_env = "OPENAI_API_KEY";  // the key is read from this environment variable
  double timeout_s = 300;                      // whole request
  double connect_timeout_s = 10;
  int retries = 4;         // attempts after the first
  double backoff_s = 0.5;  // first retry delay, doubled each time (with jitter)
  double backoff_max_s = 30;
  int concurrency = 4;                        // requests in flight (generate_many)
  size_t max_response_bytes = 64ull << 20;    // a larger response body is refused (the transfer is aborted)
  std::string identity;                       // cache identity override; default "openai:<model>"
  std::string query_prefix, document_prefix;  // embedding task prompts
};

std::unique_ptr<LlmBackend> make_openai_backend(const OpenAiOptions& o);

// The generation in a (chat) completion response; Error(llm) naming `where` when the JSON has another
// shape (no choices, a null or non-string text). Exposed for tests and fuzzing.
GenerateResult openai_generation_from_json(const nlohmann::json& j, const std::string& where, bool chat);

}  // namespace repoctx
