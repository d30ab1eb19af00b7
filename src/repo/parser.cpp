#include "repo/parser.h"

#include <tree_sitter/api.h>

#include <cstdlib>

#include "util/text.h"

namespace repoctx {

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
      extract_python(python_, source, pf);
      break;
    case Language::java:
      extract_java(java_, source, pf);
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
  ts_parser_set_language(p, lang == Language::java ? tree_sitter_java() : tree_sitter_python());
  TSTree* t = ts_parser_parse_string(p, nullptr, source.data(), static_cast<uint32_t>(source.size()));
  char* s = ts_node_string(ts_tree_root_node(t));
  std::string out(s);
  free(s);
  ts_tree_delete(t);
  ts_parser_delete(p);
  return out;
}

}  // namespace repoctx
