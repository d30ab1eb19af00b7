#include "api/json.h"

#include <fmt/core.h>

#include <algorithm>
#include <cmath>

#include "generate/generator.h"
#include "retrieve/retriever.h"
#include "util/error.h"

using nlohmann::json;

namespace repoctx::api {

namespace {

std::vector<std::string> strategy_names() {
  std::vector<std::string> out;
  for (const auto& r : retriever_registry()) out.push_back(r.name);
  return out;
}

const char* kTargetDoc = "target function, \"path/to/file.py::Qualified.name\" (path relative to the repository root)";
const char* kParamsDoc =
    "generation parameters NAME -> VALUE (semantic_top, baseline_top, context_cut_chars) and procedural ones "
    "(seed_threshold, expand_tau, max_rounds, agent_budget, ...; `repoctx parameters`); a VALUE that parses as "
    "JSON is taken as JSON";
const char* kRetrieveParamsDoc =
    "strategy parameters NAME -> VALUE, as the CLI's retrieve --param: procedural's (seed_threshold, expand_tau, "
    "...), completion's (samples, pool, ...), imports_order (structural|bm25), hybrid_fusion "
    "(structural-first|rrf|none); a VALUE that parses as JSON is taken as JSON";

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// Reads one value of `j` into p.*member, or throws Error(usage) naming the field.
template <class P>
void read_field(const json& v, P& p, const Field<P>& f) {
  auto bad = [&](const std::string& what) {
    return Error(ExitCode::usage, "field '" + f.name + "' " + what + " (" + f.description + ")");
  };
  std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(p.*member)>;
        if constexpr (std::is_same_v<T, std::string>) {
          if (!v.is_string()) throw bad("must be a string");
          std::string s = v.get<std::string>();
          if (!f.choices.empty() && std::find(f.choices.begin(), f.choices.end(), s) == f.choices.end())
            throw bad("is '" + s + "'; valid values: " + join(f.choices));
          p.*member = std::move(s);
        } else if constexpr (std::is_same_v<T, bool>) {
          if (!v.is_boolean()) throw bad("must be true or false");
          p.*member = v.get<bool>();
        } else if constexpr (std::is_same_v<T, int>) {
          // 10.0 is accepted as 10 (JavaScript clients have one number type); 10.5 is not.
          if (!v.is_number() || std::floor(v.get<double>()) != v.get<double>()) throw bad("must be an integer");
          double d = v.get<double>();
          if (d < f.min || d > f.max) throw bad(fmt::format("must be between {} and {}", f.min, f.max));
          p.*member = static_cast<int>(d);
        } else if constexpr (std::is_same_v<T, double>) {
          if (!v.is_number()) throw bad("must be a number");
          double d = v.get<double>();
          if (!std::isfinite(d) || d < f.min || d > f.max)
            throw bad(fmt::format("must be between {} and {}", f.min, f.max));
          p.*member = d;
        } else {
          if (!v.is_object()) throw bad("must be an object of NAME: VALUE");
          T m;
          for (const auto& [k, x] : v.items()) m[k] = x.is_string() ? x.template get<std::string>() : x.dump();
          p.*member = std::move(m);
        }
      },
      f.member);
}

template <class P>
json field_schema(const Field<P>& f) {
  json s;
  std::visit(
      [&](auto member) {
        using T = std::remove_reference_t<decltype(std::declval<P&>().*member)>;
        P defaults;
        if constexpr (std::is_same_v<T, std::string>) {
          s["type"] = "string";
          if (!f.choices.empty()) s["enum"] = f.choices;
          if (!(defaults.*member).empty()) s["default"] = defaults.*member;
        } else if constexpr (std::is_same_v<T, bool>) {
          s["type"] = "boolean";
          s["default"] = defaults.*member;
        } else if constexpr (std::is_same_v<T, int> || std::is_same_v<T, double>) {
          s["type"] = std::is_same_v<T, int> ? "integer" : "number";
          s["default"] = defaults.*member;
          if (f.min > -1e299) s["minimum"] = f.min;
          if (f.max < 1e299) s["maximum"] = f.max;
        } else {
          s["type"] = "object";
          s["additionalProperties"] = json{{"type", json::array({"string", "number", "boolean"})}};
        }
      },
      f.member);
  s["description"] = f.description;
  return s;
}

}  // namespace

json parse_request_json(std::string_view text, size_t max_depth) {
  size_t depth = 0;
  bool in_string = false, escaped = false;
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (in_string) {
      if (escaped)
        escaped = false;
      else if (c == '\\')
        escaped = true;
      else if (c == '"')
        in_string = false;
    } else if (c == '"') {
      in_string = true;
    } else if (c == '[' || c == '{') {
      if (++depth > max_depth)
        throw Error(
            ExitCode::bad_input,
            fmt::format("the JSON is nested more than {} levels deep (at byte {}); requests need a few", max_depth, i));
    } else if ((c == ']' || c == '}') && depth > 0) {
      --depth;
    }
  }
  try {
    return json::parse(text);
  } catch (const json::exception& e) {  // parse_error, and out_of_range for numbers such as 1e400
    throw Error(ExitCode::bad_input, std::string("not valid JSON: ") + e.what());
  }
}

