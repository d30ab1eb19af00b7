#include "llm/structured.h"

#include "util/text.h"

namespace repoctx {

using nlohmann::json;

std::optional<json> parse_model_json(const std::string& text, std::string* why) {
  // Models sometimes wrap JSON in a code fence or prose; the object itself is what counts.
  std::string_view t = trim(text);
  size_t a = t.find('{'), b = t.rfind('}');
  if (a == std::string_view::npos || b == std::string_view::npos || b < a) {
    if (why) *why = "no JSON object in the model's answer: \"" + sanitize_utf8(std::string(t.substr(0, 120))) + "\"";
    return std::nullopt;
  }
  json j = json::parse(t.substr(a, b - a + 1), nullptr, false);
  if (j.is_discarded() || !j.is_object()) {
    if (why) *why = "invalid JSON from the model: \"" + sanitize_utf8(std::string(t.substr(0, 120))) + "\"";
    return std::nullopt;
  }
  return j;
}

std::string json_string(const json& o, const char* key) {
  if (!o.is_object()) return "";
  auto it = o.find(key);
  return it != o.end() && it->is_string() ? it->get<std::string>() : "";
}

std::string first_text(const GenerateResult& g) {
  return g.choices.empty() ? "" : g.choices[0].text;
}

std::string StructuredAnswer::string(const char* key) const {
  return value ? json_string(*value, key) : "";
}

std::optional<bool> StructuredAnswer::boolean(const char* key) const {
  if (!value) return std::nullopt;
  auto it = value->find(key);
  if (it == value->end() || !it->is_boolean()) return std::nullopt;
  return it->get<bool>();
}

const json* StructuredAnswer::array(const char* key) const {
  if (!value) return nullptr;
  auto it = value->find(key);
  return it != value->end() && it->is_array() ? &*it : nullptr;
}

std::string StructuredAnswer::missing(const std::string& what) const {
  return ok() ? "the model's answer has no " + what : error;
}

namespace {

GenerateRequest request_of(const StructuredCall& c) {
  GenerateRequest r;
  r.purpose = c.purpose;
  r.messages = c.messages;
  r.json_schema = c.schema.dump();
  r.max_tokens = c.max_tokens;
  return r;
}

StructuredAnswer answer_of(const GenerateResult& g) {
  StructuredAnswer a;
  a.text = first_text(g);
  a.cached = g.cached;
  a.value = parse_model_json(a.text, &a.error);
  return a;
}

}  // namespace

StructuredAnswer ask_json(LlmBackend& llm, const StructuredCall& call) {
  return answer_of(llm.generate(request_of(call)));
}

std::vector<StructuredAnswer> ask_json_many(LlmBackend& llm, const std::vector<StructuredCall>& calls) {
  std::vector<GenerateRequest> rs;
  rs.reserve(calls.size());
  for (const auto& c : calls) rs.push_back(request_of(c));
  std::vector<StructuredAnswer> out;
  for (const auto& g : llm.generate_many(rs)) out.push_back(answer_of(g));
  return out;
}

}  // namespace repoctx
