// Token counts for context budgets: the context-retrieval study's 500-token criterion, its baseline's budget and
// its "Avg. CL" column count GPT-3.5 tokens (tiktoken's cl100k_base, util/tokenizer_cl100k.h), exactly.
//
// `estimate_tokens` is the fallback a user may choose (`--param tokenizer=estimate`) and the agents' cheap
// gauge of their own transcripts against a model's context window (whose tokenizer is the model's, not
// cl100k). It is an estimate, and results that use it say so ("tokenizer": "estimate" in a trace): cl100k's
// pre-tokenizer pieces (a run of letters with at most one leading non-letter, digit groups of up to three,
// punctuation runs with an optional leading space, whitespace runs), each counted as one token, and letter
// runs longer than 8 characters as one more token per 6 further characters (the merges cover common words and
// identifiers whole, rare long ones in parts).
#pragma once

#include <string>
#include <string_view>

namespace repoctx {

// How a context's tokens are counted.
enum class TokenCounter { cl100k, estimate };

// "cl100k" or "estimate"; throws Error(usage) naming the choices on anything else.
TokenCounter token_counter_named(const std::string& name);
const char* token_counter_name(TokenCounter c);

int count_tokens(std::string_view text, TokenCounter how);
// The longest prefix of `text` holding at most `max_tokens` tokens (cut between pre-tokenizer pieces).
std::string_view truncate_tokens(std::string_view text, int max_tokens, TokenCounter how);

int estimate_tokens(std::string_view text);

// The longest prefix of `text` holding at most `max_tokens` estimated tokens (cut between pieces).
std::string_view truncate_tokens(std::string_view text, int max_tokens);

}  // namespace repoctx
