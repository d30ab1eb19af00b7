// Canonical JSON forms of requests (the cache key) and responses (the cached value). Hidden states are
// stored as binary (raw float32), which CBOR keeps compact.
#include <cmath>
#include <cstring>

#include "llm/backend.h"
#include "util/error.h"

namespace repoctx {

using nlohmann::json;

static json tool_calls_json(const std::vector<LlmToolCall>& calls) {
  json a = json::array();
  for (const auto& c : calls) a.push_back({{"id", c.id}, {"name", c.name}, {"arguments", c.arguments}});
  return a;
}

static std::vector<LlmToolCall> tool_calls_from_json(const json& a) {
  std::vector<LlmToolCall> out;
  for (const auto& c : a) out.push_back({c.value("id", ""), c.value("name", ""), c.value("arguments", "")});
  return out;
}

// Tool-call fields only when present, so that requests without tools keep the cache keys they always had.
static json messages_json(const std::vector<ChatMessage>& ms) {
  json a = json::array();
  for (const auto& m : ms) {
    json j = {{"role", m.role}, {"content", m.content}};
    if (!m.tool_calls.empty()) j["tool_calls"] = tool_calls_json(m.tool_calls);
    if (!m.tool_call_id.empty()) j["tool_call_id"] = m.tool_call_id;
    a.push_back(std::move(j));
  }
  return a;
}

json GenerateRequest::to_json() const {
  json j = {{"op", "generate"}, {"temperature", temperature},
            {"top_p", top_p},   {"max_tokens", max_tokens},
            {"n", n},           {"stop", stop},
            {"seed", seed},     {"hidden_states", hidden_states}};
  if (!hidden_pool.empty()) j["hidden_pool"] = hidden_pool;
  if (!messages.empty())
    j["messages"] = messages_json(messages);
  else
    j["prompt"] = prompt;
  if (!json_schema.empty()) j["json_schema"] = json_schema;
  if (!grammar.empty()) j["grammar"] = grammar;
  if (!tools.empty()) {
    j["tools"] = tools;
    j["tool_choice"] = tool_choice;
  }
  return j;
}

json GenerateResult::to_json() const {
  json j = {{"prompt_tokens", prompt_tokens}, {"choices", json::array()}};
  for (const auto& c : choices) {
    json cj = {{"text", c.text},
               {"finish_reason", c.finish_reason},
               {"completion_tokens", c.completion_tokens},
               {"tokens", c.tokens}};
    if (!c.tool_calls.empty()) cj["tool_calls"] = tool_calls_json(c.tool_calls);
    if (!c.hidden.empty()) {
      std::vector<uint8_t> bytes(c.hidden.size() * sizeof(float));
      std::memcpy(bytes.data(), c.hidden.data(), bytes.size());
      cj["hidden"] = json::binary(std::move(bytes));
      cj["hidden_dim"] = c.hidden_dim;
    }
    j["choices"].push_back(std::move(cj));
  }
  return j;
}

GenerateResult GenerateResult::from_json(const json& j) {
  GenerateResult r;
  r.prompt_tokens = j.value("prompt_tokens", 0);
  for (const auto& cj : j.at("choices")) {
    Generation g;
    g.text = cj.at("text").get<std::string>();
    g.finish_reason = cj.value("finish_reason", "");
    g.completion_tokens = cj.value("completion_tokens", 0);
    if (cj.contains("tokens")) g.tokens = cj["tokens"].get<std::vector<int32_t>>();
    if (cj.contains("tool_calls")) g.tool_calls = tool_calls_from_json(cj["tool_calls"]);
    if (cj.contains("hidden")) {
      const auto& bin = cj["hidden"].get_binary();
      g.hidden.resize(bin.size() / sizeof(float));
      if (!g.hidden.empty()) std::memcpy(g.hidden.data(), bin.data(), g.hidden.size() * sizeof(float));
      g.hidden_dim = cj.value("hidden_dim", 0);
    }
    r.choices.push_back(std::move(g));
  }
  return r;
}

json LogprobRequest::to_json() const {
  json j = {{"op", "logprobs"}, {"continuation", continuation}};
  if (!continuation_tokens.empty()) j["continuation_tokens"] = continuation_tokens;
  if (!messages.empty())
    j["messages"] = messages_json(messages);
  else
    j["prompt"] = prompt;
  return j;
}

double LogprobResult::sum() const {
  double s = 0;
  for (double l : logprobs) s += l;
  return s;
}

double LogprobResult::perplexity() const {
  if (logprobs.empty()) return 1.0;
  return std::exp(-sum() / static_cast<double>(logprobs.size()));
}

json LogprobResult::to_json() const {
  return {{"tokens", tokens}, {"token_ids", token_ids}, {"logprobs", logprobs}};
}

LogprobResult LogprobResult::from_json(const json& j) {
  LogprobResult r;
  r.tokens = j.at("tokens").get<std::vector<std::string>>();
  r.logprobs = j.at("logprobs").get<std::vector<double>>();
  if (j.contains("token_ids")) r.token_ids = j["token_ids"].get<std::vector<int32_t>>();
  return r;
}

json EmbedRequest::to_json() const {
  return {{"op", "embed"},
          {"texts", texts},
          {"task", task == EmbedTask::query      ? "query"
                   : task == EmbedTask::document ? "document"
                                                 : "none"}};
}

json EmbedResult::to_json() const {
  json a = json::array();
  for (const auto& v : vectors) {
    std::vector<uint8_t> bytes(v.size() * sizeof(float));
    if (!bytes.empty()) std::memcpy(bytes.data(), v.data(), bytes.size());
    a.push_back(json::binary(std::move(bytes)));
  }
  return {{"vectors", a}};
}

EmbedResult EmbedResult::from_json(const json& j) {
  EmbedResult r;
  for (const auto& b : j.at("vectors")) {
    const auto& bin = b.get_binary();
    std::vector<float> v(bin.size() / sizeof(float));
    if (!v.empty()) std::memcpy(v.data(), bin.data(), v.size() * sizeof(float));
    r.vectors.push_back(std::move(v));
  }
  return r;
}

std::vector<GenerateResult> LlmBackend::generate_many(const std::vector<GenerateRequest>& rs, const OnDone& on_done) {
  std::vector<GenerateResult> out;
  out.reserve(rs.size());
  for (size_t i = 0; i < rs.size(); ++i) {
    out.push_back(generate(rs[i]));
    if (on_done) on_done(i, out.back());
  }
  return out;
}

UnembeddingInfo LlmBackend::unembedding_info() {
  throw Error(ExitCode::usage,
              "this backend has no access to the model's weights: the unembedding matrix needs the "
              "llama backend with a local GGUF file (--model path.gguf)");
}

void LlmBackend::read_unembedding(int64_t, const std::function<void(int64_t, int64_t, const float*)>&) {
  unembedding_info();
}

}  // namespace repoctx
