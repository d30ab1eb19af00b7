// JSON schema -> GBNF grammar for constrained generation in the llama backend, by llama.cpp's own
// converter (llama-common's json_schema_to_grammar), the one llama-server uses.
#pragma once

#include <string>

namespace repoctx {

// Throws Error(bad_input) naming the problem when the schema is not valid JSON or not convertible.
std::string json_schema_to_gbnf(const std::string& schema_json);

}  // namespace repoctx
