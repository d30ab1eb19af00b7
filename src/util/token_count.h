// Token counts for context budgets (the context-retrieval study's 500-token criterion and its "Avg. CL"
// column), without a model's tokenizer.
//
// The study counts GPT-3.5 tokens (tiktoken's cl100k_base). Its byte-pair ranks are not available here, so
// the count is an estimate: cl100k's pre-tokenizer pieces (a run of letters with at most one leading
// non-letter, digit groups of up to three, punctuation runs with an optional leading space, whitespace
// runs), each counted as one token, and letter runs longer than 8 characters as one more token per 6
// further characters (the merges cover common words and identifiers whole, rare long ones in parts).
// Hand-written: no C++ library in Debian implements cl100k; docs/DEVIATIONS.md records the estimate.
#pragma once

#include <string_view>

namespace repoctx {

int estimate_tokens(std::string_view text);

// The longest prefix of `text` holding at most `max_tokens` estimated tokens (cut between pieces).
std::string_view truncate_tokens(std::string_view text, int max_tokens);

}  // namespace repoctx