template <class P>
P params_from_json(const json& j, const std::vector<Field<P>>& fields, const std::set<std::string>& ignore) {
  if (!j.is_object()) throw Error(ExitCode::usage, "the parameters must be a JSON object");
  P p;
  for (auto item = j.begin(); item != j.end(); ++item) {  // not a structured binding: clang 14 cannot capture one
    const std::string& key = item.key();
    const json& value = item.value();
    if (ignore.count(key)) continue;
    auto it = std::find_if(fields.begin(), fields.end(), [&](const Field<P>& f) { return f.name == key; });
    if (it == fields.end()) {
      std::vector<std::string> names;
      for (const auto& f : fields) names.push_back(f.name);
      throw Error(ExitCode::usage, "unknown field '" + key + "'; valid fields: " + join(names));
    }
    if (value.is_null()) continue;  // null = the default
    read_field(value, p, *it);
  }
  return p;
}

template <class P>
json params_schema(const std::vector<Field<P>>& fields, const std::vector<std::string>& required,
                   const std::set<std::string>& omit) {
  json props = json::object();
  for (const auto& f : fields)
    if (!omit.count(f.name)) props[f.name] = field_schema(f);
  json s = {{"type", "object"}, {"properties", props}, {"additionalProperties", false}};
  if (!required.empty()) s["required"] = required;
  return s;
}

#define REPOCTX_INSTANTIATE(P)                                                                             \
  template P params_from_json<P>(const json&, const std::vector<Field<P>>&, const std::set<std::string>&); \
  template json params_schema<P>(const std::vector<Field<P>>&, const std::vector<std::string>&,            \
                                 const std::set<std::string>&);
REPOCTX_INSTANTIATE(RetrieveParams)
REPOCTX_INSTANTIATE(LocalizeParams)
REPOCTX_INSTANTIATE(SymbolsParams)
REPOCTX_INSTANTIATE(FilesParams)
REPOCTX_INSTANTIATE(SnippetsParams)
REPOCTX_INSTANTIATE(ReadParams)
REPOCTX_INSTANTIATE(GrepParams)
REPOCTX_INSTANTIATE(GenerateParams)
#undef REPOCTX_INSTANTIATE

const std::vector<Field<RetrieveParams>>& retrieve_fields() {
  using P = RetrieveParams;
  static const std::vector<Field<P>> f = {
      {"target", kTargetDoc, &P::target},
      {"query", "free-text query (instead of, or overriding, the target's signature and docstring)", &P::query},
      Field<P>{"strategy",
               "retrieval strategy (`repoctx strategies`); empty = structural for a target, cursor-deps for a "
               "completion cursor, sparse for a query (the best measured for each, docs/EVAL.md)",
               &P::strategy, strategy_names()}
          .on_cli("-s,--strategy"),
      Field<P>{"k", "number of results", &P::k, {}, 1, 10000}.on_cli("-k,--k,--top-k"),
      {"with_text", "include each result's source text", &P::with_text},
      {"exclude_tests", "leave test files (tests/, test_*.py, conftest.py) out; the next results take their places",
       &P::exclude_tests},
      {"corpus", "sparse: what BM25 ranks", &P::corpus, {"entities", "snippets"}},
      {"k1", "BM25 k1", &P::k1, {}, 0, 100},
      {"b", "BM25 b", &P::b, {}, 0, 1},
      {"pool_methods", "imports: also rank methods of pool classes", &P::pool_methods},
      {"bm25_only", "imports: rank by BM25 alone even with an embedding model", &P::bm25_only},
      {"structural_model",
       "structural: weights file (empty or builtin = the shipped model; a server takes the names of the models it "
       "loaded)",
       &P::structural_model},
      {"locate_model", "locate: model file (empty or builtin = the built-in one; a server serves only that)",
       &P::locate_model},
      {"model_file",
       "aligncoder, rlcoder: AlignRetriever model file (empty or builtin = the built-in one; a server takes the names "
       "of the models it loaded)",
       &P::model_file},
      {"file", "completion cursor: the file being written (path relative to the repository root)", &P::file},
      {"line",
       "completion cursor: its line (1-based); the text from the cursor on is treated as absent",
       &P::line,
       {},
       0,
       1e9},
      {"column", "completion cursor: its column in bytes", &P::column, {}, 0, 1e6},
      Field<P>{"params", kRetrieveParamsDoc, &P::params}.on_cli("--param"),
      Field<P>{"trace", "return the strategy's trace (procedural, the study's agents)", &P::trace}.on_cli(
          "-", "--trace FILE writes the trace to FILE"),
  };
  return f;
}

