// `sparse`: Okapi BM25 over entity documents (default) or split-aggregate snippets; REPOCOD's SPARSE
// baseline. For a target, the query is its visible signature and docstring and the index statistics are
// those of the repository without the target's body (TargetContext overrides).
#include "retrieve/sparse.h"

#include "index/schema.h"
#include "index/store.h"
#include "util/error.h"
#include "util/log.h"
#include "util/text.h"

namespace repoctx {
namespace {

class SparseRetriever : public Retriever {
 public:
  SparseRetriever(const Engine& e, const RetrieverOptions& o) : e_(e), o_(o) {}
  std::string name() const override { return "sparse"; }

  std::vector<Hit> retrieve(const RetrievalQuery& q) override {
    auto ctx = context_of(e_, q);
    auto terms = query_terms(query_text(e_, q, ctx.get()));
    std::vector<Hit> hits;
    if (o_.corpus == "snippets") {
      Bm25Overrides ov;
      if (ctx) ov = ctx->snippet_overrides();
      auto scored = e_.snippet_bm25().score_all(terms, o_.bm25, ctx ? &ov : nullptr);
      const auto& sn = e_.view().snippets();
      const auto& files = e_.view().files();
      for (const auto& sd : scored) {
        Hit h;
        h.type = Hit::Type::snippet;
        h.snippet = sd.doc;
        h.file = sn[sd.doc].file;
        h.start_line = sn[sd.doc].start_line;
        h.end_line = sn[sd.doc].end_line;
        h.score = sd.score;
        hits.push_back(h);
      }
      auto better = [&](const Hit& a, const Hit& b) {
        if (a.score != b.score) return a.score > b.score;
        if (a.file != b.file) return files[a.file].path < files[b.file].path;
        return a.start_line < b.start_line;
      };
      size_t k = std::min<size_t>(hits.size(), static_cast<size_t>(std::max(q.top_k, 0)));
      std::partial_sort(hits.begin(), hits.begin() + static_cast<long>(k), hits.end(), better);
      hits.resize(k);
      return hits;
    }
    Bm25Overrides ov;
    if (ctx) ov = ctx->entity_overrides();
    auto scored = e_.entity_bm25().score_all(terms, o_.bm25, ctx ? &ov : nullptr);
    auto top = top_entities(e_, std::move(scored), q.top_k, [&](int d) { return ctx && ctx->is_hidden_entity(d); });
    for (const auto& sd : top) hits.push_back(entity_hit(e_, sd.doc, sd.score));
    return hits;
  }

 private:
  const Engine& e_;
  RetrieverOptions o_;
};

// The text of lines [first, last] of the indexed copy of the file with this id (what RepoView::content reads).
std::string indexed_lines(sql::Db& db, int64_t file_id, int first, int last) {
  sql::Stmt s(db, "SELECT content FROM files WHERE id=?");
  s.bind(1, file_id);
  if (!s.step()) return {};
  std::string_view content = s.blob(0);
  return sanitize_utf8(line_range(content, line_starts(content), first, last));
}

// The hits of a plain-text query over a mapped image (throws Error(bad_input) on a damaged one).
std::vector<ImageHit> image_hits(sql::Db& db, const QueryImage& img, const std::string& text, int top_k,
                                 const RetrieverOptions& o, bool with_text,
                                 const std::function<bool(const std::string&)>& drop_file) {
  const ImageRecords rec(img);
  const bool snippets = o.corpus == "snippets";
  const PostingsView& lists = snippets ? img.snippet_postings() : img.entity_postings();
  if (lists.doc_len.size() != (snippets ? rec.n_snippets() : rec.n_entities()))
    throw Error(ExitCode::bad_input, "the query image is damaged (its lists and records disagree)");
  Bm25Index bm25;
  // Scores without overrides read the lists alone, never a document's terms.
  bm25.attach(lists, [](int) -> const TermVec& {
    throw Error(ExitCode::failure, "a plain-text sparse query asked for a document's terms");
  });
  auto scored = bm25.score_all(query_terms(text), o.bm25);
  auto file_of = [&](int d) { return snippets ? rec.snippet_file(d) : rec.entity_file(d); };
  if (drop_file) {
    std::vector<int> dropped(img.files().size(), -1);  // per file: unknown, kept (0), dropped (1)
    std::erase_if(scored, [&](const ScoredDoc& d) {
      int& v = dropped[static_cast<size_t>(file_of(d.doc))];
      if (v < 0) v = drop_file(std::string(rec.path(file_of(d.doc)))) ? 1 : 0;
      return v == 1;
    });
  }
  // The retriever's tie order: path, then line (entities: then qualified name).
  auto line_of = [&](int d) { return snippets ? rec.snippet(d).start_line : rec.entity(d).start_line; };
  auto before = [&](int a, int b) {
    const int fa = file_of(a), fb = file_of(b);
    if (fa != fb) return rec.path(fa) < rec.path(fb);
    if (line_of(a) != line_of(b)) return line_of(a) < line_of(b);
    return !snippets && rec.source(fa).str(rec.entity(a).qualname) < rec.source(fb).str(rec.entity(b).qualname);
  };
  std::vector<ImageHit> hits;
  for (const ScoredDoc& sd : best_scored(std::move(scored), top_k, before)) {
    const int f = file_of(sd.doc);
    ImageHit h;
    h.path = rec.path(f);
    h.score = sd.score;
    if (snippets) {
      h.type = Hit::Type::snippet;
      h.start_line = rec.snippet(sd.doc).start_line;
      h.end_line = rec.snippet(sd.doc).end_line;
    } else {
      const image::Entity& en = rec.entity(sd.doc);
      h.qualname = rec.source(f).str(en.qualname);
      h.kind = static_cast<EntityKind>(en.kind);
      h.start_line = en.decorated_start_line;
      h.end_line = en.end_line;
    }
    if (with_text) h.text = indexed_lines(db, img.files()[static_cast<size_t>(f)].id, h.start_line, h.end_line);
    hits.push_back(std::move(h));
  }
  return hits;
}

}  // namespace

std::optional<std::vector<ImageHit>> sparse_from_image(const std::string& db_path, const std::string& text, int top_k,
                                                       const RetrieverOptions& o, bool with_text,
                                                       const std::function<bool(const std::string&)>& drop_file) {
  auto db = open_index_for_reading(db_path);
  db->exec("BEGIN");  // the token and the contents read below from one snapshot, as a RepoView does
  auto img = QueryImage::open(db_path, meta_get(*db, "query_image"));
  if (!img) return std::nullopt;
  try {
    return image_hits(*db, *img, text, top_k, o, with_text, drop_file);
  } catch (const Error& e) {
    if (e.code() != ExitCode::bad_input) throw;
    log_warn("{} ('{}'); loading through SQL", e.what(), db_path);  // a damaged image: the engine's path
    return std::nullopt;
  }
}

std::unique_ptr<Retriever> make_sparse(const Engine& e, const Models&, const RetrieverOptions& o) {
  return std::make_unique<SparseRetriever>(e, o);
}

}  // namespace repoctx
