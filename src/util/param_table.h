// A parameter struct's fields by name, one table per struct: it drives to_json (traces, run manifests),
// apply (--param NAME=VALUE and config files, type-checked) and has(). ProceduralParams, StudyParams and
// CompletionParams each keep only their table.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include <nlohmann/json.hpp>

namespace repoctx {

// A pointer to one field of a parameter struct.
using ParamRef = std::variant<int*, double*, bool*, uint64_t*, std::string*>;

// One row: the parameter's public name and how to reach its field. A plain function pointer (not a
// pointer-to-member) so that nested fields (`chunks.k1`) are reachable too.
template <class P>
using ParamTable = std::vector<std::pair<const char*, ParamRef (*)(P&)>>;

// A table row reaching `p.expr`: REPOCTX_PARAM(StudyParams, "bm25_k1", chunks.k1).
#define REPOCTX_PARAM(P, name, expr)                             \
  {                                                              \
    name, +[](P& p) -> ::repoctx::ParamRef { return &(p.expr); } \
  }

// The field's value as JSON.
nlohmann::json param_value(const ParamRef& ref);
// Sets the field from `v`, or throws Error(usage) naming `what` ("study parameter 'k' ...") when v has the
// wrong type (an integer field takes only integers, an unsigned one only non-negative ones).
void assign_param(const ParamRef& ref, const nlohmann::json& v, const std::string& key, const std::string& what);
// Error(usage): "unknown <what> 'key' (parameters: a, b, ...)".
[[noreturn]] void throw_unknown_param(const std::string& key, const std::string& what,
                                      const std::vector<std::string>& names);

template <class P>
nlohmann::json params_to_json(const P& params, const ParamTable<P>& table) {
  nlohmann::json j = nlohmann::json::object();
  P copy = params;  // the table's accessors take a mutable struct
  for (const auto& row : table) j[row.first] = param_value(row.second(copy));
  return j;
}

template <class P>
bool has_param(const ParamTable<P>& table, const std::string& name) {
  for (const auto& row : table)
    if (name == row.first) return true;
  return false;
}

// Applies every key of the object `j`; the first unknown key or wrongly typed value throws Error(usage).
template <class P>
void apply_params(P& params, const nlohmann::json& j, const ParamTable<P>& table, const std::string& what) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const auto* row = [&]() -> const std::pair<const char*, ParamRef (*)(P&)>* {
      for (const auto& r : table)
        if (it.key() == r.first) return &r;
      return nullptr;
    }();
    if (!row) {
      std::vector<std::string> names;
      for (const auto& r : table) names.emplace_back(r.first);
      throw_unknown_param(it.key(), what, names);
    }
    assign_param(row->second(params), it.value(), it.key(), what);
  }
}

}  // namespace repoctx
