// The query image (index/query_image.h): a view loaded from it equals the view loaded through SQL (every
// table, every BM25 score), also after updates that changed, added, removed and renamed files; a damaged or
// stale image is never used.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <set>

#include "helpers.h"
#include "index/index.h"
#include "index/query_image.h"
#include "index/repo_view.h"
#include "index/schema.h"
#include "retrieve/bm25.h"
#include "retrieve/sparse.h"
#include "util/text.h"

using namespace repoctx;
using repoctx::testing::TempDir;

namespace {

std::string module_text(int i, int version) {
  std::string s = "\"\"\"Module " + std::to_string(i) + ".\"\"\"\nimport os\nfrom .util import helper\n\n";
  s += "@decorate(" + std::to_string(version) + ")\nclass Store" + std::to_string(i) + "(Base, Mixin):\n";
  s += "    \"\"\"Keeps records of kind " + std::to_string(i) + ".\"\"\"\n";
  s += "    def load(self, path: str, *args, limit=10, **kw) -> dict:\n        \"\"\"Load records.\"\"\"\n";
  s += "        return helper(path, version=" + std::to_string(version) + ")\n\n";
  s += "def compute_" + std::to_string(i) + "(values):\n    total = sum(values) * " + std::to_string(version) +
       "\n    return total\n";
  return s;
}

struct Repo {
  TempDir dir, db;
  IndexOptions opt;
  Repo() {
    dir.write("pkg/__init__.py", "");
    dir.write("pkg/util.py", "def helper(path, version=0):\n    return {'path': path, 'v': version}\n");
    for (int i = 0; i < 12; ++i) dir.write("pkg/mod" + std::to_string(i) + ".py", module_text(i, 1));
    opt.db_path = db.str() + "/i.db";
    opt.progress = false;
  }
  IndexStats index() { return build_index(dir.str(), opt); }
};

void expect_same_entity(const EntityRec& a, const EntityRec& b) {
  EXPECT_EQ(a.id, b.id);
  EXPECT_EQ(a.file, b.file);
  EXPECT_EQ(a.ord, b.ord);
  EXPECT_EQ(a.parent_index, b.parent_index);
  EXPECT_EQ(a.name, b.name);
  EXPECT_EQ(a.qualname, b.qualname);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.signature, b.signature);
  EXPECT_EQ(a.docstring, b.docstring);
  EXPECT_EQ(a.decorators, b.decorators);
  EXPECT_EQ(a.bases, b.bases);
  ASSERT_EQ(a.params.size(), b.params.size());
  for (size_t i = 0; i < a.params.size(); ++i) {
    EXPECT_EQ(a.params[i].name, b.params[i].name);
    EXPECT_EQ(a.params[i].kind, b.params[i].kind);
    EXPECT_EQ(a.params[i].has_default, b.params[i].has_default);
    EXPECT_EQ(a.params[i].annotation, b.params[i].annotation);
  }
  EXPECT_EQ(a.start_line, b.start_line);
  EXPECT_EQ(a.end_line, b.end_line);
  EXPECT_EQ(a.body_start_line, b.body_start_line);
  EXPECT_EQ(a.body_start_byte, b.body_start_byte);
  EXPECT_EQ(a.doc_len, b.doc_len);
}

