// Content hashing (xxHash3-128 from libxxhash): file identity in the index, cache keys, stable term ids.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace repoctx {

std::string content_hash(std::string_view data);  // 32 hex chars, XXH3-128
uint64_t hash64(std::string_view data);           // XXH3-64, for in-memory term ids

}  // namespace repoctx
