// The Python extractor on arbitrary bytes, with everything the indexer derives from one file: entity
// documents and term vectors, snippets, the reference encoding (which must round-trip) and body masking.
#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_common.h"
#include "repo/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static repoctx::SourceParser parser;
  std::string src(reinterpret_cast<const char*>(data), size);
  repoctx::fuzz::check_file(parser.parse("f.py", "pkg.f", src, repoctx::Language::python), src);
  return 0;
}
