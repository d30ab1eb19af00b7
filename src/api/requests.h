// What a request of the public API stands for inside the engine: the retriever's options, the strategy a
// request without one gets, and the query. The API (Index::retrieve, so the HTTP and MCP servers and the
// Python module) and the CLI's `retrieve` both build their retrieval from a RetrieveParams through these,
// so the same parameters are checked the same way and mean the same thing on every surface.
#pragma once

#include <string>

#include "repoctx/repoctx.h"
#include "retrieve/retriever.h"

namespace repoctx::api {

// The strategy a request names, or when it names none the best measured one for its kind of query
// (docs/EVAL.md): structural for a target (it ranks what the function's scope reaches), cursor-deps for a
// completion cursor (the definitions the code before it reaches), sparse (BM25) for free text.
std::string strategy_for(const RetrieveParams& p);

// The retriever's options: BM25's constants, the pool and model choices, then every `params` entry through
// apply_retriever_param. Throws Error(usage) naming a bad parameter.
RetrieverOptions retriever_options(const RetrieveParams& p);

// The query: the target resolved (with its hidden-body context), the free text, the completion cursor.
// Throws Error(usage) for a k out of range or a request with none of target, query and cursor, and
// Error(not_found) for a target or a cursor file the index lacks.
RetrievalQuery retrieval_query(const Engine& eng, const RetrieveParams& p);

// Runs the strategy on the query; with exclude_tests, test files' hits are dropped and replaced by the next
// ones (run_filtered).
RetrievalResult run_retrieval(const Engine& eng, Retriever& r, const RetrievalQuery& q, const RetrieveParams& p);

// The text the strategy searched with: the cursor's query window, or the target's signature and docstring,
// or the free text.
std::string searched_text(const Engine& eng, const RetrievalQuery& q, const RetrieverOptions& ro);

}  // namespace repoctx::api
