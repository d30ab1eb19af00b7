// What an OpenAI-compatible server (or a damaged cache entry, or a config file) may hand repoctx as JSON:
// only Error may come out of the readers (an escaping json::exception would end a run with exit 1).
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "llm/config.h"
#include "llm/openai_backend.h"
#include "util/error.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace repoctx;
  if (size == 0) return 0;
  auto j = nlohmann::json::parse(data + 1, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  try {
    auto g = openai_generation_from_json(j, "fuzz", (data[0] & 1) != 0);
    if (g.choices.size() != 1) __builtin_trap();
  } catch (const Error&) {
  }
  try {
    LlmConfig c;
    c.apply_json(j);
  } catch (const Error&) {
  }
  return 0;
}
