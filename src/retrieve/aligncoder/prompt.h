// The completion prompt shared by every completion method (prompts/complete_code.txt): the retrieved
// snippets as comments, the file's path, the unfinished code's tail, within a character budget.
#pragma once

#include <string>
#include <vector>

#include "retrieve/aligncoder/codebase.h"
#include "retrieve/aligncoder/params.h"
#include "retrieve/retriever.h"

namespace repoctx {

struct CompletionPrompt {
  std::string text;
  int shown_from_line = 1;  // the first line of the unfinished code the prompt shows
  int blocks = 0;           // snippets that fit the budget
};

// Hits best first; as many as fit `context_chars` are shown, the best nearest the code (RepoCoder's order).
// `candidates` (an enhanced query's candidate completions, for the perplexity reward of eq. 23-24) follow
// the snippets as comments (prompts/complete_candidates.txt), outside the snippets' budget.
CompletionPrompt completion_prompt(const Engine& e, const CursorContext& ctx, const std::vector<Hit>& hits,
                                   const CompletionParams& p, const std::vector<std::string>& candidates = {});
// The first line of the unfinished code's last `code_chars` characters (whole lines; at least the last).
int first_shown_line(const std::string& unfinished, int code_chars);
// The text a hit stands for (its own text, else the snippet's or the lines of its file).
std::string hit_text(const Engine& e, const Hit& h);

}  // namespace repoctx
