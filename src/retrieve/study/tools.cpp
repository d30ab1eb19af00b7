#include "retrieve/study/tools.h"

#include <fmt/core.h>

#include "util/error.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;

std::optional<int> agent_document(const StudyCorpus& corpus, const std::string& path, std::string* error) {
  std::string p(trim(path));
  while (starts_with(p, "./")) p = p.substr(2);
  if (p.empty()) {
    *error = "no file given";
    return std::nullopt;
  }
  if (p[0] == '/' || p == ".." || starts_with(p, "../") || p.find("/../") != std::string::npos || ends_with(p, "/..")) {
    *error = "'" + path + "' is outside the repository; give a path relative to the repository root";
    return std::nullopt;
  }
  if (auto d = corpus.find(p)) return d;
  std::string close;
  std::string base = p.substr(p.rfind('/') == std::string::npos ? 0 : p.rfind('/') + 1);
  int shown = 0;
  for (int d = 0; d < corpus.size() && shown < 5; ++d) {
    const std::string& dp = corpus.path(d);
    if (ends_with(dp, "/" + base) || dp == base) {
      close += (close.empty() ? "" : ", ") + dp;
      ++shown;
    }
  }
  *error = "file '" + path + "' is not in the repository" + (close.empty() ? "" : " (did you mean: " + close + "?)");
  return std::nullopt;
}

Bm25SearchTool::Bm25SearchTool(const Engine& e, const StudyParams& p)
    : index_(study_chunks(e, p.corpus, p.chunks)), p_(p) {
  spec_.name = "code_search";
  spec_.description =
      "BM25 search over chunks of the repository's files; returns the best chunks with their line numbers "
      "(query: words of the code you look for; limit and offset page through the results)";
  spec_.parameters = {{"type", "object"},
                      {"properties",
                       {{"query", {{"type", "string"}}},
                        {"limit", {{"type", "integer"}, {"minimum", 1}, {"maximum", p.search_max_limit}}},
                        {"offset", {{"type", "integer"}, {"minimum", 0}, {"maximum", 1000}}}}},
                      {"required", {"query"}}};
}

ToolOutput Bm25SearchTool::call(const json& args) {
  std::string query = args["query"].get<std::string>();
  if (trim(query).empty()) return {false, "code_search: the query is empty"};
  int limit = std::clamp(args.value("limit", p_.search_limit), 1, p_.search_max_limit);
  int offset = std::clamp(args.value("offset", 0), 0, 100000);
  auto top = index_.top(query, static_cast<size_t>(offset + limit));
  std::string out;
  for (size_t i = static_cast<size_t>(offset); i < top.size(); ++i) {
    const StudyChunk& c = index_.chunks()[static_cast<size_t>(top[i].chunk)];
    const std::string& content = index_.corpus().content(c.doc);
    auto starts = line_starts(content);
    out += "+++ " + index_.corpus().path(c.doc) + "\n";
    for (int l = c.start_line; l <= c.end_line; ++l)
      out += fmt::format(" {} {}\n", l, line_range(content, starts, l, l));
    out += "\n";
  }
  if (out.empty()) return {true, "No results."};
  return {true, sanitize_utf8(out)};
}

AddToContextTool::AddToContextTool(GatheredContext& ctx) : ctx_(ctx) {
  spec_.name = "add_to_context";
  spec_.description =
      "adds lines [start_line, end_line) of a file (end exclusive, 1-based) to the context for the later edit";
  spec_.parameters = {{"type", "object"},
                      {"properties",
                       {{"file_name", {{"type", "string"}}},
                        {"start_line", {{"type", "integer"}, {"minimum", 1}, {"maximum", 1000000}}},
                        {"end_line", {{"type", "integer"}, {"minimum", 1}, {"maximum", 1000000}}}}},
                      {"required", {"file_name", "start_line", "end_line"}}};
}

ToolOutput AddToContextTool::call(const json& args) {
  std::string err;
  auto d = agent_document(ctx_.corpus(), args["file_name"].get<std::string>(), &err);
  if (!d) return {false, "add_to_context: " + err};
  int start = args["start_line"].get<int>(), end = args["end_line"].get<int>();
  int n = ctx_.corpus().line_count(*d);
  if (start <= 0) return {false, "Start line must be a positive integer"};
  if (end <= start) return {false, "End line must be greater than the start line"};
  if (end > n + 1) return {false, fmt::format("End line is greater than the number of lines in the file ({})", n)};
  ctx_.add(*d, start, end - 1);
  return {true,
          "Code snippet has been added to the context. You can add more snippets or finish the run if you think you "
          "have found all relevant code."};
}

AcrTool::AcrTool(const AcrSearch& s, const std::string& api, const std::vector<std::string>& args)
    : s_(s), arg_names_(args) {
  spec_.name = api;
  static const std::map<std::string, std::string> what = {
      {"search_class", "the signature of a class (its header and its methods' headers)"},
      {"search_class_in_file", "the code of a class in a given file"},
      {"search_method", "the code of a method or function, anywhere in the codebase"},
      {"search_method_in_class", "the code of a method of a given class"},
      {"search_method_in_file", "the code of a method or function in a given file"},
      {"search_code", "the code around a snippet, anywhere in the codebase"},
      {"search_code_in_file", "the code around a snippet in a given file"},
      {"get_code_around_line", "the lines around a line of a file (window_size lines before and after)"},
      {"show_definition",
       "the code where a symbol (variable, method, function or class) on a given line of a file is defined"}};
  spec_.description = what.count(api) ? what.at(api) : api;
  json props = json::object();
  for (const auto& a : args)
    props[a] = (a == "line_number" || a == "window_size")
                   ? json{{"type", "integer"}, {"minimum", 0}, {"maximum", 100000}}
                   : json{{"type", "string"}};
  spec_.parameters = {{"type", "object"}, {"properties", props}, {"required", args}};
}

ToolOutput AcrTool::call(const json& args) {
  std::vector<std::string> a;
  for (const auto& n : arg_names_) {
    const json& v = args[n];
    a.push_back(v.is_string() ? v.get<std::string>() : v.dump());
  }
  AcrAnswer r = s_.call(spec_.name, a);
  return {r.ok, r.text};
}

std::vector<std::unique_ptr<AgentTool>> acr_tools(const AcrSearch& s, const std::string& set) {
  if (set != "study" && set != "full")
    throw Error(ExitCode::usage, "unknown ACR tool set '" + set + "': use study or full");
  std::vector<std::unique_ptr<AgentTool>> out;
  for (const auto& [api, args] : set == "study" ? AcrSearch::study_apis() : AcrSearch::apis())
    out.push_back(std::make_unique<AcrTool>(s, api, args));
  return out;
}

}  // namespace repoctx
