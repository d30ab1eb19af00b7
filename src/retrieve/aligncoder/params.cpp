#include "retrieve/aligncoder/params.h"

#include "util/param_table.h"

namespace repoctx {

namespace {
const ParamTable<CompletionParams>& fields() {
  static const ParamTable<CompletionParams> f = {
      REPOCTX_PARAM(CompletionParams, "query_lines", query_lines),
      REPOCTX_PARAM(CompletionParams, "recent_lines", recent_lines),
      REPOCTX_PARAM(CompletionParams, "dependency_snippets", dependency_snippets),
      REPOCTX_PARAM(CompletionParams, "coarse_k", coarse_k),
      REPOCTX_PARAM(CompletionParams, "samples", samples),
      REPOCTX_PARAM(CompletionParams, "temperature", temperature),
      REPOCTX_PARAM(CompletionParams, "top_p", top_p),
      REPOCTX_PARAM(CompletionParams, "sample_tokens", sample_tokens),
      REPOCTX_PARAM(CompletionParams, "seed", seed),
      REPOCTX_PARAM(CompletionParams, "candidates", candidates),
      REPOCTX_PARAM(CompletionParams, "pool", pool),
      REPOCTX_PARAM(CompletionParams, "model_path", model_path),
      REPOCTX_PARAM(CompletionParams, "rlcoder_model_path", rlcoder_model_path),
      REPOCTX_PARAM(CompletionParams, "hybrid_weight", hybrid_weight),
      REPOCTX_PARAM(CompletionParams, "iterations", iterations),
      REPOCTX_PARAM(CompletionParams, "generation_tokens", generation_tokens),
      REPOCTX_PARAM(CompletionParams, "context_chars", context_chars),
      REPOCTX_PARAM(CompletionParams, "code_chars", code_chars),
  };
  return f;
}
}  // namespace

bool CompletionParams::has(const std::string& name) {
  return has_param(fields(), name);
}

void CompletionParams::apply(const nlohmann::json& j) {
  apply_params(*this, j, fields(), "completion parameter");
}

nlohmann::json CompletionParams::to_json() const {
  return params_to_json(*this, fields());
}

}  // namespace repoctx
