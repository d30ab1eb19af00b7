// AutoCodeRover's search APIs (nus-apr/auto-code-rover, app/search/search_backend.py), answered from the
// index instead of Python's ast over a checkout: classes, methods (functions in a class, at any depth, as
// ACR's ast.walk collects them), functions, and code strings in the non-test Python files. Each API returns
// the text the model reads (ACR's tagged format: <file>, <class>, <func>, <code> with numbered lines; at
// most `result_limit` results in full, the rest collapsed to file or method level) and the line ranges it
// showed, which ACR's bug-location stage turns into the gathered context.
//
// Only indexed files exist for these APIs (nothing outside the repository can be named), and every output
// is bounded by the agent that shows it.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "retrieve/engine.h"

namespace repoctx {

struct AcrResult {
  int file = -1;
  int start = 0, end = 0;  // 1-based, inclusive
  std::string class_name, func_name;
  std::string code;
};

struct AcrAnswer {
  std::string text;                // what the model reads
  std::vector<AcrResult> results;  // what was shown in full
  bool ok = false;
};

struct AcrOptions {
  int result_limit = 3;
  int class_full_limit = 2;
  int code_context = 3;
  bool skip_tests = true;
};

class AcrSearch {
 public:
  AcrSearch(const Engine& e, AcrOptions o);

  AcrAnswer search_class(const std::string& class_name) const;
  AcrAnswer search_class_in_file(const std::string& class_name, const std::string& file_name) const;
  AcrAnswer search_method(const std::string& method_name) const;
  AcrAnswer search_method_in_class(const std::string& method_name, const std::string& class_name) const;
  AcrAnswer search_method_in_file(const std::string& method_name, const std::string& file_name) const;
  AcrAnswer search_code(const std::string& code_str) const;
  AcrAnswer search_code_in_file(const std::string& code_str, const std::string& file_name) const;
  AcrAnswer get_code_around_line(const std::string& file_name, int line_no, int window) const;
  AcrAnswer get_class_full_snippet(const std::string& class_name) const;
  // The study's definition lookup (its ReAct agent's show_definition, jedi's infer at the symbol): where the
  // index resolves `symbol` as written on line `line_number` of `file_path` (a path from the root) to, shown
  // in full; a name defined outside the repository is named, not shown.
  AcrAnswer show_definition(const std::string& symbol, int line_number, const std::string& file_path) const;

  // API name -> argument names, in the order ACR's signatures give them: AutoCodeRover's own APIs (its
  // procedure's, the `full` ReAct tool set).
  static const std::vector<std::pair<std::string, std::vector<std::string>>>& apis();
  // The study's ReAct tool set (its code's acr_toolkit): six of ACR's search APIs and show_definition.
  static const std::vector<std::pair<std::string, std::vector<std::string>>>& study_apis();
  // Dispatch by name with string arguments (ACR's proxy format); ok = false with the reason on a wrong
  // name, arity or an unusable number.
  AcrAnswer call(const std::string& api, const std::vector<std::string>& args) const;

  // ACR's is_test_file: a "test" or "tests" path component, or a name ending in "_test.py".
  static bool is_test_file(const std::string& path);

 private:
  std::vector<int> files_matching(const std::string& file_name) const;
  std::vector<int> methods_of(int klass, const std::string& name) const;
  AcrResult result_of(int entity, const std::string& class_name) const;
  std::string numbered(int file, int first, int last) const;
  std::string class_signature(int klass) const;
  std::pair<std::string, std::string> class_and_func_at(int file, int line) const;
  std::string tagged(const AcrResult& r) const;
  std::string shown(const std::vector<AcrResult>& rs, size_t limit) const;
  std::string collapse_files(const std::vector<AcrResult>& rs) const;
  std::vector<AcrResult> code_matches(const std::vector<int>& files, const std::string& code) const;
  Resolution resolve_symbol_at(int file, int line, const std::string& symbol) const;

  const Engine& e_;
  AcrOptions o_;
  std::vector<int> files_;                                            // non-test Python files, by path
  std::unordered_map<std::string, std::vector<int>> classes_;         // name -> class entities
  std::vector<std::pair<std::string, std::vector<int>>> class_list_;  // the same, by name (deterministic order)
  std::unordered_map<std::string, std::vector<int>> functions_;       // name -> callables outside classes
};

}  // namespace repoctx
