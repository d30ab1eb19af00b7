#include "retrieve/aligncoder/params.h"

#include <algorithm>
#include <utility>
#include <variant>
#include <vector>

#include "util/error.h"

namespace repoctx {

using nlohmann::json;

namespace {
using Field = std::variant<int CompletionParams::*, double CompletionParams::*, uint64_t CompletionParams::*,
                           std::string CompletionParams::*>;
const std::vector<std::pair<const char*, Field>>& fields() {
  static const std::vector<std::pair<const char*, Field>> f = {
      {"query_lines", &CompletionParams::query_lines},
      {"recent_lines", &CompletionParams::recent_lines},
      {"dependency_snippets", &CompletionParams::dependency_snippets},
      {"coarse_k", &CompletionParams::coarse_k},
      {"samples", &CompletionParams::samples},
      {"temperature", &CompletionParams::temperature},
      {"top_p", &CompletionParams::top_p},
      {"sample_tokens", &CompletionParams::sample_tokens},
      {"seed", &CompletionParams::seed},
      {"candidates", &CompletionParams::candidates},
      {"pool", &CompletionParams::pool},
      {"model_path", &CompletionParams::model_path},
      {"hybrid_weight", &CompletionParams::hybrid_weight},
      {"iterations", &CompletionParams::iterations},
      {"generation_tokens", &CompletionParams::generation_tokens},
      {"context_chars", &CompletionParams::context_chars},
      {"code_chars", &CompletionParams::code_chars},
  };
  return f;
}
}  // namespace

bool CompletionParams::has(const std::string& name) {
  return std::any_of(fields().begin(), fields().end(), [&](const auto& p) { return name == p.first; });
}

void CompletionParams::apply(const json& j) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    auto f = std::find_if(fields().begin(), fields().end(), [&](const auto& p) { return k == p.first; });
    if (f == fields().end()) {
      std::string names;
      for (const auto& p : fields()) names += (names.empty() ? "" : ", ") + std::string(p.first);
      throw Error(ExitCode::usage, "unknown completion parameter '" + k + "' (parameters: " + names + ")");
    }
    std::visit(
        [&](auto m) {
          using T = std::remove_reference_t<decltype(this->*m)>;
          bool ok = std::is_same_v<T, std::string> ? v.is_string() : v.is_number();
          if (std::is_integral_v<T>) ok = v.is_number_integer() && (!std::is_unsigned_v<T> || v.get<int64_t>() >= 0);
          if (!ok)
            throw Error(ExitCode::usage, "completion parameter '" + k + "' has a value of the wrong type: " + v.dump());
          this->*m = v.get<T>();
        },
        f->second);
  }
}

json CompletionParams::to_json() const {
  json j;
  for (const auto& e : fields())
    std::visit([&](auto m) { j[e.first] = this->*m; }, e.second);  // clang 14: no captured bindings
  return j;
}

}  // namespace repoctx