// The image-loaded view answers exactly like the SQL-loaded one.
void expect_same_views(const std::string& db) {
  auto img = RepoView::open(db, true);
  auto sql = RepoView::open(db, false);
  ASSERT_NE(img->image(), nullptr) << "the image matches the index";
  ASSERT_EQ(sql->image(), nullptr);
  EXPECT_EQ(img->snippet_lines(), sql->snippet_lines());
  ASSERT_EQ(img->files().size(), sql->files().size());
  for (size_t f = 0; f < sql->files().size(); ++f) {
    const auto &a = img->files()[f], &b = sql->files()[f];
    EXPECT_EQ(a.path, b.path);
    EXPECT_EQ(a.module, b.module);
    EXPECT_EQ(a.hash, b.hash);
    EXPECT_EQ(a.id, b.id);
    EXPECT_EQ(a.package, b.package);
    EXPECT_EQ(a.language, b.language);
    EXPECT_EQ(a.line_count, b.line_count);
    EXPECT_EQ(a.n_errors, b.n_errors) << a.path;
    EXPECT_EQ(a.first_entity, b.first_entity);
    EXPECT_EQ(a.n_entities, b.n_entities);
    EXPECT_EQ(a.first_snippet, b.first_snippet);
    EXPECT_EQ(a.n_snippets, b.n_snippets);
    EXPECT_EQ(img->files_in_module(a.module), sql->files_in_module(b.module));
    ASSERT_EQ(img->imports(static_cast<int>(f)).size(), sql->imports(static_cast<int>(f)).size());
    for (size_t k = 0; k < sql->imports(static_cast<int>(f)).size(); ++k) {
      EXPECT_EQ(img->imports(static_cast<int>(f))[k].module, sql->imports(static_cast<int>(f))[k].module);
      EXPECT_EQ(img->imports(static_cast<int>(f))[k].name, sql->imports(static_cast<int>(f))[k].name);
      EXPECT_EQ(img->imports(static_cast<int>(f))[k].line, sql->imports(static_cast<int>(f))[k].line);
    }
  }
  ASSERT_EQ(img->entities().size(), sql->entities().size());
  for (size_t e = 0; e < sql->entities().size(); ++e) expect_same_entity(img->entities()[e], sql->entities()[e]);
  ASSERT_EQ(img->snippets().size(), sql->snippets().size());
  for (size_t s = 0; s < sql->snippets().size(); ++s) {
    EXPECT_EQ(img->snippets()[s].start_line, sql->snippets()[s].start_line);
    EXPECT_EQ(img->snippets()[s].doc_len, sql->snippets()[s].doc_len);
  }
  // BM25 over the mapped lists equals BM25 built from the term vectors, with and without overrides.
  sql->load_all_terms();
  std::vector<const TermVec*> docs(sql->entities().size());
  for (size_t i = 0; i < docs.size(); ++i) docs[i] = &sql->entity_terms(static_cast<int>(i));
  Bm25Index built, mapped;
  built.build(docs);
  const RepoView* iv = img.get();
  mapped.attach(img->image()->entity_postings(), [iv](int d) -> const TermVec& { return iv->entity_terms(d); });
  EXPECT_EQ(built.num_docs(), mapped.num_docs());
  EXPECT_DOUBLE_EQ(built.avgdl(), mapped.avgdl());
  Bm25Overrides ov;
  ov.removed = {0, 3};
  TermVec replacement = term_vector("def load(self, path): return helper(path) records total values");
  ov.replaced = {{5, &replacement}};
  for (const char* q : {"load records path", "compute total values sum", "helper version", "store kind base"})
    for (const Bm25Overrides* o :
         {static_cast<const Bm25Overrides*>(nullptr), static_cast<const Bm25Overrides*>(&ov)}) {
      auto a = built.score_all(query_terms(q), Bm25Params{}, o);
      auto b = mapped.score_all(query_terms(q), Bm25Params{}, o);
      auto by_doc = [](std::vector<ScoredDoc> v) {
        std::sort(v.begin(), v.end(), [](const ScoredDoc& x, const ScoredDoc& y) { return x.doc < y.doc; });
        return v;
      };
      a = by_doc(a);
      b = by_doc(b);
      ASSERT_EQ(a.size(), b.size()) << q;
      for (size_t i = 0; i < a.size(); ++i) {
        EXPECT_EQ(a[i].doc, b[i].doc) << q;
        EXPECT_DOUBLE_EQ(a[i].score, b[i].score) << q;
      }
    }
}

std::string meta(const std::string& db, const std::string& key) {
  sql::Db d(db, true);
  return meta_get(d, key);
}

// Every term's postings in current numbering (through for_each_piece: an overlay's pieces in order).
std::vector<std::pair<uint32_t, uint32_t>> postings_of(const PostingsView& v, uint64_t term) {
  std::vector<std::pair<uint32_t, uint32_t>> out;
  v.for_each_piece(term, [&](std::span<const Posting> piece, uint32_t shift) {
    for (const Posting& p : piece) out.emplace_back(p.doc + shift, p.tf);
  });
  return out;
}

