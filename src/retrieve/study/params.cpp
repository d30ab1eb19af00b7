#include "retrieve/study/params.h"

#include "util/param_table.h"

namespace repoctx {
namespace {

const ParamTable<StudyParams>& fields() {
  static const ParamTable<StudyParams> f = {
      REPOCTX_PARAM(StudyParams, "chunk_chars", chunks.chunk_chars),
      REPOCTX_PARAM(StudyParams, "chunk_overlap", chunks.chunk_overlap),
      REPOCTX_PARAM(StudyParams, "bm25_k1", chunks.k1),
      REPOCTX_PARAM(StudyParams, "bm25_b", chunks.b),
      REPOCTX_PARAM(StudyParams, "bm25_epsilon", chunks.epsilon),
      REPOCTX_PARAM(StudyParams, "context_tokens", context_tokens),
      REPOCTX_PARAM(StudyParams, "baseline_candidates", baseline_candidates),
      REPOCTX_PARAM(StudyParams, "baseline_margin", baseline_margin),
      REPOCTX_PARAM(StudyParams, "search_limit", search_limit),
      REPOCTX_PARAM(StudyParams, "search_max_limit", search_max_limit),
      REPOCTX_PARAM(StudyParams, "cl_max_rounds", cl_max_rounds),
      REPOCTX_PARAM(StudyParams, "sr_max_reviews", sr_max_reviews),
      REPOCTX_PARAM(StudyParams, "review_tokens", review_tokens),
      REPOCTX_PARAM(StudyParams, "review_chars", review_chars),
      REPOCTX_PARAM(StudyParams, "max_turns", react.max_turns),
      REPOCTX_PARAM(StudyParams, "run_turns", react.run_turns),
      REPOCTX_PARAM(StudyParams, "turn_tokens", react.turn_tokens),
      REPOCTX_PARAM(StudyParams, "thought_chars", react.thought_chars),
      REPOCTX_PARAM(StudyParams, "answer_chars", react.answer_chars),
      REPOCTX_PARAM(StudyParams, "string_arg_chars", react.string_arg_chars),
      REPOCTX_PARAM(StudyParams, "tool_output_chars", react.tool_output_chars),
      REPOCTX_PARAM(StudyParams, "conversation_tokens", react.conversation_tokens),
      REPOCTX_PARAM(StudyParams, "compaction_tokens", react.compaction_tokens),
      REPOCTX_PARAM(StudyParams, "loop_repeats", react.loop_repeats),
      REPOCTX_PARAM(StudyParams, "max_invalid", react.max_invalid),
      REPOCTX_PARAM(StudyParams, "acr_max_rounds", acr_max_rounds),
      REPOCTX_PARAM(StudyParams, "acr_max_tries", acr_max_tries),
      REPOCTX_PARAM(StudyParams, "acr_answer_tokens", acr_answer_tokens),
      REPOCTX_PARAM(StudyParams, "acr_proxy_tokens", acr_proxy_tokens),
      REPOCTX_PARAM(StudyParams, "acr_max_calls", acr_max_calls),
      REPOCTX_PARAM(StudyParams, "acr_max_locations", acr_max_locations),
      REPOCTX_PARAM(StudyParams, "acr_result_limit", acr_result_limit),
      REPOCTX_PARAM(StudyParams, "acr_class_full_limit", acr_class_full_limit),
      REPOCTX_PARAM(StudyParams, "acr_code_context", acr_code_context),
      REPOCTX_PARAM(StudyParams, "acr_skip_tests", acr_skip_tests),
  };
  return f;
}

}  // namespace

nlohmann::json StudyParams::to_json() const {
  return params_to_json(*this, fields());
}

bool StudyParams::has(const std::string& name) {
  return has_param(fields(), name);
}

void StudyParams::apply(const nlohmann::json& j) {
  apply_params(*this, j, fields(), "study parameter");
}

}  // namespace repoctx
