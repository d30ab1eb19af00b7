#include "util/hash.h"

#include <xxhash.h>

#include <cstdio>

namespace repoctx {

std::string content_hash(std::string_view data) {
  XXH128_hash_t h = XXH3_128bits(data.data(), data.size());
  char buf[33];
  std::snprintf(buf, sizeof buf, "%016llx%016llx", static_cast<unsigned long long>(h.high64),
                static_cast<unsigned long long>(h.low64));
  return buf;
}

uint64_t hash64(std::string_view data) {
  return XXH3_64bits(data.data(), data.size());
}

}  // namespace repoctx