// The inverted lists of the image an update wrote (rewritten, or an update's image over a base) equal, term
// for term and posting for posting, those of an image written anew from the index.
void expect_update_lists_equal_fresh_ones(const std::string& db_path) {
  auto updated = RepoView::open(db_path);
  ASSERT_NE(updated->image(), nullptr);
  {  // the updated image stays mapped by `updated` when the fresh one is renamed over its file
    sql::Db db(db_path, false);
    auto view = RepoView::open(db_path, false);
    publish_query_image(db, *view);
  }
  auto fresh = QueryImage::open(db_path, meta(db_path, "query_image"));
  ASSERT_NE(fresh, nullptr);
  ASSERT_EQ(fresh->base(), nullptr) << "a fresh image is a full one";
  auto same = [](const PostingsView& a, const PostingsView& b, const char* what) {
    std::set<uint64_t> terms;  // every term either side knows (an overlay's base may hold gone ones)
    for (const auto& t : a.terms) terms.insert(t.term);
    for (const auto& t : a.extra_terms) terms.insert(t.term);
    for (const auto& t : b.terms) terms.insert(t.term);
    size_t n = 0;
    for (uint64_t t : terms) {
      auto x = postings_of(a, t), y = postings_of(b, t);
      ASSERT_EQ(x, y) << what << " term " << t;
      EXPECT_EQ(a.doc_freq(t), b.doc_freq(t)) << what << " term " << t;
      n += x.size();
    }
    EXPECT_EQ(n, b.postings.size()) << what;
    EXPECT_TRUE(std::equal(a.doc_len.begin(), a.doc_len.end(), b.doc_len.begin(), b.doc_len.end())) << what;
    EXPECT_TRUE(std::equal(a.present.begin(), a.present.end(), b.present.begin(), b.present.end())) << what;
    EXPECT_EQ(a.n_docs, b.n_docs) << what;
    EXPECT_EQ(a.total_len, b.total_len) << what;
  };
  const QueryImage& u = *updated->image();
  same(u.entity_postings(), fresh->entity_postings(), "entities");
  same(u.snippet_postings(), fresh->snippet_postings(), "snippets");
}
}  // namespace

