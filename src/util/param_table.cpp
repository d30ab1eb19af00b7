#include "util/param_table.h"

#include <type_traits>

#include "util/error.h"

namespace repoctx {

using nlohmann::json;

json param_value(const ParamRef& ref) {
  return std::visit([](auto* field) { return json(*field); }, ref);
}

void assign_param(const ParamRef& ref, const json& v, const std::string& key, const std::string& what) {
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
        if (!ok) throw Error(ExitCode::usage, what + " '" + key + "' has a value of the wrong type: " + v.dump());
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
