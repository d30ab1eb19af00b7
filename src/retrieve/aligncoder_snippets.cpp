// `aligncoder-snippets`: AlignCoder's retrieval codebase (III-A): split-aggregate base snippets of the
// other files plus dependency snippets of the target file's intra-repository imports, ranked by BM25
// (the coarse retrieval of III-B). Dependency snippets are built at query time: they summarise other
// files, so storing them would go stale whenever those files change.
#include "retrieve/aligncoder_snippets.h"

#include <functional>

#include <unordered_set>

#include "retrieve/aligncoder/codebase.h"
#include "retrieve/retriever.h"
#include "util/error.h"

namespace repoctx {

std::vector<DependencySnippet> dependency_snippets(const Engine& e, int file, const HiddenBody* hidden,
                                                   int before_line) {
  const auto& g = e.graph();
  const auto& v = e.view();
  const auto& ents = v.entities();
  const FileRec& fr = v.files()[file];
  std::vector<DependencySnippet> out;
  DependencySnippet funcs;
  funcs.label = "functions";
  std::unordered_set<int> seen;
  auto class_snippet = [&](int cls) {
    DependencySnippet s;
    s.label = "class " + v.files()[ents[cls].file].module + "." + ents[cls].qualname;
    // sigma_c, Sigma_m, Sigma_nc, Sigma_nm (eq. 19): the class and, recursively, its nested classes.
    std::function<void(int, int)> add = [&](int c, int depth) {
      std::string ind(static_cast<size_t>(depth) * 4, ' ');
      s.text += ind + ents[c].signature + "\n";
      s.entities.push_back(c);
      const FileRec& cf = v.files()[ents[c].file];
      for (int i = c + 1; i < cf.first_entity + cf.n_entities; ++i) {
        if (ents[i].parent_index != c) continue;
        if (ents[i].kind == EntityKind::method) {
          s.text += ind + "    " + ents[i].signature + "\n";
          s.entities.push_back(i);
        } else if (is_type(ents[i].kind)) {
          add(i, depth + 1);
        }
      }
    };
    add(cls, 0);
    out.push_back(std::move(s));
  };
  for (const Import& im : v.imports(file)) {
    if (im.name.empty() || im.star) continue;  // AlignCoder: class, method and function imports
    if (before_line > 0 && im.line >= before_line) continue;
    if (hidden && hidden->file == file && im.scope >= 0 && v.is_within(fr.first_entity + im.scope, hidden->entity))
      continue;
    // Standard library and third-party imports resolve to nothing in the repository (eq. 17).
    Resolution r = g.import_target(file, im);
    if (r.kind != Resolution::Kind::entity) continue;
    if (before_line > 0 && ents[r.entity].file == file) continue;
    if (!seen.insert(r.entity).second) continue;
    const EntityRec& en = ents[r.entity];
    if (is_type(en.kind))
      class_snippet(r.entity);
    else if (is_callable(en.kind)) {
      funcs.text += en.signature + "\n";
      funcs.entities.push_back(r.entity);
    }
  }
  if (!funcs.entities.empty()) out.push_back(std::move(funcs));
  return out;
}

namespace {

class AlignCoderSnippets : public Retriever {
 public:
  AlignCoderSnippets(const Engine& e, const RetrieverOptions& o) : e_(e), o_(o) {}
  std::string name() const override { return "aligncoder-snippets"; }

  std::vector<Hit> retrieve(const RetrievalQuery& q) override {
    if (q.cursor) {  // III-B's coarse retrieval for a completion: the unfinished code's window as the query
      const CursorContext& cc = *q.cursor;
      std::string text = q.text.empty() ? query_window(cc.unfinished, o_.completion.query_lines) : q.text;
      std::vector<Hit> hits;
      for (const auto& it : coarse_retrieve(e_, cc, text, o_.completion.dependency_snippets != 0, q.top_k))
        hits.push_back(item_hit(e_, cc, it));
      return hits;
    }
    if (!q.target)
      throw Error(ExitCode::usage,
                  "aligncoder-snippets needs --target or a cursor (--file F --line N): the file's imports give the "
                  "dependency snippets");
    auto ctxp = context_of(e_, q);
    const TargetContext& ctx = *ctxp;
    auto deps = dependency_snippets(e_, q.target->file, &ctx.hidden);
    const auto& sn = e_.view().snippets();
    Bm25Overrides ov = ctx.snippet_overrides();
    std::vector<TermVec> dep_terms;
    dep_terms.reserve(deps.size());
    for (const auto& d : deps) dep_terms.push_back(term_vector(d.text));
    int base_id = static_cast<int>(sn.size());
    for (size_t i = 0; i < deps.size(); ++i) ov.replaced.emplace_back(base_id + static_cast<int>(i), &dep_terms[i]);
    // Cross-file base snippets only: the target's own file is the query side in AlignCoder.
    std::vector<char> allowed(sn.size() + deps.size(), 1);
    const FileRec& tf = e_.view().files()[q.target->file];
    for (int s = tf.first_snippet; s < tf.first_snippet + tf.n_snippets; ++s) allowed[s] = 0;
    auto terms = query_terms(query_text(e_, q, &ctx));
    auto scored = e_.snippet_bm25().score_all(terms, o_.bm25, &ov, &allowed);
    std::vector<Hit> hits;
    const auto& files = e_.view().files();
    for (const auto& sd : scored) {
      Hit h;
      h.type = Hit::Type::snippet;
      h.score = sd.score;
      if (sd.doc >= base_id) {
        const auto& d = deps[static_cast<size_t>(sd.doc - base_id)];
        h.label = "dependency";
        h.text = d.text;
        h.file = e_.view().entities()[d.entities.front()].file;
        h.entity = d.entities.front();
        h.start_line = e_.view().entities()[d.entities.front()].start_line;
        h.end_line = e_.view().entities()[d.entities.front()].end_line;
      } else {
        h.snippet = sd.doc;
        h.label = "base";
        h.file = sn[sd.doc].file;
        h.start_line = sn[sd.doc].start_line;
        h.end_line = sn[sd.doc].end_line;
      }
      hits.push_back(std::move(h));
    }
    auto better = [&](const Hit& a, const Hit& b) {
      if (a.score != b.score) return a.score > b.score;
      if (a.file != b.file) return files[a.file].path < files[b.file].path;
      if (a.start_line != b.start_line) return a.start_line < b.start_line;
      return a.label < b.label;
    };
    std::sort(hits.begin(), hits.end(), better);
    if (q.top_k > 0 && hits.size() > static_cast<size_t>(q.top_k)) hits.resize(static_cast<size_t>(q.top_k));
    return hits;
  }

 private:
  const Engine& e_;
  RetrieverOptions o_;
};

}  // namespace

std::unique_ptr<Retriever> make_aligncoder_snippets(const Engine& e, const Models&, const RetrieverOptions& o) {
  return std::make_unique<AlignCoderSnippets>(e, o);
}

}  // namespace repoctx
