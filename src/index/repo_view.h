// A read-only, in-memory view of an index: files, entities and imports loaded eagerly (small), references,
// contents and term vectors loaded per file on demand. Everything downstream (resolution, retrieval,
// evaluation) reads the repository through this class.
#pragma once

#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "index/query_image.h"
#include "repo/documents.h"
#include "repo/model.h"
#include "util/sqlite.h"

namespace repoctx {

struct FileRec {
  int64_t id = 0;
  std::string path, module, package, hash;
  Language language = Language::unknown;
  int line_count = 0;
  int n_errors = 0;
  int first_entity = 0, n_entities = 0;  // entities[first_entity, first_entity + n_entities)
  int first_snippet = 0, n_snippets = 0;
};

struct EntityRec : Entity {
  int64_t id = 0;
  int file = 0;           // index into files()
  int ord = 0;            // position within its file
  int parent_index = -1;  // global index of the parent entity, -1 = module level
  uint32_t doc_len = 0;
};

struct SnippetRec {
  int file = 0;
  int ord = 0;
  int start_line = 0, end_line = 0;
  uint32_t doc_len = 0;
};

class RepoView {
 public:
  // Throws Error(not_found) with a hint to run `repoctx index` when the database is missing. The tables come
  // from the query image (index/query_image.h) when one matches the index and `use_image`, else through SQL.
  static std::unique_ptr<RepoView> open(const std::string& db_path, bool use_image = true);

  const std::string& root() const { return root_; }
  const std::string& db_path() const { return db_path_; }
  bool complete() const { return complete_; }
  int snippet_lines() const { return snippet_lines_; }  // AlignCoder's L the snippets were made with
  // The package.json and tsconfig.json facts of a JavaScript/TypeScript repository, as the index stores
  // them (repo/javascript/manifests.h: JavascriptResolution::from_json); "" when it has none.
  const std::string& javascript_resolution() const { return javascript_resolution_; }
  const std::string& c_include_dirs() const { return c_include_dirs_; }  // repo/c/compile_commands.h as JSON

  const std::vector<FileRec>& files() const { return files_; }
  const std::vector<EntityRec>& entities() const { return entities_; }
  const std::vector<SnippetRec>& snippets() const { return snippets_; }
  const std::vector<Import>& imports(int file) const { return imports_[file]; }

  std::optional<int> file_by_path(const std::string& path) const;
  // The file of a module (Python: one; Java: the first file of the package, by path).
  std::optional<int> file_by_module(const std::string& module) const;
  // Every file of a module: a Java package spans one file per top-level class.
  const std::vector<int>& files_in_module(const std::string& module) const;
  bool module_exists(const std::string& module) const { return file_by_module(module).has_value(); }
  // Entities of a file with this qualname (several when redefined), in line order.
  std::vector<int> find_entities(int file, const std::string& qualname) const;
  std::vector<int> entities_named(const std::string& name) const;  // by short name, repository-wide

  // On demand, cached, thread-safe.
  const std::vector<Reference>& references(int file) const;
  const std::string& content(int file) const;
  const TermVec& entity_terms(int entity) const;
  const TermVec& snippet_terms(int snippet) const;
  // Loads every term vector at once (BM25 index construction); cheaper than one query per row.
  void load_all_terms() const;

  // Is entity `e` inside entity `outer` (or equal to it)?
  bool is_within(int e, int outer) const;

  // The query image the view was loaded from (its BM25 inverted lists serve queries), or null.
  const QueryImage* image() const { return image_.get(); }

 private:
  RepoView() = default;
  void load_entities(const std::unordered_map<int64_t, int>& file_index);  // part of open()
  void index_files();                                                      // the lookup tables by path and by module
  // Defined in query_image.cpp: the tables from the image (false: it does not match; load through SQL),
  // and one file's term vectors read on demand (the image holds no term vectors).
  bool load_image(const std::string& token);
  void load_file_terms(int file) const;  // mu_ held
  std::unique_ptr<QueryImage> image_;
  mutable std::vector<char> file_terms_loaded_;
  std::string root_, db_path_;
  bool complete_ = false;
  int snippet_lines_ = 15;
  std::string javascript_resolution_;
  std::string c_include_dirs_;
  std::vector<FileRec> files_;
  std::vector<EntityRec> entities_;
  std::vector<SnippetRec> snippets_;
  std::vector<std::vector<Import>> imports_;
  std::unordered_map<std::string, int> by_path_, by_module_;
  std::unordered_map<std::string, std::vector<int>> files_by_module_;
  // Built on the first entities_named() call: a cold query never asks by name, and building it was a tenth
  // of `retrieve --no-refresh` on sympy. Keys view entities_' names (never changed after loading).
  mutable std::once_flag by_name_once_;
  mutable std::unordered_map<std::string_view, std::vector<int>> by_name_;

  mutable std::unique_ptr<sql::Db> db_;
  mutable std::mutex mu_;
  mutable std::vector<std::unique_ptr<std::vector<Reference>>> refs_;
  mutable std::vector<std::unique_ptr<std::string>> contents_;
  mutable std::vector<TermVec> entity_terms_, snippet_terms_;
  mutable bool terms_loaded_ = false;
};

// Ranking ties are broken by where an entity is (path, then line, then qualified name), never by internal
// ids, so that results do not depend on the order files were indexed in.
bool entity_before(const RepoView& v, int a, int b);

// The files table as the view reads it: the columns to select (in the view's order: ORDER BY path), and a
// row of them as the view holds it (first_entity/first_snippet and the counts left unset). The image's
// update path reads the same rows the same way.
extern const char* const kFileRowsByPath;
FileRec file_from_row(sql::Stmt& s);

}  // namespace repoctx
