// This translation unit sees llama-common's JSON wrapper (backed by its own vendored nlohmann 3.12);
// only strings cross its boundary, so it never meets the Debian nlohmann the rest of repoctx uses.
#include "llm/json_schema.h"

#include <json-schema-to-grammar.h>

#include "util/error.h"

namespace repoctx {

std::string json_schema_to_gbnf(const std::string& schema_json) {
  try {
    return json_schema_to_grammar(common_json::parse(schema_json), true);
  } catch (const std::exception& e) {
    throw Error(ExitCode::bad_input, std::string("cannot turn the JSON schema into a grammar: ") + e.what());
  }
}

}  // namespace repoctx
