// The JavaScript/TypeScript extractor on arbitrary bytes, with everything the indexer derives from one file.
// The input's first byte picks the grammar (JavaScript, TypeScript or TSX), the rest is the source.
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "repo/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static repoctx::SourceParser parser;
  if (size == 0) return 0;
  static const char* const kPaths[] = {"src/f.js", "src/f.ts", "src/f.tsx"};
  const char* path = kPaths[data[0] % 3];
  std::string src(reinterpret_cast<const char*>(data) + 1, size - 1);
  repoctx::Language lang = repoctx::language_from_path(path);
  repoctx::fuzz::check_file(parser.parse(path, "src/f", src, lang), src);
  return 0;
}
