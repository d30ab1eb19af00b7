#include "retrieve/study/params.h"

#include <variant>

#include "util/error.h"

namespace repoctx {
namespace {

using json = nlohmann::json;
// A field reached from StudyParams: an int, double or bool somewhere inside it.
using Getter = std::variant<int* (*)(StudyParams&), double* (*)(StudyParams&), bool* (*)(StudyParams&)>;

#define F(name, expr)                               \
  {                                                 \
    name, +[](StudyParams& p) { return &(p.expr); } \
  }
const std::vector<std::pair<const char*, Getter>>& fields() {
  static const std::vector<std::pair<const char*, Getter>> f = {
      F("chunk_chars", chunks.chunk_chars),
      F("chunk_overlap", chunks.chunk_overlap),
      F("bm25_k1", chunks.k1),
      F("bm25_b", chunks.b),
      F("bm25_epsilon", chunks.epsilon),
      F("context_tokens", context_tokens),
      F("baseline_candidates", baseline_candidates),
      F("baseline_margin", baseline_margin),
      F("search_limit", search_limit),
      F("search_max_limit", search_max_limit),
      F("cl_max_rounds", cl_max_rounds),
      F("sr_max_reviews", sr_max_reviews),
      F("review_tokens", review_tokens),
      F("review_chars", review_chars),
      F("max_turns", react.max_turns),
      F("run_turns", react.run_turns),
      F("turn_tokens", react.turn_tokens),
      F("thought_chars", react.thought_chars),
      F("answer_chars", react.answer_chars),
      F("string_arg_chars", react.string_arg_chars),
      F("tool_output_chars", react.tool_output_chars),
      F("conversation_tokens", react.conversation_tokens),
      F("compaction_tokens", react.compaction_tokens),
      F("loop_repeats", react.loop_repeats),
      F("max_invalid", react.max_invalid),
      F("acr_max_rounds", acr_max_rounds),
      F("acr_max_tries", acr_max_tries),
      F("acr_answer_tokens", acr_answer_tokens),
      F("acr_proxy_tokens", acr_proxy_tokens),
      F("acr_max_calls", acr_max_calls),
      F("acr_max_locations", acr_max_locations),
      F("acr_result_limit", acr_result_limit),
      F("acr_class_full_limit", acr_class_full_limit),
      F("acr_code_context", acr_code_context),
      F("acr_skip_tests", acr_skip_tests),
  };
  return f;
}
#undef F

}  // namespace

json StudyParams::to_json() const {
  json j = json::object();
  StudyParams copy = *this;
  for (const auto& e : fields())
    std::visit([&](auto get) { j[e.first] = *get(copy); }, e.second);  // clang 14: no captured bindings
  return j;
}

bool StudyParams::has(const std::string& name) {
  for (const auto& f : fields())
    if (name == f.first) return true;
  return false;
}

void StudyParams::apply(const json& j) {
  for (auto it = j.begin(); it != j.end(); ++it) {
    const std::string& k = it.key();
    const json& v = it.value();
    auto f = std::find_if(fields().begin(), fields().end(), [&](const auto& p) { return k == p.first; });
    if (f == fields().end()) {
      std::string names;
      for (const auto& p : fields()) names += (names.empty() ? "" : ", ") + std::string(p.first);
      throw Error(ExitCode::usage, "unknown study parameter '" + k + "' (parameters: " + names + ")");
    }
    std::visit(
        [&](auto get) {
          auto* field = get(*this);
          using T = std::remove_pointer_t<decltype(field)>;
          bool ok = std::is_same_v<T, bool> ? v.is_boolean() : v.is_number();
          if (std::is_same_v<T, int>) ok = v.is_number_integer();
          if (!ok)
            throw Error(ExitCode::usage, "study parameter '" + k + "' has a value of the wrong type: " + v.dump());
          *field = v.get<T>();
        },
        f->second);
  }
}

}  // namespace repoctx
