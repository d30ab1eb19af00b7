// The C# extractor (tree-sitter-c-sharp: namespaces, types, members, local functions, using directives) on
// arbitrary bytes, with everything the indexer derives from one file.
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "repo/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static repoctx::SourceParser parser;
  std::string src(reinterpret_cast<const char*>(data), size);
  repoctx::fuzz::check_file(parser.parse("src/F.cs", "src.F", src, repoctx::Language::csharp), src);
  return 0;
}
