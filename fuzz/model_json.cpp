// A model's answer as the procedural pipeline reads it: the JSON object found in free text (code fences,
// prose around it), string fields of any type, and an agent turn's tool call. Only Error may come out.
#include <cstdint>
#include <string>

#include "llm/structured.h"
#include "retrieve/procedural/agent_tools.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace repoctx;
  std::string text(reinterpret_cast<const char*>(data), size);
  std::string why;
  auto j = parse_model_json(text, &why);
  if (!j) return 0;
  if (!j->is_object()) __builtin_trap();
  for (const char* key : {"description", "snippet", "reason", "query", "tool", "thought"}) json_string(*j, key);
  if (j->contains("steps") && (*j)["steps"].is_array())
    for (const auto& s : (*j)["steps"]) {
      json_string(s, "description");
      json_string(s, "snippet");
    }
  try {
    tool_call_from_json(*j);
  } catch (const Error&) {
  }
  return 0;
}