const std::vector<Field<LocalizeParams>>& localize_fields() {
  using P = LocalizeParams;
  static const std::vector<Field<P>> f = [] {
    std::vector<std::string> names;
    for (const auto& s : localize_strategies()) names.push_back(s.name);
    return std::vector<Field<P>>{
        Field<P>{"request", "the change request: an issue text or a commit message", &P::request}.on_cli(
            "--request,--query"),
        Field<P>{"strategy", "localization strategy (the context-retrieval study's; study-bm25 needs no model)",
                 &P::strategy, names}
            .on_cli("-s,--strategy"),
        {"with_text", "include each range's source text", &P::with_text},
        {"locate_model", "locate: model file (empty or builtin = the built-in one; a server serves only that)",
         &P::locate_model},
        Field<P>{"params",
                 "study parameters NAME -> VALUE (context_tokens, chunk_chars, chunk_overlap, ...; a VALUE that "
                 "parses as JSON is taken as JSON)",
                 &P::params}
            .on_cli("--param"),
        Field<P>{"trace", "return the strategy's trace", &P::trace}.on_cli("-",
                                                                           "--trace FILE writes the trace to FILE"),
    };
  }();
  return f;
}

const std::vector<Field<SymbolsParams>>& symbols_fields() {
  using P = SymbolsParams;
  static const std::vector<Field<P>> f = {
      {"kind", "only this kind (class, function, method, variable, attribute, ...)", &P::kind},
      {"file", "only this file (path relative to the repository root)", &P::file},
      {"name", "only qualified names containing this text (case-insensitive)", &P::name},
      {"limit", "at most this many (0 = all)", &P::limit, {}, 0, 10000000},
  };
  return f;
}

const std::vector<Field<FilesParams>>& files_fields() {
  using P = FilesParams;
  static const std::vector<Field<P>> f = {{"errors_only", "only files with syntax errors", &P::errors_only}};
  return f;
}

const std::vector<Field<SnippetsParams>>& snippets_fields() {
  using P = SnippetsParams;
  static const std::vector<Field<P>> f = {
      {"file", "path relative to the repository root", &P::file},
      {"dependency", "AlignCoder dependency snippets of the file's imports", &P::dependency},
  };
  return f;
}

const std::vector<Field<ReadParams>>& read_fields() {
  using P = ReadParams;
  static const std::vector<Field<P>> f = {
      {"path", "file path relative to the repository root", &P::path},
      {"start_line", "first line (1-based)", &P::start_line, {}, 1, 1e9},
      {"end_line", "last line, inclusive (0 = start_line + max_lines - 1)", &P::end_line, {}, 0, 1e9},
      {"max_lines", "lines shown at most", &P::max_lines, {}, 1, 100000},
      {"max_chars", "characters shown at most", &P::max_chars, {}, 1, 1 << 20},
  };
  return f;
}

const std::vector<Field<GrepParams>>& grep_fields() {
  using P = GrepParams;
  static const std::vector<Field<P>> f = {
      {"pattern", "RE2 regular expression (\"(?i)\" for case-insensitive), or a literal with fixed", &P::pattern},
      {"path", "directory or file under the repository root (empty = everywhere)", &P::path},
      {"fixed", "match the pattern as a literal string", &P::fixed},
      {"max_matches", "matching lines shown at most", &P::max_matches, {}, 1, 100000},
      {"max_chars", "characters shown at most", &P::max_chars, {}, 1, 1 << 20},
  };
  return f;
}

const std::vector<Field<GenerateParams>>& generate_fields() {
  using P = GenerateParams;
  static const std::vector<Field<P>> f = {
      {"target", kTargetDoc, &P::target},
      {"method", "generation method", &P::method, repoctx::generation_methods()},
      {"prompt_budget_tokens", "tokens of context in the prompt", &P::prompt_budget_tokens, {}, 0, 1e7},
      {"max_tokens", "tokens generated at most", &P::max_tokens, {}, 1, 1e6},
      {"max_rounds", "static-analysis feedback rounds", &P::max_rounds, {}, 0, 100},
      {"params", kParamsDoc, &P::params},
      {"trace", "return the generation trace", &P::trace},
  };
  return f;
}

json to_json(const RefreshStats& r) {
  return {{"db", r.db},           {"files", r.files},       {"parsed", r.parsed},           {"unchanged", r.unchanged},
          {"removed", r.removed}, {"skipped", r.skipped},   {"with_errors", r.with_errors}, {"entities", r.entities},
          {"seconds", r.seconds}, {"complete", r.complete}, {"reloaded", r.reloaded}};
}

