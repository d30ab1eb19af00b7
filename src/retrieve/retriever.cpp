#include "retrieve/retriever.h"

#include <algorithm>

#include "util/error.h"

namespace repoctx {

const std::vector<RetrieverInfo>& retriever_registry() {
  static const std::vector<RetrieverInfo> reg = {
      {"sparse", "Okapi BM25 over entities (or --corpus snippets); REPOCOD's SPARSE baseline", make_sparse},
      {"same-file", "the target's own file, body hidden; REPOCOD's SAME_FILE baseline", make_same_file},
      {"imports", "symbol pool of the transitively imported files ranked by BM25; ProjAgent 4.3", make_imports},
      {"structural", "scope priors + neighbour votes + BM25 ranked by a logistic model (repoctx)", make_structural},
      {"aligncoder-snippets", "BM25 over split-aggregate base snippets and dependency snippets; AlignCoder III-A",
       make_aligncoder_snippets},
  };
  return reg;
}

std::unique_ptr<Retriever> make_retriever(const std::string& name, const Engine& engine, const RetrieverOptions& opt) {
  for (const auto& r : retriever_registry())
    if (r.name == name) return r.make(engine, opt);
  std::string names;
  for (const auto& r : retriever_registry()) names += (names.empty() ? "" : ", ") + r.name;
  throw Error(ExitCode::usage, "unknown strategy '" + name + "' (available: " + names + ")");
}

std::string query_text(const Engine& e, const RetrievalQuery& q, const TargetContext* ctx) {
  if (!q.text.empty()) return q.text;
  if (ctx) return ctx->visible_text;
  (void)e;
  throw Error(ExitCode::usage, "a query needs --target or --query text");
}

void rank_entity_hits(const Engine& e, std::vector<Hit>& hits, int top_k) {
  const auto& ents = e.view().entities();
  const auto& files = e.view().files();
  auto better = [&](const Hit& a, const Hit& b) {
    if (a.score != b.score) return a.score > b.score;
    const auto& ea = ents[a.entity];
    const auto& eb = ents[b.entity];
    if (ea.file != eb.file) return files[ea.file].path < files[eb.file].path;
    if (ea.start_line != eb.start_line) return ea.start_line < eb.start_line;
    return ea.qualname < eb.qualname;
  };
  if (top_k > 0 && hits.size() > static_cast<size_t>(top_k)) {
    std::partial_sort(hits.begin(), hits.begin() + top_k, hits.end(), better);
    hits.resize(static_cast<size_t>(top_k));
  } else {
    std::sort(hits.begin(), hits.end(), better);
  }
}

}  // namespace repoctx
