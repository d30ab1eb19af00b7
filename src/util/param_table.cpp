#include "util/param_table.h"

#include <cmath>
#include <cstdint>
#include <type_traits>

#include "util/error.h"

namespace repoctx {

using nlohmann::json;

json param_value(const ParamRef& ref) {
  return std::visit([](auto* field) { return json(*field); }, ref);
}

namespace {
std::string number_text(double x) {
  json j = x;
  if (x == static_cast<double>(static_cast<int64_t>(x)) && std::abs(x) < 1e15) j = static_cast<int64_t>(x);
  return j.dump();
}

// The doc's range and choices, checked before the field is set.
void check_doc(const json& v, const std::string& key, const std::string& what, const ParamDoc& doc) {
  if (v.is_number()) {
    double x = v.get<double>();
    if (x < doc.min || x > doc.max) {
      std::string range = doc.max >= 1e300    ? ">= " + number_text(doc.min)
                          : doc.min <= -1e300 ? "<= " + number_text(doc.max)
                                              : number_text(doc.min) + ".." + number_text(doc.max);
      throw Error(ExitCode::usage, what + " '" + key + "' takes " + range + ", got " + v.dump());
    }
  }
  if (v.is_string() && doc.choices[0] != '\0') {
    std::string choices = doc.choices, value = v.get<std::string>();
    size_t start = 0;
    while (true) {
      size_t bar = choices.find('|', start);
      if (choices.compare(start, bar == std::string::npos ? std::string::npos : bar - start, value) == 0) return;
      if (bar == std::string::npos) break;
      start = bar + 1;
    }
    // "a, b or c", as a sentence says it.
    std::string list = choices;
    size_t last = list.rfind('|');
    if (last != std::string::npos) list.replace(last, 1, " or ");
    for (size_t bar; (bar = list.find('|')) != std::string::npos;) list.replace(bar, 1, ", ");
    throw Error(ExitCode::usage, what + " '" + key + "' takes " + list + ", got '" + value + "'");
  }
}
}  // namespace

const char* param_type(const ParamRef& ref) {
  return std::visit(
      [](auto* field) -> const char* {
        using T = std::remove_pointer_t<decltype(field)>;
        if constexpr (std::is_same_v<T, bool>)
          return "boolean";
        else if constexpr (std::is_same_v<T, std::string>)
          return "string";
        else if constexpr (std::is_same_v<T, double>)
          return "number";
        else
          return "integer";
      },
      ref);
}

json param_entry(const char* name, const ParamRef& ref, const ParamDoc& doc, const std::string& group) {
  json e = {{"name", name},           {"group", group},      {"type", param_type(ref)}, {"default", param_value(ref)},
            {"meaning", doc.meaning}, {"source", doc.source}};
  // An integer parameter's bounds as integers (a schema's reader checks 1001 against 1000, not 1001.0).
  const bool integer = e["type"] == "integer";
  if (doc.min > -1e300) e["minimum"] = integer ? json(static_cast<int64_t>(doc.min)) : json(doc.min);
  if (doc.max < 1e300) e["maximum"] = integer ? json(static_cast<int64_t>(doc.max)) : json(doc.max);
  if (doc.choices[0] != '\0') {
    json c = json::array();
    std::string s = doc.choices;
    for (size_t start = 0;;) {
      size_t bar = s.find('|', start);
      c.push_back(s.substr(start, bar == std::string::npos ? std::string::npos : bar - start));
      if (bar == std::string::npos) break;
      start = bar + 1;
    }
    e["choices"] = c;
  }
  return e;
}

void assign_param(const ParamRef& ref, const json& v, const std::string& key, const std::string& what,
                  const ParamDoc& doc) {
  std::visit(
      [&](auto* field) {
        using T = std::remove_pointer_t<decltype(field)>;
        bool ok = false;
        if constexpr (std::is_same_v<T, bool>)
          ok = v.is_boolean();
        else if constexpr (std::is_same_v<T, std::string>)
          ok = v.is_string();
        else if constexpr (std::is_same_v<T, double>)
          ok = v.is_number();
        else if constexpr (std::is_unsigned_v<T>)
          ok = v.is_number_unsigned() || (v.is_number_integer() && v.get<int64_t>() >= 0);
        else
          ok = v.is_number_integer();
        if (!ok)
          throw Error(ExitCode::usage, what + " '" + key + "' has a value of the wrong type: " + v.dump() +
                                           " (it takes " + param_type(ref) + " values)");
        check_doc(v, key, what, doc);
        *field = v.get<T>();
      },
      ref);
}

void throw_unknown_param(const std::string& key, const std::string& what, const std::vector<std::string>& names) {
  std::string list;
  for (const auto& n : names) list += (list.empty() ? "" : ", ") + n;
  throw Error(ExitCode::usage, "unknown " + what + " '" + key + "' (parameters: " + list + ")");
}

}  // namespace repoctx
