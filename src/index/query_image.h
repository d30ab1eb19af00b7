// The query image: what a query needs from an index (the file, entity, snippet and import tables and the
// BM25 inverted lists of entities and snippets), written at index time next to the database
// (<db>-image) in a flat layout that is memory-mapped at load, so that a fresh process answers a query
// without re-reading the tables through SQL or rebuilding the inverted lists (the cold-query rows of
// docs/BENCHMARKS.md measure both paths).
//
// Consistency: the image carries a random token, and the database's meta row `query_image` names the
// token of the image that matches its contents. An indexing run that changes anything clears the row
// before its first write and sets it after writing the new image, so a reader (inside its read
// transaction) uses the image only when both agree, and otherwise loads through SQL: slower, never wrong.
// A damaged image (bad magic, sizes or references) is likewise ignored.
//
// Updates: a run that re-parsed a few files writes an update's image, <db>-image-delta, over the last full
// image instead of rewriting it (a full image is ~40 MB for sympy; rewriting it was most of a one-file
// re-index): the whole files table, each row naming where its records are (the base, or the update's own
// tables, which hold only the files changed since the base), the inverted lists of the changed files'
// documents, and runs saying which of the base's documents are kept and their numbers now. It names its
// base's token; a reader maps both and sees exactly the records and lists of a freshly written image (the
// unit tests compare them). When the changed files pass a sixteenth of the index, the next run writes a
// full image again.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "index/postings.h"
#include "util/sqlite.h"

namespace repoctx {

class RepoView;

namespace image {

struct Str {
  uint32_t off, len;
};
struct File {
  int64_t id;
  Str path, module, package, hash;
  int32_t language, line_count, n_errors, first_entity, n_entities, first_snippet, n_snippets;
  // -1: the file's entities, snippets and imports are this image's (first_entity, first_snippet index its
  // tables). In an update's image, >= 0: the base image's file of that index holds them (and first_entity,
  // first_snippet index the base's tables).
  int32_t origin;
};
struct Entity {
  int64_t id;
  int32_t file, ord, parent, kind;
  Str name, qualname, signature, docstring;
  int32_t start_line, end_line, decorated_start_line, header_end_line, doc_start_line, doc_end_line, body_start_line,
      body_end_line;
  uint32_t start_byte, end_byte, body_start_byte, doc_len;
  uint32_t decorators, n_decorators, bases, n_bases, params, n_params;  // into strlist / params
  uint32_t is_async, pad;
};
struct Param {
  Str name, annotation;
  int32_t kind, has_default;
};
struct Snippet {
  int32_t file, ord, start_line, end_line;
  uint32_t doc_len, pad;
};
struct Import {
  int32_t file, line, scope, level;
  Str module, name, alias;
  int32_t star, conditional;
};

}  // namespace image

class QueryImage {
 public:
  // The image file of an index database.
  static std::string path_for(const std::string& db_path) { return db_path + "-image"; }

  // The update's image over it.
  static std::string delta_path_for(const std::string& db_path) { return db_path + "-image-delta"; }

  // Maps the image of `db_path` that carries `token` (the full image, or an update's image and its base)
  // when it exists and is well-formed; null otherwise.
  static std::unique_ptr<QueryImage> open(const std::string& db_path, const std::string& token);
  ~QueryImage();
  QueryImage(const QueryImage&) = delete;
  QueryImage& operator=(const QueryImage&) = delete;

  // An update's image: the base image holding the records of the files whose `origin` is >= 0 (files()
  // is the whole table; the other tables are the update's own). Null for a full image.
  const QueryImage* base() const { return base_image_.get(); }
  std::span<const image::File> files() const { return files_; }
  std::span<const image::Entity> entities() const { return entities_; }
  std::span<const image::Param> params() const { return params_; }
  std::span<const image::Str> strlist() const { return strlist_; }
  std::span<const image::Snippet> snippets() const { return snippets_; }
  std::span<const image::Import> imports() const { return imports_; }
  // The inverted lists in the current numbering (for an update's image: an overlay of the base's).
  const PostingsView& entity_postings() const { return entity_; }
  const PostingsView& snippet_postings() const { return snippet_; }
  // A string of the tables; throws Error(bad_input) when it points outside the string table (damaged).
  std::string_view str(image::Str s) const;
  // Every inverted list lies inside its postings array. Not checked by open(), which would read the whole
  // dictionary (millions of terms on a large index) before a query reads one list; a reader that reads
  // lists one by one is kept inside by PostingsView::find_in, a reader that loads everything calls this.
  bool lists_fit() const;
  const std::string& token() const { return token_; }
  size_t string_bytes() const { return strings_.size(); }

 private:
  QueryImage() = default;
  // One file of either kind; `delta` = an update's image (its base is mapped by open()).
  static std::unique_ptr<QueryImage> map_file(const std::string& path, const std::string& db_path,
                                              const std::string& token, bool delta);
  std::unique_ptr<QueryImage> base_image_;
  std::string base_token_;
  const char* base_ = nullptr;
  size_t size_ = 0;
  std::string token_;
  std::string_view strings_;
  std::span<const image::File> files_;
  std::span<const image::Entity> entities_;
  std::span<const image::Param> params_;
  std::span<const image::Str> strlist_;
  std::span<const image::Snippet> snippets_;
  std::span<const image::Import> imports_;
  PostingsView entity_, snippet_;
};

// An image's records in the numbering a RepoView loaded from it uses (files in the image's order, each file's
// entities and snippets consecutive; an update's files read from its base where their records are), read in
// place: a process that needs a handful of records (a plain-text query's hits) decodes those alone instead of
// the whole table (4.9 M entities for the Linux tree). Throws Error(bad_input) when a file's rows do not lie
// in its image's tables.
class ImageRecords {
 public:
  explicit ImageRecords(const QueryImage& img);
  size_t n_entities() const { return static_cast<size_t>(entity_starts_.back()); }
  size_t n_snippets() const { return static_cast<size_t>(snippet_starts_.back()); }
  // The file (an index into the image's files()) of entity or snippet `d` of the current numbering.
  int entity_file(int d) const { return file_at(entity_starts_, d); }
  int snippet_file(int d) const { return file_at(snippet_starts_, d); }
  const image::Entity& entity(int d) const;
  const image::Snippet& snippet(int d) const;
  // The image whose tables and strings hold file `f`'s records.
  const QueryImage& source(int f) const;
  std::string_view path(int f) const { return img_.str(img_.files()[static_cast<size_t>(f)].path); }

 private:
  static int file_at(const std::vector<int64_t>& starts, int d);
  const QueryImage& img_;
  std::vector<int64_t> entity_starts_, snippet_starts_;  // per file, then the total
};

// Writes the image of the index in `db` (the indexer's connection; its meta row is updated) from the
// view `v` loaded through SQL, then names it in meta. Returns the token.
std::string publish_query_image(sql::Db& db, const RepoView& v);
// Called by the indexer: before a run's first change (the image no longer matches) ...
void invalidate_query_image(sql::Db& db);
// ... and after a complete run: writes a new image when the run changed anything or the current one is
// missing or does not match (an index built before images existed), updating the previous image when it
// can (`full`: rebuild from the whole index, e.g. after a forced re-parse). Failures only warn: queries
// then load through SQL.
void refresh_query_image(sql::Db& db, const std::string& db_path, bool changed, bool full = false);

}  // namespace repoctx
