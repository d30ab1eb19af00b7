#include "retrieve/aligncoder/params.h"

#include "util/param_table.h"

namespace repoctx {

namespace {
const ParamTable<CompletionParams>& fields() {
  static const ParamTable<CompletionParams> f = {
      REPOCTX_PARAM(CompletionParams, "query_lines", query_lines,
                    .meaning = "the query window: the last N non-blank lines of the unfinished code", .min = 1,
                    .max = 1000, .source = "RLCoder (AlignCoder IV-A)"),
      REPOCTX_PARAM(CompletionParams, "recent_lines", recent_lines,
                    .meaning = "the encoder's `recent` place: the last N lines before the cursor", .min = 0,
                    .max = 1000, .source = "repoctx"),
      REPOCTX_PARAM(CompletionParams, "dependency_snippets", dependency_snippets,
                    .meaning = "dependency snippets in the codebase: 1 yes, 0 no, -1 the method's default "
                               "(AlignCoder: yes; the baselines: no)",
                    .min = -1, .max = 1, .source = "AlignCoder III-A"),
      REPOCTX_PARAM(CompletionParams, "coarse_k", coarse_k,
                    .meaning = "query enhancement: BM25's top snippets in the sampler's prompt", .min = 0, .max = 1000,
                    .source = "AlignCoder III-B"),
      REPOCTX_PARAM(CompletionParams, "samples", samples,
                    .meaning = "query enhancement: candidate completions sampled (k)", .min = 0, .max = 64,
                    .source = "AlignCoder III-B"),
      REPOCTX_PARAM(CompletionParams, "temperature", temperature, .meaning = "sampling temperature", .min = 0,
                    .max = 10, .source = "AlignCoder IV-A (vLLM)"),
      REPOCTX_PARAM(CompletionParams, "top_p", top_p, .meaning = "sampling top-p", .min = 0, .max = 1,
                    .source = "AlignCoder IV-A (vLLM)"),
      REPOCTX_PARAM(CompletionParams, "sample_tokens", sample_tokens,
                    .meaning = "tokens of each sampled candidate completion", .min = 1, .max = 100000,
                    .source = "repoctx"),
      REPOCTX_PARAM(CompletionParams, "seed", seed, .meaning = "sampling and generation seed", .source = "repoctx"),
      REPOCTX_PARAM(CompletionParams, "candidates", candidates,
                    .meaning = "where an enhanced query's candidates come from: sample (the LLM), oracle (the "
                               "query's drafts: the ground truth for an upper bound), none (the unfinished code alone)",
                    .choices = "sample|oracle|none", .source = "AlignCoder III-B"),
      REPOCTX_PARAM(CompletionParams, "pool", pool,
                    .meaning = "fine retrieval: BM25's best N snippets the trained retriever re-ranks", .min = 1,
                    .max = 100000, .source = "RLCoder"),
      REPOCTX_PARAM(CompletionParams, "model_path", model_path,
                    .meaning = "AlignRetriever model file (empty: the built-in one; untrained: the encoder before "
                               "training)",
                    .source = "repoctx"),
      REPOCTX_PARAM(CompletionParams, "rlcoder_model_path", rlcoder_model_path,
                    .meaning = "RLCoder's retriever model file (empty: the built-in one)", .source = "repoctx"),
      REPOCTX_PARAM(CompletionParams, "hybrid_weight", hybrid_weight,
                    .meaning = "ReACC: w * norm(BM25) + (1 - w) * norm(dense)", .min = 0, .max = 1,
                    .source = "ReACC (AlignCoder IV-B)"),
      REPOCTX_PARAM(CompletionParams, "iterations", iterations, .meaning = "RepoCoder: retrieve-generate rounds",
                    .min = 1, .max = 100, .source = "RepoCoder (AlignCoder IV-B)"),
      REPOCTX_PARAM(CompletionParams, "generation_tokens", generation_tokens,
                    .meaning = "RepoCoder: tokens of each intermediate (greedy) completion", .min = 1, .max = 100000,
                    .source = "repoctx"),
      REPOCTX_PARAM(CompletionParams, "context_chars", context_chars,
                    .meaning = "prompt budget of the retrieved context, in characters (~4 a token)", .min = 0,
                    .max = 10000000, .source = "repoctx"),
      REPOCTX_PARAM(CompletionParams, "code_chars", code_chars,
                    .meaning = "prompt budget of the unfinished code's tail, in characters", .min = 0, .max = 10000000,
                    .source = "repoctx"),
  };
  return f;
}
}  // namespace

const ParamTable<CompletionParams>& CompletionParams::table() {
  return fields();
}

bool CompletionParams::has(const std::string& name) {
  return has_param(fields(), name);
}

void CompletionParams::apply(const nlohmann::json& j) {
  apply_params(*this, j, fields(), "completion parameter");
}

nlohmann::json CompletionParams::catalogue() {
  return params_catalogue(fields(), "completion");
}

nlohmann::json CompletionParams::to_json() const {
  return params_to_json(*this, fields());
}

}  // namespace repoctx
