#include "api/requests.h"

#include "index/index.h"
#include "retrieve/aligncoder/codebase.h"
#include "util/error.h"
#include "util/text.h"

namespace repoctx::api {

std::string strategy_for(const RetrieveParams& p) {
  if (!p.strategy.empty()) return p.strategy;
  return !p.target.empty() ? "structural" : !p.file.empty() ? "cursor-deps" : "sparse";
}

RetrieverOptions retriever_options(const RetrieveParams& p) {
  RetrieverOptions ro;
  ro.bm25.k1 = p.k1;
  ro.bm25.b = p.b;
  ro.corpus = p.corpus;
  ro.pool_methods = p.pool_methods;
  ro.bm25_only = p.bm25_only;
  // "builtin" names the model built into the binary on every surface (a server's requests name models so).
  auto file = [](const std::string& s) { return s == "builtin" ? std::string() : s; };
  ro.model_path = file(p.structural_model);
  ro.locate_model = file(p.locate_model);
  ro.completion.model_path = file(p.model_file);
  for (const auto& [name, value] : p.params) apply_retriever_param(ro, name, value);
  return ro;
}

RetrievalQuery retrieval_query(const Engine& eng, const RetrieveParams& p) {
  if (p.k <= 0 || p.k > 10000) throw Error(ExitCode::usage, "k must be between 1 and 10000");
  if (p.target.empty() && p.query.empty() && p.file.empty())
    throw Error(ExitCode::usage, "give a target (path::Qual.name), a query or a completion cursor (file and line)");
  RetrievalQuery q;
  q.top_k = p.k;
  q.text = p.query;
  if (!p.target.empty()) {
    q.target = eng.resolve_target(p.target);
    q.context = std::make_shared<const TargetContext>(eng.make_context(*q.target));
  }
  if (!p.file.empty()) {
    auto f = eng.view().file_by_path(p.file);
    if (!f) throw Error(ExitCode::not_found, "file '" + p.file + "' is not in the index");
    if (p.line < 1) throw Error(ExitCode::usage, "a cursor in file '" + p.file + "' needs its line (1-based)");
    q.cursor = make_cursor_context(eng, Cursor{*f, p.line, p.column});
  }
  return q;
}

RetrievalResult run_retrieval(const Engine& eng, Retriever& r, const RetrievalQuery& q, const RetrieveParams& p) {
  if (!p.exclude_tests) return r.run(q);
  return run_filtered(
      r, q, [&](const repoctx::Hit& h) { return h.file >= 0 && is_test_path(eng.view().files()[h.file].path); });
}

std::string searched_text(const Engine& eng, const RetrievalQuery& q, const RetrieverOptions& ro) {
  return sanitize_utf8(q.cursor && q.text.empty() ? query_window(q.cursor->unfinished, ro.completion.query_lines)
                                                  : query_text(eng, q, q.context.get()));
}

}  // namespace repoctx::api
