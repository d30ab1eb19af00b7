// AlignCoder III-B, the query enhancement mechanism: coarse BM25 retrieval with the unfinished code, a
// prompt of the retrieved snippets and the unfinished code, k candidate completions sampled from it
// (default 4 at T = 0.8, top-p = 0.95), and the enhanced query = unfinished code + candidates. The samples
// are one GenerateRequest with n = k through the content-addressed cache: with a fixed seed a re-run makes
// no LLM call.
#pragma once

#include <string>
#include <vector>

#include "llm/backend.h"
#include "retrieve/aligncoder/codebase.h"
#include "retrieve/aligncoder/params.h"

namespace repoctx {

struct Enhancement {
  std::string window;                   // the unfinished code's query window
  std::vector<std::string> candidates;  // sampled candidate completions
  std::vector<CodebaseItem> coarse;     // what the sampler's prompt showed
  bool cached = false;                  // the samples came from the cache
  std::string text() const;             // the enhanced query as one text (BM25's view of it)
};

Enhancement enhance_query(const Engine& e, const CursorContext& ctx, LlmBackend& sampler, const CompletionParams& p);

// The request enhance_query sends (exposed for tests of caching and sampling parameters).
GenerateRequest sampling_request(const std::string& prompt, const CompletionParams& p);

}  // namespace repoctx
