// One interface for every LLM operation the three papers need, implemented by the in-process llama.cpp
// backend (`llama`) and by OpenAI-compatible servers (`openai`), and wrapped by one content-addressed
// cache (llm/cache.h). Pipelines hold an LlmBackend& and never know which one it is.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace repoctx {

// A call of a tool the model made through the API's native tool calling (OpenAI's `tool_calls`).
struct LlmToolCall {
  std::string id;
  std::string name;
  std::string arguments;  // the JSON text the model wrote; the caller parses it and reports bad JSON
};

struct ChatMessage {
  std::string role;  // system | user | assistant | tool
  std::string content;
  std::vector<LlmToolCall> tool_calls = {};  // assistant: the tools it called (native tool calling)
  std::string tool_call_id = "";             // tool: the call this message answers
};

struct GenerateRequest {
  std::vector<ChatMessage> messages;  // chat; when empty, `prompt` is completed as raw text
  std::string prompt;
  double temperature = 0.0;  // 0 = greedy
  double top_p = 1.0;
  int max_tokens = 4096;  // ProjAgent's generation budget
  int n = 1;              // samples (AlignCoder: 4 at T = 0.8, top-p = 0.95)
  std::vector<std::string> stop;
  std::string json_schema;  // constrain the output to this JSON schema (text of the schema)
  std::string grammar;      // or to this GBNF grammar (llama backend)
  // Native tool calling (OpenAI-compatible servers, Capabilities::tool_calls): the tools offered as the API's
  // `tools` array ({"type": "function", "function": {name, description, parameters}}) and `tool_choice`
  // ("auto", "required" or "none"); an empty array offers none.
  nlohmann::json tools = nlohmann::json::array();
  std::string tool_choice;
  uint64_t seed = 0;
  bool hidden_states = false;  // white-box only: last-layer pre-norm states of the response tokens
  std::string hidden_pool;     // "" = one row per response token; "mean" = their mean (one row)
  // What the call is for ("decompose", "verify_seed", ...): counted by MeteredBackend (llm/metered.h).
  // Not part of the cache key: the same request made by two stages is one cached result.
  std::string purpose;
  nlohmann::json to_json() const;  // canonical form: the cache key
};

struct Generation {
  std::string text;
  std::vector<LlmToolCall> tool_calls;  // native tool calling: the calls the model made (text may then be empty)
  std::string finish_reason;            // stop | length
  int completion_tokens = 0;
  std::vector<int32_t> tokens;
  // Row-major [completion_tokens x hidden_dim]: the last layer's output before the final norm, at the
  // position of each response token (the state after reading that token).
  std::vector<float> hidden;
  int hidden_dim = 0;
};

struct GenerateResult {
  std::vector<Generation> choices;
  int prompt_tokens = 0;
  bool cached = false;  // served by the cache (set by CachedBackend; not stored)
  nlohmann::json to_json() const;
  static GenerateResult from_json(const nlohmann::json& j);
};

// Log-probabilities of `continuation` given a context (AlignCoder's perplexity reward, eq. 24).
struct LogprobRequest {
  std::vector<ChatMessage> messages;  // the context as chat, or
  std::string prompt;                 // as raw text
  std::string continuation;
  // llama backend: score exactly these tokens instead of tokenizing `continuation` (needed to compare
  // tokenizations chosen elsewhere, e.g. by a server forcing the continuation with a grammar).
  std::vector<int32_t> continuation_tokens;
  nlohmann::json to_json() const;
};

struct LogprobResult {
  std::vector<std::string> tokens;
  std::vector<int32_t> token_ids;  // when the backend reports them
  std::vector<double> logprobs;    // natural log, one per continuation token
  double sum() const;
  double perplexity() const;  // exp(-mean logprob)
  nlohmann::json to_json() const;
  static LogprobResult from_json(const nlohmann::json& j);
};

enum class EmbedTask { query, document, none };

struct EmbedRequest {
  std::vector<std::string> texts;
  std::string purpose;               // as GenerateRequest::purpose (not part of the cache key)
  EmbedTask task = EmbedTask::none;  // the backend adds the model's task prompt (e.g. embeddinggemma's)
  nlohmann::json to_json() const;
};

struct EmbedResult {
  std::vector<std::vector<float>> vectors;  // L2-normalised
  size_t cached = 0;                        // texts served by the cache (set by CachedBackend; not stored)
  nlohmann::json to_json() const;
  static EmbedResult from_json(const nlohmann::json& j);
};

// W (vocab x d) of a white-box model, row-major float32, read block by block (a 152k x 5120 matrix is
// 3 GB in float32; callers accumulate what they need, e.g. W^T W, without holding it twice).
struct UnembeddingInfo {
  int64_t vocab = 0, dim = 0;
  bool tied = false;  // output.weight absent: token_embd.weight is used
  std::string tensor_type;
};

struct Capabilities {
  bool generate = true, logprobs = true, embeddings = true;
  bool hidden_states = false;  // only in-process backends see the model's internals
  bool grammar = false;
  bool tool_calls = false;  // native tool calling (GenerateRequest::tools); in-process models have none
  // Requests served at once by generate_many (a server fleet's concurrency; 1 in process): callers that
  // send work in chunks size them by it, so a sequential backend reports progress request by request.
  int parallel = 1;
};

class LlmBackend {
 public:
  virtual ~LlmBackend() = default;
  // Identity of the model: file content hash (llama) or endpoint model name (openai). Part of every
  // cache key, so results of different models never mix.
  virtual std::string identity() const = 0;
  virtual Capabilities capabilities() const = 0;
  virtual GenerateResult generate(const GenerateRequest& r) = 0;
  virtual LogprobResult logprobs(const LogprobRequest& r) = 0;
  virtual EmbedResult embed(const EmbedRequest& r) = 0;
  // Many requests at once (the openai backend runs them concurrently); default: one after another.
  // `on_done(i, result)` is called as each request completes, so that a failure of one request loses
  // none of the others (the cache stores each as it arrives).
  using OnDone = std::function<void(size_t, const GenerateResult&)>;
  virtual std::vector<GenerateResult> generate_many(const std::vector<GenerateRequest>& rs, const OnDone& on_done = {});
  virtual UnembeddingInfo unembedding_info();
  // Calls sink(first_row, rows, data) for consecutive row blocks of W (float32, row-major).
  virtual void read_unembedding(int64_t block_rows, const std::function<void(int64_t, int64_t, const float*)>& sink);
  virtual int hidden_dim() const { return 0; }
  // Tokens the model's context holds, prompt and output together, as the runtime or server reports it (or
  // the configuration sets it); 0 = unknown. Callers fit their prompts to it (generate/prompt_assembly.h).
  virtual int context_length() { return 0; }
};

}  // namespace repoctx
