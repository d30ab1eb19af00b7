// Parameters of the completion methods (AlignCoder and the baselines of its section IV-B), with the
// papers' defaults where they give one (docs/DEVIATIONS.md lists the rest).
#pragma once

#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "util/param_table.h"

namespace repoctx {

struct CompletionParams {
  int query_lines = 20;  // the query: the last 20 non-blank lines of the unfinished code (RLCoder)
  int recent_lines = 2;  // the encoder's "recent" place: the last lines before the cursor
  // Dependency snippets in the codebase: -1 = the method's default (AlignCoder: yes; the baselines: no).
  int dependency_snippets = -1;
  // III-B query enhancement: the sampler's prompt holds the coarse top `coarse_k` snippets; it samples
  // `samples` candidate completions (paper: 4, T = 0.8, top-p = 0.95, vLLM's defaults).
  int coarse_k = 10;
  int samples = 4;
  double temperature = 0.8;
  double top_p = 0.95;
  int sample_tokens = 64;
  uint64_t seed = 0;
  // Where an enhanced query's candidates come from: "sample" (the LLM), "oracle" (the completions the
  // caller gives: the ground truth for an upper bound, LLM-free), "none" (the unfinished code alone).
  std::string candidates = "sample";
  // Fine retrieval: the AlignRetriever (or RLCoder's retriever) re-ranks BM25's best `pool` snippets of
  // the query (RLCoder re-ranks BM25 candidates the same way).
  int pool = 50;
  std::string model_path;          // AlignRetriever model file; empty = the built-in one
  std::string rlcoder_model_path;  // RLCoder's retriever (trained on the plain query); empty = the built-in one
  double hybrid_weight = 0.5;      // ReACC: w * norm(BM25) + (1 - w) * norm(dense)
  int iterations = 2;              // RepoCoder: retrieve-generate rounds
  int generation_tokens = 64;      // RepoCoder's intermediate completions (greedy)
  // Prompt budget in characters (~4 a token): retrieved context, then the unfinished code's tail.
  int context_chars = 6000;
  int code_chars = 6000;

  // Sets parameters by name ({"samples": 6, "candidates": "oracle"}); Error(usage) naming the valid ones
  // for an unknown name or a value of the wrong type.
  void apply(const nlohmann::json& j);
  static bool has(const std::string& name);
  nlohmann::json to_json() const;
  // Every parameter: name, type, default, meaning, valid values, source (util/param_table.h).
  static nlohmann::json catalogue();
  // The declarations themselves (the CLI makes its completion options from them).
  static const ParamTable<CompletionParams>& table();
};

}  // namespace repoctx
