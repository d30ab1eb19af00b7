// Schema-constrained LLM calls and the parsing of what models answer: every stage that asks a model for
// JSON (decomposition, validation, verification, plan confirmation, agents) goes through here. Answers of
// any shape are survivable: a missing field, a number where a string belongs, prose around the object or
// no object at all cost that answer (with the reason kept for the trace), never the run.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "llm/backend.h"

namespace repoctx {

struct StructuredCall {
  std::string purpose;                // the stage, for LLM accounting (GenerateRequest::purpose)
  std::vector<ChatMessage> messages;  // the rendered prompt (llm/prompts.h)
  nlohmann::json schema;              // the JSON schema the answer is constrained to (keep it bounded)
  int max_tokens = 256;
};

struct StructuredAnswer {
  std::optional<nlohmann::json> value;  // the answer's JSON object; nullopt when unusable
  std::string error;                    // why it is unusable (quotes the start of the answer)
  std::string text;                     // the model's raw answer
  bool cached = false;

  bool ok() const { return value.has_value(); }
  // Fields, never throwing on a model's wrong types: "" / nullopt / null when absent or of another type.
  std::string string(const char* key) const;
  std::optional<bool> boolean(const char* key) const;
  const nlohmann::json* array(const char* key) const;
  // The reason a required field is unusable: the parse error, else "the model's answer has no <what>".
  std::string missing(const std::string& what) const;
};

StructuredAnswer ask_json(LlmBackend& llm, const StructuredCall& call);
// Many calls at once (generate_many: concurrent on an OpenAI-compatible fleet, each result cached as it
// arrives); answers in the order of `calls`.
std::vector<StructuredAnswer> ask_json_many(LlmBackend& llm, const std::vector<StructuredCall>& calls);

// The JSON object in a model's answer (code fences and prose around it are dropped); nullopt, and the
// reason, for anything that is not an object.
std::optional<nlohmann::json> parse_model_json(const std::string& text, std::string* why);
// A string field of a model's JSON object; "" when absent or of another type.
std::string json_string(const nlohmann::json& o, const char* key);
// The text of a generation's first choice; "" when the backend returned none.
std::string first_text(const GenerateResult& g);

}  // namespace repoctx
