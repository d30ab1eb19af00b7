#include "repo/parser.h"

#include <fmt/format.h>
#include <malloc.h>
#include <tree_sitter/api.h>

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <mutex>

#include "repo/c/includes.h"
#include "repo/ts_util.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/text.h"

namespace repoctx {

namespace {

const char* read_source(void* payload, uint32_t byte, TSPoint, uint32_t* bytes_read) {
  auto* src = static_cast<std::string_view*>(payload);
  if (byte >= src->size()) {
    *bytes_read = 0;
    return "";
  }
  *bytes_read = static_cast<uint32_t>(src->size() - byte);
  return src->data() + byte;
}

// tree-sitter's allocations go through these: the bytes it holds, per thread (a parser and its trees live
// on one thread), are what a parse's memory limit counts. The usable size is what the allocator really
// reserved (with mimalloc, size classes).
thread_local int64_t t_tree_bytes = 0;

void* counted_malloc(size_t n) {
  void* p = std::malloc(n);
  if (!p && n > 0) std::abort();  // as tree-sitter's own allocator does
  if (p) t_tree_bytes += static_cast<int64_t>(malloc_usable_size(p));
  return p;
}
void* counted_calloc(size_t count, size_t size) {
  void* p = std::calloc(count, size);
  if (!p && count > 0 && size > 0) std::abort();
  if (p) t_tree_bytes += static_cast<int64_t>(malloc_usable_size(p));
  return p;
}
void* counted_realloc(void* old, size_t n) {
  int64_t before = old ? static_cast<int64_t>(malloc_usable_size(old)) : 0;
  void* p = std::realloc(old, n);
  if (!p && n > 0) std::abort();
  if (p) t_tree_bytes += static_cast<int64_t>(malloc_usable_size(p)) - before;
  return p;
}
void counted_free(void* p) {
  if (p) t_tree_bytes -= static_cast<int64_t>(malloc_usable_size(p));
  std::free(p);
}

struct ParseWatch {
  ParseControl* ctl;
  int64_t base;  // this thread's tree-sitter bytes when the parse began
};

bool keep_parsing(TSParseState* state) {  // true = stop
  if (interrupted()) return true;
  auto* w = static_cast<ParseWatch*>(state->payload);
  if (!w) return false;
  ParseControl& c = *w->ctl;
  if (c.stop && c.stop->load(std::memory_order_relaxed)) return true;
  int64_t used = t_tree_bytes - w->base;
  if (used > 0 && static_cast<size_t>(used) > c.peak_bytes) c.peak_bytes = static_cast<size_t>(used);
  if (c.memory_limit > 0 && c.peak_bytes > c.memory_limit) {
    c.over_limit = true;
    return true;
  }
  return false;
}

}  // namespace

size_t tree_memory_limit(size_t source_bytes) {
  return std::max(kTreeBytesFloor, kTreeBytesPerSourceByte * source_bytes);
}

TSTree* parse_tree(TSParser* parser, const TSLanguage* lang, std::string_view source, ParseControl* ctl) {
  static std::once_flag counted;
  std::call_once(counted, [] { ts_set_allocator(counted_malloc, counted_calloc, counted_realloc, counted_free); });
  if (source.size() >= UINT32_MAX) return nullptr;
  ts_parser_set_language(parser, lang);
  TSInput input{&source, read_source, TSInputEncodingUTF8, nullptr};
  ParseWatch watch{ctl, t_tree_bytes};
  TSParseOptions options{ctl ? &watch : nullptr, keep_parsing};
  TSTree* tree = ts_parser_parse_with_options(parser, nullptr, input, options);
  if (!tree) ts_parser_reset(parser);  // a cancelled parse would otherwise resume on the next call
  return tree;
}

ParseError tree_too_large(const ParsedFile& pf, const ParseControl& ctl, size_t source_bytes) {
  return {1, std::max(1, pf.line_count),
          fmt::format("not parsed: its syntax tree needs more than {} MB of memory (over {} times the file's "
                      "size); indexed as text only (snippets, no definitions)",
                      ctl.memory_limit >> 20, ctl.memory_limit / std::max<size_t>(source_bytes, 1)),
          true};
}

TSTree* parse_for_extraction(TSParser* parser, const TSLanguage* lang, std::string_view source, ParsedFile& out,
                             const std::atomic<bool>* stop) {
  ParseControl ctl;
  ctl.stop = stop;
  ctl.memory_limit = tree_memory_limit(source.size());
  TSTree* tree = parse_tree(parser, lang, source, &ctl);
  if (!tree) {
    if (ctl.over_limit)
      out.errors.push_back(tree_too_large(out, ctl, source.size()));
    else
      out.errors.push_back({1, 1, "tree-sitter returned no tree"});
    return nullptr;
  }
  record_syntax_errors(ts_tree_root_node(tree), out);
  return tree;
}

void record_syntax_errors(TSNode root, ParsedFile& out) {
  if (!ts_node_has_error(root)) return;
  std::vector<TSNode> stack{root}, kids;
  size_t cap = out.errors.size() + 50;
  while (!stack.empty() && out.errors.size() < cap) {
    TSNode n = stack.back();
    stack.pop_back();
    if (ts_node_is_error(n) || ts_node_is_missing(n)) {
      out.errors.push_back({ts::start_line(n), ts::end_line(n),
                            ts_node_is_missing(n) ? std::string("missing ") + ts_node_type(n) : "syntax error"});
      continue;
    }
    if (!ts_node_has_error(n)) continue;
    kids.clear();
    ts::for_each_child(n, false, [&](TSNode c) { kids.push_back(c); });
    stack.insert(stack.end(), kids.rbegin(), kids.rend());
  }
}

SourceParser::SourceParser()
    : python_(ts_parser_new()),
      java_(ts_parser_new()),
      go_(ts_parser_new()),
      javascript_(ts_parser_new()),
      rust_(ts_parser_new()),
      c_(ts_parser_new()),
      csharp_(ts_parser_new()) {}

SourceParser::~SourceParser() {
  ts_parser_delete(python_);
  ts_parser_delete(java_);
  ts_parser_delete(go_);
  ts_parser_delete(javascript_);
  ts_parser_delete(rust_);
  ts_parser_delete(c_);
  ts_parser_delete(csharp_);
}

ParsedFile SourceParser::parse(const std::string& path, const std::string& module, std::string_view source,
                               Language lang) {
  ParsedFile pf;
  pf.path = path;
  pf.module = module;
  pf.language = lang;
  pf.line_count = source.empty() ? 0 : static_cast<int>(line_starts(source).size()) - (source.back() == '\n' ? 1 : 0);
  switch (lang) {
    case Language::python:
      extract_python(python_, source, pf, stop_);
      break;
    case Language::java:
      extract_java(java_, source, pf, stop_);
      break;
    case Language::go:
      extract_go(go_, source, pf, stop_);
      break;
    case Language::javascript:
    case Language::typescript:
      extract_javascript(javascript_, source, pf, stop_);
      break;
    case Language::rust:
      extract_rust(rust_, source, pf, stop_);
      break;
    case Language::c:
      if (is_c_header_path(path) && looks_like_cpp(source)) pf.language = Language::cpp;
      extract_c(c_, source, pf, stop_);
      break;
    case Language::cpp:
      extract_c(c_, source, pf, stop_);
      break;
    case Language::csharp:
      extract_csharp(csharp_, source, pf, stop_);
      break;
    default:
      break;
  }
  return pf;
}

extern "C" const TSLanguage* tree_sitter_python(void);
extern "C" const TSLanguage* tree_sitter_java(void);
extern "C" const TSLanguage* tree_sitter_go(void);
extern "C" const TSLanguage* tree_sitter_rust(void);
extern "C" const TSLanguage* tree_sitter_c(void);
extern "C" const TSLanguage* tree_sitter_cpp(void);
extern "C" const TSLanguage* tree_sitter_c_sharp(void);

const TSLanguage* grammar_of(Language lang, const std::string& path) {
  switch (lang) {
    case Language::javascript:
    case Language::typescript:
      return javascript_grammar(lang, path);
    case Language::python:
      return tree_sitter_python();
    case Language::java:
      return tree_sitter_java();
    case Language::go:
      return tree_sitter_go();
    case Language::rust:
      return tree_sitter_rust();
    case Language::c:
      return tree_sitter_c();
    case Language::cpp:
      return tree_sitter_cpp();
    case Language::csharp:
      return tree_sitter_c_sharp();
    default:
      return nullptr;
  }
}

std::string syntax_tree(std::string_view source, Language lang) {
  TSParser* p = ts_parser_new();
  const TSLanguage* grammar = grammar_of(lang);
  if (!grammar) {
    ts_parser_delete(p);
    throw Error(ExitCode::bad_input,
                "no grammar for this file's language (.py, .java, .go, .js/.ts, .rs, .c/.h, .cc/.cpp/.hpp "
                "and .cs files are parsed)");
  }
  TSTree* t = parse_tree(p, grammar, source);
  if (!t) {
    ts_parser_delete(p);
    throw_if_interrupted();
    throw Error(ExitCode::bad_input, "tree-sitter could not parse the file (larger than 4 GiB?)");
  }
  // ts_node_string recurses once per tree level: refuse trees deeper than the extractors' limit.
  if (int depth = ts::max_depth(ts_tree_root_node(t)); depth > kMaxSyntaxDepth) {
    ts_tree_delete(t);
    ts_parser_delete(p);
    throw Error(ExitCode::bad_input, "the syntax tree is " + std::to_string(depth) + " levels deep (more than " +
                                         std::to_string(kMaxSyntaxDepth) + "): too deep to print");
  }
  char* s = ts_node_string(ts_tree_root_node(t));
  std::string out(s);
  free(s);
  ts_tree_delete(t);
  ts_parser_delete(p);
  return out;
}

}  // namespace repoctx
