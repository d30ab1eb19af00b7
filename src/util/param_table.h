// A parameter struct's fields by name, one table per struct and one row per parameter: its name, its field,
// what it means, the values it takes and where its default comes from. The row drives to_json (traces, run
// manifests), apply (--param NAME=VALUE, the API's params, config files: type- and range-checked), has(),
// the CLI options made from it and the generated docs table (`repoctx parameters`). ProceduralParams,
// StudyParams, CompletionParams and the retriever's own options each keep only their table.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace repoctx {

// A pointer to one field of a parameter struct.
using ParamRef = std::variant<int*, double*, bool*, uint64_t*, std::string*>;

// What a parameter means and which values it takes.
struct ParamDoc {
  const char* meaning = "";
  double min = -1e300, max = 1e300;  // numbers: the valid range
  const char* choices = "";          // strings with a closed set of values, '|'-separated ("sample|oracle|none")
  const char* source = "";  // where the default comes from: a paper's section, or "repoctx" (docs/DEVIATIONS.md)
};

// One row: the parameter's public name, how to reach its field (a plain function pointer, not a
// pointer-to-member, so that nested fields such as `chunks.k1` are reachable too) and its doc.
template <class P>
struct ParamRow {
  const char* name;
  ParamRef (*ref)(P&);
  ParamDoc doc;
};
template <class P>
using ParamTable = std::vector<ParamRow<P>>;

// A table row reaching `p.expr`, its doc as designated initialisers:
//   REPOCTX_PARAM(StudyParams, "bm25_k1", chunks.k1, .meaning = "BM25's k1", .min = 0, .source = "study 3.1")
#define REPOCTX_PARAM(P, name, expr, ...)                                               \
  {                                                                                     \
    name, +[](P& p) -> ::repoctx::ParamRef { return &(p.expr); }, ::repoctx::ParamDoc { \
      __VA_ARGS__                                                                       \
    }                                                                                   \
  }

// The field's value as JSON.
nlohmann::json param_value(const ParamRef& ref);
// Sets the field from `v`, or throws Error(usage) naming `what` ("study parameter 'k' ...") when v has the
// wrong type (an integer field takes only integers, an unsigned one only non-negative ones), lies outside
// the doc's range or is not one of its choices. Nothing is set when it throws.
void assign_param(const ParamRef& ref, const nlohmann::json& v, const std::string& key, const std::string& what,
                  const ParamDoc& doc = {});
// The JSON type name of the field ("integer", "number", "boolean", "string").
const char* param_type(const ParamRef& ref);
// One catalogue entry: {name, group, type, default, meaning, source, minimum/maximum or choices}.
nlohmann::json param_entry(const char* name, const ParamRef& ref, const ParamDoc& doc, const std::string& group);
// Error(usage): "unknown <what> 'key' (parameters: a, b, ...)".
[[noreturn]] void throw_unknown_param(const std::string& key, const std::string& what,
                                      const std::vector<std::string>& names);

template <class P>
nlohmann::json params_to_json(const P& params, const ParamTable<P>& table) {
  nlohmann::json j = nlohmann::json::object();
  P copy = params;  // the table's accessors take a mutable struct
  for (const auto& row : table) j[row.name] = param_value(row.ref(copy));
  return j;
}

template <class P>
bool has_param(const ParamTable<P>& table, const std::string& name) {
  for (const auto& row : table)
    if (name == row.name) return true;
  return false;
}

// Applies every key of the object `j`; the first unknown key or wrongly typed value throws Error(usage).
template <class P>
void apply_params(P& params, const nlohmann::json& j, const ParamTable<P>& table, const std::string& what) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const ParamRow<P>* row = nullptr;
    for (const auto& r : table)
      if (it.key() == r.name) row = &r;
    if (!row) {
      std::vector<std::string> names;
      for (const auto& r : table) names.emplace_back(r.name);
      throw_unknown_param(it.key(), what, names);
    }
    assign_param(row->ref(params), it.value(), it.key(), what, row->doc);
  }
}

// Every row of the table as a catalogue entry (param_entry), with the defaults of a default-made P.
template <class P>
nlohmann::json params_catalogue(const ParamTable<P>& table, const std::string& group) {
  nlohmann::json out = nlohmann::json::array();
  // On the heap: GCC 12 takes the strings of a large aggregate on the stack for "maybe uninitialized" here.
  auto defaults = std::make_unique<P>();
  for (const auto& row : table) out.push_back(param_entry(row.name, row.ref(*defaults), row.doc, group));
  return out;
}

}  // namespace repoctx
