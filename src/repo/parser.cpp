#include "repo/parser.h"

#include <tree_sitter/api.h>

#include <cstdint>
#include <cstdlib>

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

bool keep_parsing(TSParseState* state) {  // true = stop
  if (interrupted()) return true;
  auto* c = static_cast<ParseControl*>(state->payload);
  return c && c->stop && c->stop->load(std::memory_order_relaxed);
}

}  // namespace

TSTree* parse_tree(TSParser* parser, const TSLanguage* lang, std::string_view source, ParseControl* ctl) {
  if (source.size() >= UINT32_MAX) return nullptr;
  ts_parser_set_language(parser, lang);
  TSInput input{&source, read_source, TSInputEncodingUTF8, nullptr};
  TSParseOptions options{ctl, keep_parsing};
  TSTree* tree = ts_parser_parse_with_options(parser, nullptr, input, options);
  if (!tree) ts_parser_reset(parser);  // a cancelled parse would otherwise resume on the next call
  return tree;
}

SourceParser::SourceParser() : python_(ts_parser_new()), java_(ts_parser_new()) {}

SourceParser::~SourceParser() {
  ts_parser_delete(python_);
  ts_parser_delete(java_);
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
    default:
      break;
  }
  return pf;
}

extern "C" const TSLanguage* tree_sitter_python(void);
extern "C" const TSLanguage* tree_sitter_java(void);

std::string syntax_tree(std::string_view source, Language lang) {
  TSParser* p = ts_parser_new();
  TSTree* t = parse_tree(p, lang == Language::java ? tree_sitter_java() : tree_sitter_python(), source);
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
