// The C extractor reading C++ (tree-sitter-cpp, namespaces, classes, templates, the export-macro blanking) on
// arbitrary bytes, with everything the indexer derives from one file.
#include <cstdint>
#include <string>

#include "fuzz_common.h"
#include "repo/parser.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static repoctx::SourceParser parser;
  std::string src(reinterpret_cast<const char*>(data), size);
  repoctx::fuzz::check_file(parser.parse("src/f.cc", "src/f.cc", src, repoctx::Language::cpp), src);
  return 0;
}