TEST(QueryImage, AViewFromTheImageEqualsOneThroughSql) {
  Repo r;
  r.index();
  expect_same_views(r.opt.db_path);
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// A new index (and --force) writes its image from the records the run wrote (index/full_image.h): byte for
// byte the image built from the index read back through SQL, but for the random token. The files stress what
// could differ: many imports on one line (their order), invalid UTF-8 in a docstring and a signature (stored
// sanitized), syntax errors (counted), Java, and files indexed largest first but laid out by path.
TEST(QueryImage, AFullBuildsImageEqualsTheOneReadBackThroughSql) {
  Repo r;
  std::string many = "from .util import ";
  for (int i = 0; i < 40; ++i) many += (i ? ", n" : "n") + std::to_string(i);
  r.dir.write("pkg/imports_one_line.py", many + "\nimport os, sys, re, json\n\ndef f():\n    import a, b, c\n");
  r.dir.write("pkg/bad_utf8.py", "def g\xff(x):\n    \"\"\"Doc \xfe\xff.\"\"\"\n    return x\n");
  r.dir.write("pkg/broken.py", "def ok():\n    return 1\n\ndef broken(:\n    pass\n\nclass C:\n    x = 1\n");
  r.dir.write("src/Main.java",
              "package a.b;\nimport java.util.List;\npublic class Main { int f(List<String> x) { return 1; } }\n");
  r.dir.write("pkg/Z_upper.py", "VALUE = 1\n");
  for (bool force : {false, true}) {
    r.opt.force = force;
    auto st = r.index();
    ASSERT_TRUE(st.complete);
    ASSERT_GT(st.parsed, 15u);
    const std::string path = QueryImage::path_for(r.opt.db_path);
    std::string from_run = read_bytes(path);
    std::string token_run = meta(r.opt.db_path, "query_image");
    {
      sql::Db db(r.opt.db_path, false);
      auto view = RepoView::open(r.opt.db_path, false);
      publish_query_image(db, *view);
    }
    std::string from_sql = read_bytes(path);
    std::string token_sql = meta(r.opt.db_path, "query_image");
    ASSERT_EQ(token_run.size(), 32u);
    ASSERT_NE(token_run, token_sql);
    size_t at = from_run.find(token_run);
    ASSERT_NE(at, std::string::npos);
    from_run.replace(at, token_run.size(), token_sql);
    ASSERT_EQ(from_run.size(), from_sql.size());
    EXPECT_TRUE(from_run == from_sql) << "first difference at byte "
                                      << std::mismatch(from_run.begin(), from_run.end(), from_sql.begin()).first -
                                             from_run.begin();
  }
  expect_same_views(r.opt.db_path);
}

TEST(QueryImage, UpdatesAfterChangesEqualAFreshIndex) {
  Repo r;
  r.index();
  std::string first = meta(r.opt.db_path, "query_image");
  // Change one file, add two, remove one, rename one: the update path (previous image + changed files).
  r.dir.write("pkg/mod3.py", module_text(3, 7));
  r.dir.write("pkg/aaa_new.py", "def first_new():\n    return 1\n");
  r.dir.write("pkg/zzz_new.py", module_text(99, 2));
  std::filesystem::remove(r.dir / "pkg/mod5.py");
  std::filesystem::rename(r.dir / "pkg/mod7.py", r.dir / "pkg/mod7_renamed.py");
  auto st = r.index();
  EXPECT_EQ(st.parsed, 4u);
  EXPECT_EQ(st.removed, 2u);
  std::string second = meta(r.opt.db_path, "query_image");
  EXPECT_NE(second, first);
  EXPECT_EQ(meta(r.opt.db_path, "query_image_base"), first) << "updated from the previous image";
  expect_same_views(r.opt.db_path);
  // Nothing changed: the image is kept.
  r.index();
  EXPECT_EQ(meta(r.opt.db_path, "query_image"), second);
  expect_update_lists_equal_fresh_ones(r.opt.db_path);  // writes a fresh image: last
}

// A change to a few files of a larger index writes an update's image over the full one: the full image is
// not rewritten, and what a reader sees (records, lists, BM25) is what a fresh image holds. Further small
// changes make the update anew over the same base; a change to many files writes a full image again.
TEST(QueryImage, AFewChangedFilesWriteAnUpdateOverTheFullImageThatReadsAsAFreshOne) {
  Repo r;
  for (int i = 12; i < 90; ++i) r.dir.write("pkg/mod" + std::to_string(i) + ".py", module_text(i, 1));
  ASSERT_TRUE(r.index().complete);
  const std::string full = QueryImage::path_for(r.opt.db_path), delta = QueryImage::delta_path_for(r.opt.db_path);
  const std::string base_token = meta(r.opt.db_path, "query_image");
  const auto full_bytes = read_bytes(full);
  EXPECT_FALSE(std::filesystem::exists(delta));

  // One file changed (a definition more), one added between others, one removed; two changed files with
  // syntax errors, one of them also nested beyond the extractor's limit (a "partial" row that is not
  // counted as a syntax error).
  r.dir.write("pkg/mod30.py", module_text(30, 2) + "\ndef added(x):\n    return compute_30([x])\n");
  r.dir.write("pkg/mod31.py", module_text(31, 1) + "\ndef broken(:\n    pass\n");
  r.dir.write("pkg/mod32.py", "w = " + std::string(4000, '(') + "1" + std::string(4000, ')') +
                                  "\n\ndef broken(:\n    pass\n\ndef after(x):\n    return x\n");
  r.dir.write("pkg/mod44_new.py", "def fresh_one(values):\n    return sorted(values)\n");
  std::filesystem::remove(r.dir / "pkg/mod12.py");
  ASSERT_TRUE(r.index().complete);
  ASSERT_TRUE(std::filesystem::exists(delta));
  EXPECT_EQ(read_bytes(full), full_bytes) << "the full image is not rewritten";
  auto img = QueryImage::open(r.opt.db_path, meta(r.opt.db_path, "query_image"));
  ASSERT_NE(img, nullptr);
  ASSERT_NE(img->base(), nullptr) << "an update's image";
  EXPECT_EQ(img->base()->token(), base_token);
  EXPECT_TRUE(img->entity_postings().overlay());
  int own = 0;
  for (const auto& f : img->files()) own += f.origin < 0;
  EXPECT_EQ(own, 4) << "the changed and the added files";
  img.reset();
  expect_same_views(r.opt.db_path);

  // Another small change: the update is made anew over the same base (the first change stays in it).
  r.dir.write("pkg/mod50.py", module_text(50, 3));
  ASSERT_TRUE(r.index().complete);
  img = QueryImage::open(r.opt.db_path, meta(r.opt.db_path, "query_image"));
  ASSERT_NE(img, nullptr);
  ASSERT_NE(img->base(), nullptr);
  EXPECT_EQ(img->base()->token(), base_token);
  own = 0;
  for (const auto& f : img->files()) own += f.origin < 0;
  EXPECT_EQ(own, 5);
  img.reset();
  EXPECT_EQ(read_bytes(full), full_bytes);
  expect_same_views(r.opt.db_path);
  // Nothing changed: kept as it is.
  const std::string kept = meta(r.opt.db_path, "query_image");
  r.index();
  EXPECT_EQ(meta(r.opt.db_path, "query_image"), kept);

  // The base replaced behind the update's back (another tool, a restore): never used, loaded through SQL.
  {
    auto view = RepoView::open(r.opt.db_path);
    ASSERT_NE(view->image(), nullptr);
    std::filesystem::copy_file(full, full + ".saved");
    std::filesystem::remove(full);
    auto through_sql = RepoView::open(r.opt.db_path);
    EXPECT_EQ(through_sql->image(), nullptr);
    EXPECT_EQ(through_sql->entities().size(), view->entities().size());
    std::filesystem::rename(full + ".saved", full);
  }

  // Many files changed: a full image again, the update's image gone.
  for (int i = 13; i < 30; ++i) r.dir.write("pkg/mod" + std::to_string(i) + ".py", module_text(i, 4));
  ASSERT_TRUE(r.index().complete);
  EXPECT_FALSE(std::filesystem::exists(delta));
  img = QueryImage::open(r.opt.db_path, meta(r.opt.db_path, "query_image"));
  ASSERT_NE(img, nullptr);
  EXPECT_EQ(img->base(), nullptr);
  img.reset();
  expect_same_views(r.opt.db_path);

  // And the lists of an update's image equal a fresh image's, posting for posting.
  r.dir.write("pkg/mod40.py", module_text(40, 5) + "\nclass Extra(Store40):\n    pass\n");
  ASSERT_TRUE(r.index().complete);
  ASSERT_TRUE(std::filesystem::exists(delta));
  expect_update_lists_equal_fresh_ones(r.opt.db_path);  // writes a fresh image: last
}

// A plain-text query answered from the image alone (retrieve/sparse.h) returns the `sparse` retriever's hits
// over the engine: the same files, names, lines, text and scores in the same order, ties included (the
// fixture's modules score alike), over both corpora and with hits dropped by path.
void expect_image_query_equals_retriever(const std::string& db) {
  Engine eng(RepoView::open(db));
  ASSERT_NE(eng.view().image(), nullptr);
  auto test_path = [](const std::string& path) { return is_test_path(path); };
  int compared = 0;
  for (const std::string corpus : {"entities", "snippets"})
    for (const std::string text : {"Store records load", "compute values total sum", "helper path version"})
      for (int k : {3, 7, 200})
        for (bool drop_tests : {false, true}) {
          RetrieverOptions ro;
          ro.corpus = corpus;
          auto r = make_retriever("sparse", eng, {}, ro);
          RetrievalQuery q;
          q.text = text;
          q.top_k = k;
          auto want =
              drop_tests
                  ? run_filtered(*r, q, [&](const Hit& h) { return is_test_path(eng.view().files()[h.file].path); })
                        .hits
                  : r->run(q).hits;
          auto got = sparse_from_image(db, text, k, ro, true,
                                       drop_tests ? std::function<bool(const std::string&)>(test_path) : nullptr);
          ASSERT_TRUE(got.has_value());
          ASSERT_EQ(got->size(), want.size()) << corpus << " '" << text << "' k=" << k;
          ASSERT_FALSE(want.empty());
          for (size_t i = 0; i < want.size(); ++i) {
            const Hit& w = want[i];
            const ImageHit& g = (*got)[i];
            const std::string& content = eng.view().content(w.file);
            EXPECT_EQ(g.path, eng.view().files()[w.file].path) << i;
            EXPECT_EQ(g.type, w.type);
            EXPECT_EQ(g.start_line, w.start_line);
            EXPECT_EQ(g.end_line, w.end_line);
            EXPECT_EQ(g.score, w.score) << "bit for bit";
            EXPECT_EQ(g.text, sanitize_utf8(line_range(content, line_starts(content), w.start_line, w.end_line)));
            if (w.type == Hit::Type::entity) {
              EXPECT_EQ(g.qualname, eng.view().entities()[w.entity].qualname);
              EXPECT_EQ(g.kind, eng.view().entities()[w.entity].kind);
            }
            if (drop_tests) EXPECT_FALSE(is_test_path(g.path)) << g.path;
          }
          ++compared;
        }
  EXPECT_EQ(compared, 36);
}

TEST(QueryImage, APlainTextQueryFromTheImageEqualsTheRetrieversOverTheEngine) {
  Repo r;
  for (int i = 12; i < 60; ++i) r.dir.write("pkg/mod" + std::to_string(i) + ".py", module_text(i, 1));
  r.dir.write("tests/test_store.py", "def test_store_records_load():\n    assert Store1().load('p')\n");
  r.dir.write("tests/test_compute.py", "def test_compute_values_total_sum():\n    assert compute_1([1]) == 1\n");
  ASSERT_TRUE(r.index().complete);
  expect_image_query_equals_retriever(r.opt.db_path);
  // An update's image over the full one (one file changed, one added): the records come from both.
  r.dir.write("pkg/mod20.py", module_text(20, 2) + "\ndef load_store_records(path):\n    return helper(path)\n");
  r.dir.write("pkg/mod33_new.py", "def total_sum(values):\n    return compute_3(values)\n");
  ASSERT_TRUE(r.index().complete);
  auto img = QueryImage::open(r.opt.db_path, meta(r.opt.db_path, "query_image"));
  ASSERT_NE(img, nullptr);
  ASSERT_NE(img->base(), nullptr) << "an update's image";
  img.reset();
  expect_image_query_equals_retriever(r.opt.db_path);
  // Without an image that matches the index there is no answer from it (the caller opens an engine).
  std::filesystem::remove(QueryImage::delta_path_for(r.opt.db_path));
  EXPECT_FALSE(sparse_from_image(r.opt.db_path, "Store", 5, {}, false, nullptr).has_value());
}

TEST(QueryImage, ADamagedOrStaleImageIsNeverUsed) {
  Repo r;
  r.index();
  const std::string path = QueryImage::path_for(r.opt.db_path);
  ASSERT_TRUE(std::filesystem::exists(path));
  // Stale: the index names another token.
  {
    sql::Db d(r.opt.db_path);
    meta_set(d, "query_image", "0123456789abcdef0123456789abcdef");
  }
  EXPECT_EQ(RepoView::open(r.opt.db_path)->image(), nullptr);
  r.index();  // repairs it
  EXPECT_NE(RepoView::open(r.opt.db_path)->image(), nullptr);
  // Damaged: cut short, then its size restored with garbage.
  auto size = std::filesystem::file_size(path);
  std::filesystem::resize_file(path, size / 2);
  auto v = RepoView::open(r.opt.db_path);
  EXPECT_EQ(v->image(), nullptr);
  EXPECT_EQ(v->entities().size(), RepoView::open(r.opt.db_path, false)->entities().size()) << "loaded through SQL";
  {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(static_cast<std::streamoff>(size / 2 - 1));
    std::string junk(size - size / 2 + 1, '\xff');
    f.write(junk.data(), static_cast<std::streamsize>(junk.size()));
  }
  v = RepoView::open(r.opt.db_path);
  EXPECT_EQ(v->image(), nullptr) << "lists pointing outside the file are caught";
  // A plain-text query from the damaged image answers from what it can check, or leaves it to the engine.
  std::optional<std::vector<ImageHit>> hits;
  EXPECT_NO_THROW(hits = sparse_from_image(r.opt.db_path, "Store records load", 5, {}, true, nullptr));
  EXPECT_EQ(v->entities().size(), RepoView::open(r.opt.db_path, false)->entities().size());
  r.index();
  expect_same_views(r.opt.db_path);
}
