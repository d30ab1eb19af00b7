// The retrieval engine over one index: the repository view, the symbol graph, the BM25 corpora, and the
// hidden-body context of a target. Every Retriever reads the repository through an Engine.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "index/embedding_store.h"
#include "index/repo_view.h"
#include "index/symbol_graph.h"
#include "llm/backend.h"
#include "retrieve/bm25.h"

namespace repoctx {

struct TargetRef {
  int file = -1;
  int entity = -1;
};

// Everything a retriever may know about a target whose body is hidden: the file as it reads without the
// body, and the exact BM25 overrides that make the index answer as if it had been built from that file.
struct TargetContext {
  TargetRef target;
  HiddenBody hidden;
  std::string masked_content;                              // the target's file with the body hidden
  std::vector<int> removed_entities;                       // defined inside the hidden body
  TermVec target_terms;                                    // the target's own document, body hidden
  std::vector<std::pair<int, TermVec>> ancestor_terms;     // enclosing functions' documents, body hidden
  std::vector<std::pair<int, std::string>> ancestor_docs;  // the same documents as text (dense side)
  std::vector<std::pair<int, TermVec>> snippet_terms;      // snippets overlapping the body, hidden
  std::string visible_text;                                // decorators + signature + docstring
  Bm25Overrides entity_overrides() const;
  Bm25Overrides snippet_overrides() const;
  bool is_hidden_entity(int e) const;  // the target or anything defined inside it
};

class Engine {
 public:
  explicit Engine(std::unique_ptr<RepoView> view);
  static std::unique_ptr<Engine> open(const std::string& db_path);

  const RepoView& view() const { return *view_; }
  const SymbolGraph& graph() const { return graph_; }
  const Bm25Index& entity_bm25() const;
  const Bm25Index& snippet_bm25() const;
  // Signature + docstring documents of every callable: "functions that look like the target" without
  // reading any body (structural neighbour votes; the target's own entry is unchanged by hiding).
  const Bm25Index& visible_bm25() const;
  const TermVec& visible_terms(int entity) const;

  // "path/to/file.py::Qual.name" -> target; throws Error(not_found) naming close matches.
  TargetRef resolve_target(const std::string& spec) const;
  TargetContext make_context(const TargetRef& t) const;

  // Dense side (ProjAgent eq. 6, REPOCOD DENSE): an embedding model, set by the caller.
  void set_embedder(LlmBackend* embedder) { embedder_ = embedder; }
  bool has_embedder() const { return embedder_ != nullptr; }
  LlmBackend* embedder() const { return embedder_; }
  // The generating LLM (procedural retrieval: decomposition, judging, hidden states).
  void set_llm(LlmBackend* llm) { llm_ = llm; }
  LlmBackend* llm() const { return llm_; }
  // The white-box model whose hidden states project steps (default: llm()).
  void set_hidden_states(LlmBackend* m) { hidden_ = m; }
  LlmBackend* hidden_states() const { return hidden_ ? hidden_ : llm_; }
  // L2-normalised vectors of every entity document; missing ones are embedded (task "document") and
  // stored in the index under their content hash. Empty vector for entities without a document.
  const std::vector<std::vector<float>>& entity_vectors() const;
  std::vector<float> embed_query(const std::string& text) const;
  std::vector<float> embed_document(const std::string& text) const;
  std::string entity_document_text(int entity) const;  // what BM25 and the embedder see (cut at 4000 chars)

  std::string entity_text(int entity) const;  // its source lines
  std::string snippet_text(int snippet) const;
  std::string target_name(int entity) const;  // "path::qualname"

 private:
  std::unique_ptr<RepoView> view_;
  SymbolGraph graph_;
  mutable std::once_flag entity_once_, snippet_once_, visible_once_;
  mutable Bm25Index entity_bm25_, snippet_bm25_, visible_bm25_;
  mutable std::vector<TermVec> visible_terms_;
  LlmBackend* embedder_ = nullptr;
  LlmBackend* llm_ = nullptr;
  LlmBackend* hidden_ = nullptr;
  mutable std::once_flag vectors_once_;
  mutable std::vector<std::vector<float>> entity_vectors_;
};

}  // namespace repoctx
