// `same-file`: REPOCOD's SAME_FILE baseline: the target's own file, with its body hidden, is the context.
// As a ranking (for `repoctx eval`), the file's other definitions ordered by scope then distance: members
// of the target's class first, then module-level definitions, each by line distance to the target.
#include <cstdlib>

#include "retrieve/retriever.h"
#include "util/error.h"

namespace repoctx {
namespace {

class SameFileRetriever : public Retriever {
 public:
  explicit SameFileRetriever(const Engine& e) : e_(e) {}
  std::string name() const override { return "same-file"; }

  std::vector<Hit> retrieve(const RetrievalQuery& q) override {
    if (!q.target) throw Error(ExitCode::usage, "the same-file strategy needs --target");
    auto ctxp = context_of(e_, q);
    const TargetContext& ctx = *ctxp;
    const auto& ents = e_.view().entities();
    const FileRec& f = e_.view().files()[q.target->file];
    const EntityRec& t = ents[q.target->entity];
    int cls = e_.graph().enclosing_class(q.target->entity);
    std::vector<Hit> hits;
    Hit file_hit;
    file_hit.type = Hit::Type::file;
    file_hit.file = q.target->file;
    file_hit.start_line = 1;
    file_hit.end_line = f.line_count;
    file_hit.score = 1.0;
    file_hit.text = ctx.masked_content;
    for (int i = f.first_entity; i < f.first_entity + f.n_entities; ++i) {
      if (ctx.is_hidden_entity(i)) continue;
      const EntityRec& e = ents[i];
      bool same_class = cls >= 0 && e.parent_index == cls;
      bool top = e.parent_index < 0;
      if (!same_class && !top) continue;
      int dist = std::abs(e.start_line - t.start_line);
      Hit h;
      h.entity = i;
      h.file = e.file;
      h.start_line = e.decorated_start_line;
      h.end_line = e.end_line;
      // Scope tier dominates, then proximity (scores only order; they are not comparable across strategies).
      h.score = (same_class ? 2.0 : 1.0) - static_cast<double>(dist) / (static_cast<double>(f.line_count) + 2.0);
      hits.push_back(h);
    }
    rank_entity_hits(e_, hits, q.top_k > 0 ? q.top_k - 1 : 0);
    hits.insert(hits.begin(), file_hit);
    return hits;
  }

 private:
  const Engine& e_;
};

}  // namespace

std::unique_ptr<Retriever> make_same_file(const Engine& e, const Models&, const RetrieverOptions&) {
  return std::make_unique<SameFileRetriever>(e);
}

}  // namespace repoctx
