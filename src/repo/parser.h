// Source parsing with tree-sitter: bytes of one file in, ParsedFile out.
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

#include "repo/model.h"

struct TSParser;
struct TSTree;
struct TSNode;
struct TSLanguage;

namespace repoctx {

// Limits of the extractors' walk over a syntax tree. Beyond them a file is indexed as far as they reach
// and reported (ParseError::partial): CPython itself compiles no expression nested ~3000 levels deep nor
// more than 100 levels of indentation, and javac overflows its stack on such code too.
inline constexpr int kMaxSyntaxDepth = 3000;  // tree levels of one statement's expressions
inline constexpr int kMaxBlockNesting = 200;  // nested blocks / type and member declarations

// The memory one file's syntax tree may take while tree-sitter builds it: kTreeBytesPerSourceByte times the
// file's size or kTreeBytesFloor, whichever is larger. Ordinary code needs ~20-40 times its size (the
// largest of sympy's expression-heavy test files ~110 times, under the floor); a 20 MB list literal would
// need ~80 times (1.6 GB). A file over the limit is not parsed: it is indexed as text (snippets, no
// definitions) and listed by `repoctx files --skipped`. Bounds indexing memory per parser thread by a
// multiple of the file being parsed (docs/BENCHMARKS.md, "Memory of pathological files").
inline constexpr size_t kTreeBytesPerSourceByte = 30;
inline constexpr size_t kTreeBytesFloor = size_t{256} << 20;
size_t tree_memory_limit(size_t source_bytes);

// What a parse may use and why it ended early.
struct ParseControl {
  const std::atomic<bool>* stop = nullptr;  // besides util/cancel.h's interrupt: cancels the parse when set
  size_t memory_limit = 0;                  // bytes tree-sitter may hold for this parse; 0 = no limit
  bool over_limit = false;                  // out: the parse was abandoned at memory_limit
  size_t peak_bytes = 0;                    // out: the most tree-sitter held for this parse
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
  TSParser* go_;
  TSParser* javascript_;
  TSParser* rust_;
  TSParser* c_;
  TSParser* csharp_;
  const std::atomic<bool>* stop_ = nullptr;
};

// The tree-sitter grammar of a file (nullptr for Language::unknown); `path` tells TSX from TypeScript.
const TSLanguage* grammar_of(Language lang, const std::string& path = "");

// tree-sitter's S-expression of a source (debugging: `repoctx debug-tree`).
std::string syntax_tree(std::string_view source, Language lang);

// tree-sitter's parse of `source`, polling util/cancel.h (and `ctl`'s stop flag and memory limit) while it
// runs: nullptr when interrupted (SIGINT/SIGTERM), stopped, over the memory limit (ctl->over_limit) or when
// the source is beyond tree-sitter's 4 GiB offsets. The caller owns the tree.
TSTree* parse_tree(TSParser* parser, const TSLanguage* lang, std::string_view source, ParseControl* ctl = nullptr);

// Language-specific extractors (python/, java/, go/, javascript/, rust/, c/, csharp/ extract.cpp). A file whose tree
// would exceed tree_memory_limit() gets no entities and a `partial` error saying why.
void extract_python(TSParser* parser, std::string_view source, ParsedFile& out,
                    const std::atomic<bool>* stop = nullptr);
void extract_java(TSParser* parser, std::string_view source, ParsedFile& out, const std::atomic<bool>* stop = nullptr);
void extract_go(TSParser* parser, std::string_view source, ParsedFile& out, const std::atomic<bool>* stop = nullptr);
// JavaScript and TypeScript (out.language and out.path pick the grammar: .tsx files are TSX).
void extract_javascript(TSParser* parser, std::string_view source, ParsedFile& out,
                        const std::atomic<bool>* stop = nullptr);
const TSLanguage* javascript_grammar(Language lang, const std::string& path);
void extract_rust(TSParser* parser, std::string_view source, ParsedFile& out, const std::atomic<bool>* stop = nullptr);
// C and C++ (out.language picks the grammar).
void extract_c(TSParser* parser, std::string_view source, ParsedFile& out, const std::atomic<bool>* stop = nullptr);
void extract_csharp(TSParser* parser, std::string_view source, ParsedFile& out,
                    const std::atomic<bool>* stop = nullptr);

// The error of a file whose syntax tree was not built for its memory (a `partial` ParseError).
ParseError tree_too_large(const ParsedFile& pf, const ParseControl& ctl, size_t source_bytes);

// The regions tree-sitter recovered from (ERROR and MISSING nodes, at most 50), appended to out.errors: the
// extractors keep every definition outside them.
void record_syntax_errors(TSNode root, ParsedFile& out);

// What the Java, Go, JavaScript, Rust and C extractors start from: the file's tree under tree_memory_limit(), with
// its syntax error regions recorded (record_syntax_errors); nullptr, its reason recorded in
// out.errors, when no tree was built. The caller owns the tree.
TSTree* parse_for_extraction(TSParser* parser, const TSLanguage* lang, std::string_view source, ParsedFile& out,
                             const std::atomic<bool>* stop);

}  // namespace repoctx
