// Source parsing with tree-sitter: bytes of one file in, ParsedFile out.
#pragma once

#include <atomic>
#include <memory>
#include <string>
#include <string_view>

#include "repo/model.h"

struct TSParser;
struct TSTree;
struct TSLanguage;

namespace repoctx {

// Limits of the extractors' walk over a syntax tree. Beyond them a file is indexed as far as they reach
// and reported (ParseError::partial): CPython itself compiles no expression nested ~3000 levels deep nor
// more than 100 levels of indentation, and javac overflows its stack on such code too.
inline constexpr int kMaxSyntaxDepth = 3000;  // tree levels of one statement's expressions
inline constexpr int kMaxBlockNesting = 200;  // nested blocks / type and member declarations

// What a parse may use and why it ended early.
struct ParseControl {
  const std::atomic<bool>* stop = nullptr;  // besides util/cancel.h's interrupt: cancels the parse when set
};

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
  // Parses stop early when *stop is set (besides util/cancel.h's interrupt); the result is then incomplete.
  void set_stop(const std::atomic<bool>* stop) { stop_ = stop; }

 private:
  TSParser* python_;
  TSParser* java_;
  const std::atomic<bool>* stop_ = nullptr;
};

// tree-sitter's S-expression of a source (debugging: `repoctx debug-tree`).
std::string syntax_tree(std::string_view source, Language lang);

// tree-sitter's parse of `source`, polling util/cancel.h (and `ctl`'s stop flag) while it runs: nullptr when
// interrupted (SIGINT/SIGTERM), stopped, or when the source is beyond tree-sitter's 4 GiB offsets. The caller
// owns the tree.
TSTree* parse_tree(TSParser* parser, const TSLanguage* lang, std::string_view source, ParseControl* ctl = nullptr);

// Language-specific extractors (python_parser.cpp, java_parser.cpp).
void extract_python(TSParser* parser, std::string_view source, ParsedFile& out,
                    const std::atomic<bool>* stop = nullptr);
void extract_java(TSParser* parser, std::string_view source, ParsedFile& out, const std::atomic<bool>* stop = nullptr);

}  // namespace repoctx
