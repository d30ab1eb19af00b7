// `aligncoder-snippets`: AlignCoder's retrieval codebase (III-A): split-aggregate base snippets of the
// other files plus dependency snippets of the target file's intra-repository imports, ranked by BM25
// (the coarse retrieval of III-B). Dependency snippets are built at query time: they summarise other
// files, so storing them would go stale whenever those files change.
#include "retrieve/aligncoder_snippets.h"

#include <algorithm>
#include <functional>

#include <unordered_set>

#include "retrieve/aligncoder/codebase.h"
#include "retrieve/retriever.h"
#include "util/error.h"
#include "util/text.h"

namespace repoctx {

namespace {

// The methods of a Go type, declared at package level in any file of its package ("T.M").
std::vector<int> go_methods(const RepoView& v, int type) {
  const auto& ents = v.entities();
  const std::string prefix = ents[type].name + ".";
  std::vector<int> out;
  for (int f : v.files_in_module(v.files()[ents[type].file].module)) {
    const FileRec& fr = v.files()[f];
    for (int i = fr.first_entity; i < fr.first_entity + fr.n_entities; ++i)
      if (ents[i].parent_index < 0 && ents[i].kind == EntityKind::method && starts_with(ents[i].qualname, prefix))
        out.push_back(i);
  }
  return out;
}

// The repository definitions a file imports, in import order. Python and Java import classes, methods and
// functions by name (AlignCoder: class, method and function imports; star imports name nothing); a Go import
// binds a whole package, so its definitions are the package-level ones the file names through it
// (`pkg.T`, `pkg.F(...)`), in the order the file first names them; a C `#include` names nothing either, so its
// definitions are those of the directly included headers that the file names (types, macros, prototypes); a
// C# `using` names a namespace, so its definitions are the other files' types the file names.
// Standard library and third-party imports resolve to nothing in the repository (eq. 17).
std::vector<int> imported_definitions(const Engine& e, int file, const HiddenBody* hidden, int before_line) {
  const auto& g = e.graph();
  const auto& v = e.view();
  const FileRec& fr = v.files()[file];
  auto hidden_scope = [&](int scope) {
    return hidden && hidden->file == file && scope >= 0 && v.is_within(fr.first_entity + scope, hidden->entity);
  };
  std::vector<int> out;
  if (fr.language == Language::go) {
    std::unordered_set<std::string> packages;
    for (const Import& im : v.imports(file))
      if (!im.star && im.bound_name() != "_" && (before_line <= 0 || im.line < before_line))
        packages.insert(im.bound_name());
    for (const Reference& r : v.references(file)) {
      if ((before_line > 0 && r.line >= before_line) || hidden_scope(r.scope)) continue;
      size_t dot = r.chain.find('.');
      if (dot == std::string::npos || !packages.count(r.chain.substr(0, dot))) continue;
      size_t next = r.chain.find('.', dot + 1);
      Resolution res = g.resolve(file, -1, r.chain.substr(0, next));
      if (res.kind == Resolution::Kind::entity) out.push_back(res.entity);
    }
    return out;
  }
  if (fr.language == Language::csharp) {
    std::unordered_set<int> seen;
    for (const Reference& r : v.references(file)) {
      if ((before_line > 0 && r.line >= before_line) || hidden_scope(r.scope)) continue;
      Resolution res = g.resolve(file, -1, r.chain.substr(0, r.chain.find('.')));
      if (res.kind != Resolution::Kind::entity || !seen.insert(res.entity).second) continue;
      const EntityRec& en = v.entities()[res.entity];
      if (en.file != file && is_type(en.kind)) out.push_back(res.entity);
    }
    for (const Import& im : v.imports(file)) {  // `using X = A.B.C;`
      if (im.name.empty() || im.star || (before_line > 0 && im.line >= before_line)) continue;
      Resolution r = g.import_target(file, im);
      if (r.kind == Resolution::Kind::entity && seen.insert(r.entity).second) out.push_back(r.entity);
    }
    return out;
  }
  if (is_c_family(fr.language)) {  // an #include names nothing: the headers' definitions the file uses
    std::vector<int> headers = g.imported_files(file);
    std::unordered_set<int> seen;
    for (const Reference& r : v.references(file)) {
      if ((before_line > 0 && r.line >= before_line) || hidden_scope(r.scope)) continue;
      Resolution res = g.resolve(file, -1, r.chain.substr(0, r.chain.find('.')));
      if (res.kind != Resolution::Kind::entity || !seen.insert(res.entity).second) continue;
      if (std::binary_search(headers.begin(), headers.end(), v.entities()[res.entity].file)) out.push_back(res.entity);
    }
    return out;
  }
  for (const Import& im : v.imports(file)) {
    if (im.name.empty() || im.star) continue;
    if (before_line > 0 && im.line >= before_line) continue;
    if (hidden_scope(im.scope)) continue;
    Resolution r = g.import_target(file, im);
    if (r.kind == Resolution::Kind::entity) out.push_back(r.entity);
  }
  return out;
}

}  // namespace

std::vector<DependencySnippet> dependency_snippets(const Engine& e, int file, const HiddenBody* hidden,
                                                   int before_line) {
  const auto& v = e.view();
  const auto& ents = v.entities();
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
        // A C struct's members are what a user of the type reads (it has no methods).
        if (ents[i].kind == EntityKind::method || (is_c_family(cf.language) && ents[i].kind == EntityKind::field)) {
          s.text += ind + "    " + ents[i].signature + "\n";
          s.entities.push_back(i);
        } else if (is_type(ents[i].kind)) {
          add(i, depth + 1);
        }
      }
      if (cf.language == Language::go)  // a Go type's methods are declared beside it, in any file of its package
        for (int m : go_methods(v, c)) {
          s.text += ind + "    " + ents[m].signature + "\n";
          s.entities.push_back(m);
        }
      if (cf.language == Language::rust)  // a Rust type's methods are its impl blocks', in any module of its crate
        for (int m : e.graph().rust_impl_methods(c)) {
          s.text += ind + "    " + ents[m].signature + "\n";
          s.entities.push_back(m);
        }
    };
    add(cls, 0);
    out.push_back(std::move(s));
  };
  for (int target : imported_definitions(e, file, hidden, before_line)) {
    if (before_line > 0 && ents[target].file == file) continue;
    if (!seen.insert(target).second) continue;
    const EntityRec& en = ents[target];
    const int entity = target;
    if (is_type(en.kind))
      class_snippet(entity);
    else if (is_callable(en.kind)) {
      funcs.text += en.signature + "\n";
      funcs.entities.push_back(entity);
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
