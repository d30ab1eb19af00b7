// Source parsing with tree-sitter: bytes of one file in, ParsedFile out.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "repo/model.h"

struct TSParser;

namespace repoctx {

// One parser per thread (tree-sitter parsers are not thread-safe; trees and languages are).
class SourceParser {
 public:
  SourceParser();
  ~SourceParser();
  SourceParser(const SourceParser&) = delete;
  SourceParser& operator=(const SourceParser&) = delete;

  // Never throws on bad source: syntax errors are recorded in ParsedFile::errors and whatever
  // tree-sitter recovered is kept.
  ParsedFile parse(const std::string& path, const std::string& module, std::string_view source, Language lang);

 private:
  TSParser* python_;
  TSParser* java_;
};

// tree-sitter's S-expression of a source (debugging: `repoctx debug-tree`).
std::string syntax_tree(std::string_view source, Language lang);

// Language-specific extractors (python_parser.cpp, java_parser.cpp).
void extract_python(TSParser* parser, std::string_view source, ParsedFile& out);
void extract_java(TSParser* parser, std::string_view source, ParsedFile& out);

}  // namespace repoctx
