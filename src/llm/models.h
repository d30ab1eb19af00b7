// The models a run uses, by role: one bundle handed to make_retriever, the generator and the runner.
//
//   llm       generation, judging, agents (any backend)
//   embedder  dense retrieval, snippet validation (an embedding model; may be the llm)
//   hidden    hidden states and the unembedding matrix of ProjAgent's projections (a white-box model in
//             process; defaults to the llm when the llm is one)
//
// Any role may be absent. The bundle does not own the backends (LlmSession does); stages ask for the role
// they need with need_*(), which names what needs it and how to configure it when it is missing.
#pragma once

#include <string_view>

#include "llm/backend.h"

namespace repoctx {

// Which roles a strategy or method needs (so that the CLI loads nothing it will not use).
struct ModelNeeds {
  bool llm = false;
  bool embedder = false;           // required
  bool embedder_optional = false;  // used when configured (e.g. eq. 6's dense half), else BM25 alone
  bool hidden = false;
  ModelNeeds& operator|=(const ModelNeeds& o);
  bool any() const { return llm || embedder || embedder_optional || hidden; }
};

struct Models {
  LlmBackend* llm = nullptr;
  LlmBackend* embedder = nullptr;
  LlmBackend* hidden = nullptr;

  // The role, or Error(usage) saying that `who` needs it and which flags configure it.
  LlmBackend& need_llm(std::string_view who) const;
  LlmBackend& need_embedder(std::string_view who) const;
  // The white-box model: `hidden`, else the llm when it can show hidden states.
  LlmBackend& need_hidden(std::string_view who) const;
};

}  // namespace repoctx
