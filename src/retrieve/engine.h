// The retrieval engine over one index: the repository view, the symbol graph, the BM25 corpora, and the
// hidden-body context of a target. Every Retriever reads the repository through an Engine.
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <typeindex>
#include <unordered_map>
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

  // Dense side (ProjAgent eq. 6, REPOCOD DENSE). L2-normalised vectors of every entity document under
  // `embedder`; missing ones are embedded (task "document") and stored in the index under their content
  // hash, so each document is embedded once per model. Empty vector for entities without a document.
  const std::vector<std::vector<float>>& entity_vectors(LlmBackend& embedder) const;
  std::vector<float> embed_query(LlmBackend& embedder, const std::string& text) const;
  std::vector<float> embed_document(LlmBackend& embedder, const std::string& text) const;
  std::string entity_document_text(int entity) const;  // what BM25 and the embedder see (cut at 4000 chars)

  // Facts later stages derive from the whole repository (the static checks' name tables, ...), computed
  // once and owned by the engine, which knows nothing of T: one slot per type, made by T's default
  // constructor at the first call. T guards its own lazily filled members (std::once_flag).
  template <class T>
  T& derived() const {
    std::lock_guard<std::mutex> lock(derived_mu_);
    auto& slot = derived_[std::type_index(typeid(T))];
    if (!slot) slot = std::make_shared<T>();
    return *static_cast<T*>(slot.get());
  }

  std::string entity_text(int entity) const;  // its source lines
  std::string snippet_text(int snippet) const;
  std::string target_name(int entity) const;  // "path::qualname"

 private:
  std::unique_ptr<RepoView> view_;
  SymbolGraph graph_;
  mutable std::once_flag entity_once_, snippet_once_, visible_once_;
  mutable Bm25Index entity_bm25_, snippet_bm25_, visible_bm25_;
  mutable std::vector<TermVec> visible_terms_;
  mutable std::mutex derived_mu_;
  mutable std::unordered_map<std::type_index, std::shared_ptr<void>> derived_;
  mutable std::mutex vectors_mu_;
  mutable std::map<std::string, std::vector<std::vector<float>>> entity_vectors_;  // by embedder identity
};

}  // namespace repoctx
