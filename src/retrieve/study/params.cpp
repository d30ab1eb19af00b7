#include "retrieve/study/params.h"

#include "util/param_table.h"

namespace repoctx {
namespace {

// The BM25 corpus, the baseline and the stop criteria.
ParamTable<StudyParams> retrieval_rows() {
  return {
      REPOCTX_PARAM(StudyParams, "study_corpus", corpus,
                    .meaning = "the files the BM25 corpus, the context and add_to_context address: text (every text "
                               "file of the repository), study (the study code's file types and excluded folders) "
                               "or indexed (the indexed source files)",
                    .choices = "text|study|indexed", .source = "repoctx"),
      REPOCTX_PARAM(StudyParams, "chunk_chars", chunks.chunk_chars,
                    .meaning = "BM25 corpus: LangChain's chunk_size (characters)", .min = 1, .max = 1000000,
                    .source = "study code"),
      REPOCTX_PARAM(StudyParams, "chunk_overlap", chunks.chunk_overlap,
                    .meaning = "BM25 corpus: LangChain's chunk_overlap (characters)", .min = 0, .max = 1000000,
                    .source = "study code"),
      REPOCTX_PARAM(StudyParams, "bm25_k1", chunks.k1, .meaning = "BM25Okapi's k1 (rank_bm25)", .min = 0, .max = 100,
                    .source = "study code"),
      REPOCTX_PARAM(StudyParams, "bm25_b", chunks.b, .meaning = "BM25Okapi's b (rank_bm25)", .min = 0, .max = 1,
                    .source = "study code"),
      REPOCTX_PARAM(StudyParams, "bm25_epsilon", chunks.epsilon,
                    .meaning = "BM25Okapi's epsilon: the idf floor as a share of the mean idf (rank_bm25)", .min = 0,
                    .max = 100, .source = "study code"),
      REPOCTX_PARAM(StudyParams, "context_tokens", context_tokens,
                    .meaning = "baseline and the CL stop criterion: the context must hold at least this many tokens",
                    .min = 0, .max = 10000000, .source = "study code"),
      REPOCTX_PARAM(StudyParams, "tokenizer", tokenizer,
                    .meaning = "how context tokens are counted (Avg. CL, the CL criterion, the baseline's budget): "
                               "cl100k, GPT-3.5's tokenizer as the study counted, or estimate, an approximation",
                    .choices = "cl100k|estimate", .source = "study code"),
      REPOCTX_PARAM(StudyParams, "baseline_candidates", baseline_candidates,
                    .meaning = "baseline: BM25 documents fetched before the token budget is filled", .min = 1,
                    .max = 100000, .source = "study code"),
      REPOCTX_PARAM(StudyParams, "baseline_margin", baseline_margin,
                    .meaning = "baseline: stop once within this many tokens of context_tokens", .min = 0,
                    .max = 10000000, .source = "study code"),
      REPOCTX_PARAM(StudyParams, "search_limit", search_limit,
                    .meaning = "the BM25 search tool's default number of results", .min = 1, .max = 1000,
                    .source = "study code"),
      REPOCTX_PARAM(StudyParams, "search_max_limit", search_max_limit,
                    .meaning = "the most results the BM25 search tool returns", .min = 1, .max = 1000,
                    .source = "study code"),
      REPOCTX_PARAM(StudyParams, "cl_max_rounds", cl_max_rounds,
                    .meaning = "CL stop criterion: agent runs before giving up on the token target (max_searches)",
                    .min = 1, .max = 1000, .source = "study code"),
      REPOCTX_PARAM(StudyParams, "sr_max_reviews", sr_max_reviews,
                    .meaning = "SR stop criterion: self-reflection calls (max_tries)", .min = 0, .max = 1000,
                    .source = "study code"),
      REPOCTX_PARAM(StudyParams, "review_tokens", review_tokens,
                    .meaning = "SR: generation budget of a self-reflection call", .min = 1, .max = 100000,
                    .source = "repoctx"),
      REPOCTX_PARAM(StudyParams, "review_chars", review_chars,
                    .meaning = "SR: schema bound of the self-reflection's reason", .min = 1, .max = 100000,
                    .source = "repoctx"),
  };
}

// The ReAct agent and AutoCodeRover.
ParamTable<StudyParams> agent_rows() {
  return {
      REPOCTX_PARAM(StudyParams, "max_turns", react.max_turns, .meaning = "ReAct: model turns in all (a hard budget)",
                    .min = 1, .max = 10000, .source = "repoctx"),
      REPOCTX_PARAM(
          StudyParams, "run_turns", react.run_turns,
          .meaning = "ReAct: turns without an answer before the run counts as answered (LangChain's max_iterations)",
          .min = 1, .max = 10000, .source = "study code"),
      REPOCTX_PARAM(StudyParams, "turn_tokens", react.turn_tokens, .meaning = "ReAct: generation budget of one turn",
                    .min = 1, .max = 100000, .source = "repoctx"),
      REPOCTX_PARAM(StudyParams, "thought_chars", react.thought_chars,
                    .meaning = "ReAct: schema bound of a turn's thought", .min = 1, .max = 100000, .source = "repoctx"),
      REPOCTX_PARAM(StudyParams, "answer_chars", react.answer_chars,
                    .meaning = "ReAct: schema bound of a turn's answer", .min = 1, .max = 100000, .source = "repoctx"),
      REPOCTX_PARAM(StudyParams, "string_arg_chars", react.string_arg_chars,
                    .meaning = "ReAct: schema bound of a tool's string argument", .min = 1, .max = 100000,
                    .source = "repoctx"),
      REPOCTX_PARAM(StudyParams, "tool_output_chars", react.tool_output_chars,
                    .meaning = "ReAct: a tool's output is cut to this many characters", .min = 1, .max = 10000000,
                    .source = "repoctx"),
      REPOCTX_PARAM(StudyParams, "conversation_tokens", react.conversation_tokens,
                    .meaning = "ReAct: compaction threshold (estimated tokens of the conversation)", .min = 1,
                    .max = 10000000, .source = "repoctx"),
      REPOCTX_PARAM(StudyParams, "compaction_tokens", react.compaction_tokens,
                    .meaning = "ReAct: generation budget of the compaction summary", .min = 1, .max = 100000,
                    .source = "repoctx"),
      REPOCTX_PARAM(StudyParams, "loop_repeats", react.loop_repeats,
                    .meaning = "ReAct: the same call this many times stops the run", .min = 1, .max = 1000,
                    .source = "repoctx"),
      REPOCTX_PARAM(StudyParams, "max_invalid", react.max_invalid,
                    .meaning = "ReAct: invalid turns in a row that stop the run", .min = 1, .max = 1000,
                    .source = "repoctx"),
      REPOCTX_PARAM(StudyParams, "tool_calls", react.tool_calls,
                    .meaning = "ReAct: how a turn calls tools: native (the API's tool calls, as the study's agent), "
                               "schema (a JSON-schema-constrained answer), auto (native when the backend is an "
                               "OpenAI-compatible server, falling back to schema if it refuses tools)",
                    .choices = "auto|native|schema", .source = "study code"),
      REPOCTX_PARAM(StudyParams, "tool_choice", react.tool_choice,
                    .meaning = "ReAct, native tool calls: the API's tool_choice (required forces a tool call each "
                               "turn: the run then ends by its budget or criterion)",
                    .choices = "auto|required", .source = "study code"),
      REPOCTX_PARAM(StudyParams, "acr_max_rounds", acr_max_rounds,
                    .meaning = "AutoCodeRover: search rounds (the study's iteration limit)", .min = 1, .max = 1000,
                    .source = "study code"),
      REPOCTX_PARAM(StudyParams, "acr_max_tries", acr_max_tries,
                    .meaning = "AutoCodeRover: tries for a usable answer or proxy extraction per round", .min = 1,
                    .max = 1000, .source = "study code"),
      REPOCTX_PARAM(StudyParams, "acr_answer_tokens", acr_answer_tokens,
                    .meaning = "AutoCodeRover: generation budget of free-text answers", .min = 1, .max = 100000,
                    .source = "repoctx"),
      REPOCTX_PARAM(StudyParams, "acr_proxy_tokens", acr_proxy_tokens,
                    .meaning = "AutoCodeRover: generation budget of the proxy's JSON extraction", .min = 1,
                    .max = 100000, .source = "repoctx"),
      REPOCTX_PARAM(StudyParams, "acr_max_calls", acr_max_calls,
                    .meaning = "AutoCodeRover: API calls per extraction (schema bound)", .min = 1, .max = 1000,
                    .source = "repoctx"),
      REPOCTX_PARAM(StudyParams, "acr_max_locations", acr_max_locations,
                    .meaning = "AutoCodeRover: bug locations per extraction (schema bound)", .min = 1, .max = 1000,
                    .source = "repoctx"),
      REPOCTX_PARAM(StudyParams, "acr_result_limit", acr_result_limit,
                    .meaning = "AutoCodeRover: search results shown in full (RESULT_SHOW_LIMIT)", .min = 1, .max = 1000,
                    .source = "AutoCodeRover"),
      REPOCTX_PARAM(StudyParams, "acr_class_full_limit", acr_class_full_limit,
                    .meaning = "AutoCodeRover: classes shown in full by get_class_full_snippet", .min = 1, .max = 1000,
                    .source = "AutoCodeRover"),
      REPOCTX_PARAM(StudyParams, "acr_code_context", acr_code_context,
                    .meaning = "AutoCodeRover: lines shown around a search_code match", .min = 0, .max = 1000,
                    .source = "AutoCodeRover"),
      REPOCTX_PARAM(StudyParams, "react_acr_tools", react_acr_tools,
                    .meaning = "react-acr-*: the agent's tools: study (the study's six ACR searches and "
                               "show_definition) or full (every AutoCodeRover search API)",
                    .choices = "study|full", .source = "study code"),
      REPOCTX_PARAM(StudyParams, "acr_skip_tests", acr_skip_tests, .meaning = "AutoCodeRover: index no test files",
                    .source = "AutoCodeRover"),
  };
}

const ParamTable<StudyParams>& study_fields() {
  static const ParamTable<StudyParams> f = [] {
    ParamTable<StudyParams> t = retrieval_rows(), agent = agent_rows();
    t.insert(t.end(), agent.begin(), agent.end());
    return t;
  }();
  return f;
}

}  // namespace

nlohmann::json StudyParams::to_json() const {
  return params_to_json(*this, study_fields());
}

nlohmann::json StudyParams::catalogue() {
  return params_catalogue(study_fields(), "study");
}

bool StudyParams::has(const std::string& name) {
  return has_param(study_fields(), name);
}

void StudyParams::apply(const nlohmann::json& j) {
  apply_params(*this, j, study_fields(), "study parameter");
}

}  // namespace repoctx
