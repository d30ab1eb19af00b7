// The models a run uses, by role: one bundle handed to make_retriever, the generator and the runner.
//
//   llm       generation, judging, agents (any backend)
//   embedder  dense retrieval, ProjAgent's eq. 6 (an embedding model; may be the llm)
//   snippet_embedder  ProjAgent's snippet validation (4.1; the paper uses another embedding model than
//             eq. 6's); defaults to the embedder
//   hidden    hidden states and the unembedding matrix of ProjAgent's projections (a white-box model in
//             process; defaults to the llm when the llm is one)
//
// Any role may be absent. The bundle does not own the backends (LlmSession does); stages ask for the role
// they need with need_*(), which names what needs it and how to configure it when it is missing.
#pragma once

#include <string>
#include <string_view>

#include "llm/backend.h"

namespace repoctx {

// Which roles a strategy or method needs (so that the CLI loads nothing it will not use).
struct ModelNeeds {
  bool llm = false;
  bool embedder = false;           // required
  bool embedder_optional = false;  // used when configured (e.g. eq. 6's dense half), else BM25 alone
  bool hidden = false;
  bool snippet_embedder = false;  // required (falls back to the embedder)
  ModelNeeds& operator|=(const ModelNeeds& o);
  // "llm+hidden states+embedder (optional)": what a strategy's listing says it needs ("" for nothing).
  std::string describe() const;
  bool any() const { return llm || embedder || embedder_optional || hidden || snippet_embedder; }
};

struct Models {
  LlmBackend* llm = nullptr;
  LlmBackend* embedder = nullptr;
  LlmBackend* hidden = nullptr;
  LlmBackend* snippet_embedder = nullptr;  // null: the embedder serves

  // The role, or Error(usage) saying that `who` needs it and which flags configure it.
  LlmBackend& need_llm(std::string_view who) const;
  LlmBackend& need_embedder(std::string_view who) const;
  // snippet_embedder, else the embedder.
  LlmBackend& need_snippet_embedder(std::string_view who) const;
  // The white-box model: `hidden`, else the llm when it can show hidden states.
  LlmBackend& need_hidden(std::string_view who) const;
};

}  // namespace repoctx
