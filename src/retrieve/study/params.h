// Every constant of the context-retrieval study's strategies (Kovrigin et al., "On the importance of reasoning
// for context retrieval in repository-level code editing"), with the defaults of the study's code; settable by
// name (--param NAME=VALUE).
#pragma once

#include <nlohmann/json.hpp>

#include "retrieve/agent/react.h"
#include "retrieve/study/chunks.h"

namespace repoctx {

struct StudyParams {
  ChunkParams chunks;                // BM25 corpus: chunk_chars, chunk_overlap, bm25_k1, bm25_b, bm25_epsilon
  int context_tokens = 500;          // baseline and CL: the context must hold at least this many tokens
  std::string tokenizer = "cl100k";  // how context tokens are counted: cl100k (GPT-3.5's, exact) or estimate
  std::string corpus = "text";       // the files the corpus, the context and add_to_context address (corpus.h)
  int baseline_candidates = 100;     // baseline: BM25 documents fetched before the token budget is filled
  int baseline_margin = 10;          // baseline: stop once within this many tokens of context_tokens
  int search_limit = 10;             // the BM25 search tool's default number of results
  int search_max_limit = 20;         // and the most it returns
  int cl_max_rounds = 10;            // CL: agent runs before giving up on the token target (max_searches)
  int sr_max_reviews = 5;            // SR: self-reflection calls (max_tries)
  int review_tokens = 256;
  int review_chars = 300;
  ReactParams react;
  // AutoCodeRover
  int acr_max_rounds = 15;                // search rounds (the study's iteration limit)
  int acr_max_tries = 5;                  // tries to get a usable answer / a valid proxy extraction per round
  int acr_answer_tokens = 1024;           // free-text answers (API selection, analysis)
  int acr_proxy_tokens = 512;             // the proxy's JSON extraction
  int acr_max_calls = 5;                  // API calls per extraction (schema bound)
  int acr_max_locations = 5;              // bug locations per extraction (schema bound)
  int acr_result_limit = 3;               // RESULT_SHOW_LIMIT: results shown in full
  int acr_class_full_limit = 2;           // get_class_full_snippet: classes shown in full
  int acr_code_context = 3;               // search_code: lines shown around a match
  bool acr_skip_tests = true;             // ACR indexes no test files
  std::string react_acr_tools = "study";  // the ReAct agent's ACR tools: the study's set, or full (every ACR API)
  nlohmann::json to_json() const;
  // Sets the fields named in `j`; throws Error(usage) on an unknown name or a wrong type.
  void apply(const nlohmann::json& j);
  static bool has(const std::string& name);
  // Every parameter: name, type, default, meaning, valid values, source (util/param_table.h).
  static nlohmann::json catalogue();
};

}  // namespace repoctx
