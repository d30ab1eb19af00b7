// The JSON forms of the public API's parameters and results, shared by every front end that speaks JSON
// (the HTTP server, the MCP server, the Python module): one table of fields per parameter struct gives the
// parser, its error messages and the JSON Schema an MCP client sees, so the three front ends accept the
// same names with the same types and defaults.
#pragma once

#include <map>
#include <set>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

#include "repoctx/repoctx.h"

namespace repoctx::api {

template <class P>
struct Field {
  using Member =
      std::variant<std::string P::*, int P::*, double P::*, bool P::*, std::map<std::string, std::string> P::*>;
  Field(std::string n, std::string d, Member m, std::vector<std::string> c = {}, double lo = -1e300, double hi = 1e300)
      : name(std::move(n)), description(std::move(d)), member(m), choices(std::move(c)), min(lo), max(hi) {}
  // The CLI's spelling when it is not `--name` with dashes for underscores (CLI11's form, e.g. "-k,--k,--top-k":
  // the first long name is the one documented, the others are kept spellings); "-" = not a CLI option, and
  // `cli_note` then says what the CLI has instead.
  Field& on_cli(std::string spelling, std::string note = {}) {
    cli = std::move(spelling);
    cli_note = std::move(note);
    return *this;
  }
  std::string name;
  std::string description;
  Member member;
  std::vector<std::string> choices;  // strings: the valid values (empty = any)
  double min, max;                   // numbers: the valid range
  std::string cli;                   // empty = "--" + name with '_' -> '-'
  std::string cli_note;
};

// The CLI's spelling of a field (Field::cli, or `--name` with dashes); empty when it is not a CLI option.
template <class P>
std::string cli_spelling(const Field<P>& f) {
  if (f.cli == "-") return {};
  if (!f.cli.empty()) return f.cli;
  std::string s = "--" + f.name;
  for (auto& c : s)
    if (c == '_') c = '-';
  return s;
}

// How deeply a request's JSON may nest. Requests need 3 levels; nlohmann's copy, dump and comparison
// recurse once per level, so an unbounded depth would let one request exhaust a thread's stack.
inline constexpr size_t kMaxRequestDepth = 64;

// Parses the JSON text of a request (an HTTP body, an MCP message). The nesting depth is checked first, in
// one pass over the text, so that nothing deeper than `max_depth` is ever built. Throws Error(bad_input)
// naming the problem: nested too deeply, not valid JSON, a number outside double's range.
nlohmann::json parse_request_json(std::string_view text, size_t max_depth = kMaxRequestDepth);

const std::vector<Field<RetrieveParams>>& retrieve_fields();
const std::vector<Field<LocalizeParams>>& localize_fields();
const std::vector<Field<SymbolsParams>>& symbols_fields();
const std::vector<Field<FilesParams>>& files_fields();
const std::vector<Field<SnippetsParams>>& snippets_fields();
const std::vector<Field<ReadParams>>& read_fields();
const std::vector<Field<GrepParams>>& grep_fields();
const std::vector<Field<GenerateParams>>& generate_fields();

// Reads the fields of `j` (an object) into a default-constructed P. Throws Error(usage) naming the field
// for an unknown name (listing the valid ones), a wrong type, a value outside its range or choices.
// Names in `ignore` (e.g. "repo", read by the caller) are skipped.
template <class P>
P params_from_json(const nlohmann::json& j, const std::vector<Field<P>>& fields,
                   const std::set<std::string>& ignore = {});

// JSON Schema (draft 2020-12 subset) of an object with these fields; `required` names must be given,
// `omit` fields are left out (a front end that fixes them).
template <class P>
nlohmann::json params_schema(const std::vector<Field<P>>& fields, const std::vector<std::string>& required = {},
                             const std::set<std::string>& omit = {});

nlohmann::json to_json(const RefreshStats& r);
nlohmann::json to_json(const RetrieveResult& r);
nlohmann::json to_json(const LocalizeResult& r);
nlohmann::json to_json(const std::vector<Symbol>& v);
nlohmann::json to_json(const std::vector<FileInfo>& v);
nlohmann::json to_json(const std::vector<Snippet>& v);
nlohmann::json to_json(const GenerateResult& r);
nlohmann::json to_json(const IndexInfo& i);
nlohmann::json to_json(const CacheStats& c);
nlohmann::json to_json(const std::vector<StrategyInfo>& v);

}  // namespace repoctx::api