static json hit_json(const Hit& h) {
  json j = {{"rank", h.rank},         {"type", h.type},  {"file", h.file}, {"start_line", h.start_line},
            {"end_line", h.end_line}, {"score", h.score}};
  if (!h.qualname.empty()) {
    j["qualname"] = h.qualname;
    j["kind"] = h.kind;
    j["target"] = h.target;
  }
  if (!h.label.empty()) j["label"] = h.label;
  if (!h.description.empty()) j["description"] = h.description;
  if (!h.features.empty()) j["features"] = h.features;
  if (!h.text.empty()) j["text"] = h.text;
  return j;
}

json to_json(const RetrieveResult& r) {
  json j = {{"strategy", r.strategy}, {"score", r.score}, {"query", r.query}, {"results", json::array()}};
  if (!r.target.empty()) j["target"] = r.target;
  for (const auto& h : r.hits) j["results"].push_back(hit_json(h));
  if (!r.plan.empty()) {
    j["plan"] = json::array();
    for (const auto& s : r.plan)
      j["plan"].push_back(
          {{"step", s.step}, {"description", s.description}, {"confirmed", s.confirmed}, {"hits", s.hits}});
  }
  if (!r.trace.empty()) j["trace"] = json::parse(r.trace, nullptr, false);
  if (!r.usage.empty()) j["llm_usage"] = json::parse(r.usage, nullptr, false);
  return j;
}

json to_json(const LocalizeResult& r) {
  json j = {{"strategy", r.strategy},
            {"score", r.score},
            {"context_tokens", r.context_tokens},
            {"stop_reason", r.stop_reason},
            {"results", json::array()}};
  for (const auto& h : r.hits) j["results"].push_back(hit_json(h));
  if (!r.trace.empty()) j["trace"] = json::parse(r.trace, nullptr, false);
  if (!r.usage.empty()) j["llm_usage"] = json::parse(r.usage, nullptr, false);
  return j;
}

json to_json(const std::vector<Symbol>& v) {
  json a = json::array();
  for (const auto& s : v)
    a.push_back({{"file", s.file},
                 {"module", s.module},
                 {"qualname", s.qualname},
                 {"kind", s.kind},
                 {"target", s.target},
                 {"start_line", s.start_line},
                 {"end_line", s.end_line},
                 {"decorated_start_line", s.decorated_start_line},
                 {"signature", s.signature}});
  return a;
}

json to_json(const std::vector<FileInfo>& v) {
  json a = json::array();
  for (const auto& f : v)
    a.push_back({{"path", f.path},
                 {"module", f.module},
                 {"language", f.language},
                 {"lines", f.lines},
                 {"entities", f.entities},
                 {"syntax_errors", f.syntax_errors}});
  return a;
}

json to_json(const std::vector<Snippet>& v) {
  json a = json::array();
  for (const auto& s : v) {
    json j = {{"text", s.text}};
    if (!s.label.empty())
      j["label"] = s.label;
    else {
      j["start_line"] = s.start_line;
      j["end_line"] = s.end_line;
    }
    a.push_back(std::move(j));
  }
  return a;
}

json to_json(const GenerateResult& r) {
  json j = {{"method", r.method}, {"target", r.target}, {"body", r.body},           {"function", r.function_text},
            {"diff", r.diff},     {"rounds", r.rounds}, {"findings", json::array()}};
  for (const auto& f : r.findings) j["findings"].push_back(json::parse(f, nullptr, false));
  if (!r.trace.empty()) j["trace"] = json::parse(r.trace, nullptr, false);
  if (!r.usage.empty()) j["llm_usage"] = json::parse(r.usage, nullptr, false);
  return j;
}

json to_json(const IndexInfo& i) {
  return {{"root", i.root},
          {"db", i.db},
          {"files", i.files},
          {"entities", i.entities},
          {"snippets", i.snippets},
          {"complete", i.complete},
          {"fast_load", i.fast_load},
          {"load_seconds", i.load_seconds},
          {"generation", i.generation}};
}

json to_json(const CacheStats& c) {
  json rows = json::array();
  for (const auto& r : c.rows)
    rows.push_back({{"op", r.op},
                    {"model", r.model},
                    {"entries", r.entries},
                    {"prompt_tokens", r.prompt_tokens},
                    {"completion_tokens", r.completion_tokens}});
  return {{"path", c.path}, {"rows", rows}, {"hits", c.hits}, {"misses", c.misses}};
}

json to_json(const std::vector<StrategyInfo>& v) {
  json a = json::array();
  for (const auto& s : v)
    a.push_back({{"name", s.name}, {"description", s.description}, {"needs", s.needs}, {"score", s.score}});
  return a;
}

}  // namespace repoctx::api
