#include "index/repo_view.h"

#include <algorithm>
#include <cstdlib>
#include <filesystem>

#include <nlohmann/json.hpp>

#include "index/index.h"
#include "index/schema.h"
#include "index/store.h"
#include "repo/javascript/modules.h"
#include "util/error.h"
#include "util/log.h"

namespace repoctx {

namespace {

// The position of a file id in the view; a row naming an unknown file means a damaged index.
int file_position(const std::unordered_map<int64_t, int>& index, int64_t id, const std::string& db_path,
                  const char* table) {
  auto it = index.find(id);
  if (it == index.end())
    throw Error(ExitCode::bad_input, "the index '" + db_path + "' is damaged (a row of " + table + " names file id " +
                                         std::to_string(id) + ", which does not exist); " + rebuild_hint(db_path));
  return it->second;
}

}  // namespace

const char* const kFileRowsByPath =
    "SELECT id, path, module, package, language, hash, line_count, errors FROM files ORDER BY path";

FileRec file_from_row(sql::Stmt& s) {
  FileRec f;
  f.id = s.i64(0);
  f.path = s.str(1);
  f.module = s.str(2);
  f.package = s.str(3);
  std::string lang = s.str(4);
  f.language = language_from_name(lang);
  f.hash = s.str(5);
  f.line_count = s.i32(6);
  auto errs = nlohmann::json::parse(s.str(7), nullptr, false);
  if (errs.is_array())  // syntax errors; "partial" rows (nesting beyond the limits) are not counted
    for (const auto& e : errs) f.n_errors += e.is_array() && e.size() == 4 ? 0 : 1;
  return f;
}

std::unique_ptr<RepoView> RepoView::open(const std::string& db_path, bool use_image) {
  std::unique_ptr<RepoView> v(new RepoView());
  v->db_path_ = db_path;
  v->db_ = open_index_for_reading(db_path);
  sql::Db& db = *v->db_;
  // One read transaction for the view's whole life: the load below and everything read later on demand
  // (references, contents, term vectors) come from one WAL snapshot, whatever an indexer running at the
  // same time commits (it replaces a file's rows with new ids: a view mixing two snapshots would find
  // entities of files it does not know, or no references for a file it does).
  db.exec("BEGIN");
  v->root_ = meta_get(db, "root");  // the snapshot starts at this first read
  v->complete_ = meta_get(db, "complete") == "1";
  v->snippet_lines_ = std::atoi(meta_get(db, "snippet_lines").c_str());
  v->javascript_resolution_ = meta_get(db, "javascript_resolution");
  v->c_include_dirs_ = meta_get(db, "c_include_dirs");
  // The fast path: the tables and inverted lists from the query image written with this state of the index.
  if (use_image && v->load_image(meta_get(db, "query_image"))) return v;

  std::unordered_map<int64_t, int> file_index;
  {
    sql::Stmt s(db, kFileRowsByPath);
    while (s.step()) {
      FileRec f = file_from_row(s);
      file_index[f.id] = static_cast<int>(v->files_.size());
      v->files_.push_back(std::move(f));
    }
    v->index_files();
  }
  v->load_entities(file_index);
  {
    sql::Stmt s(db,
                "SELECT s.file_id, s.ord, s.start_line, s.end_line, s.doc_len FROM snippets s "
                "JOIN files f ON f.id = s.file_id ORDER BY f.path, s.ord");
    int last_file = -1;
    while (s.step()) {
      SnippetRec r;
      r.file = file_position(file_index, s.i64(0), db_path, "snippets");
      r.ord = s.i32(1);
      r.start_line = s.i32(2);
      r.end_line = s.i32(3);
      r.doc_len = static_cast<uint32_t>(s.i64(4));
      FileRec& f = v->files_[r.file];
      if (r.file != last_file) {
        f.first_snippet = static_cast<int>(v->snippets_.size());
        last_file = r.file;
      }
      ++f.n_snippets;
      v->snippets_.push_back(r);
    }
  }
  v->imports_.resize(v->files_.size());
  {
    sql::Stmt s(db, "SELECT file_id, line, scope_ord, module, level, name, alias, star, conditional FROM imports");
    while (s.step()) {
      Import im;
      int f = file_position(file_index, s.i64(0), db_path, "imports");
      im.line = s.i32(1);
      im.scope = s.i32(2);
      im.module = s.str(3);
      im.level = s.i32(4);
      im.name = s.str(5);
      im.alias = s.str(6);
      im.star = s.i32(7) != 0;
      im.conditional = s.i32(8) != 0;
      v->imports_[f].push_back(std::move(im));
    }
    for (auto& ims : v->imports_)
      // Stable: imports of one line keep their extraction (row) order, as in the image of a full build.
      std::stable_sort(ims.begin(), ims.end(), [](const Import& a, const Import& b) { return a.line < b.line; });
  }
  v->refs_.resize(v->files_.size());
  v->contents_.resize(v->files_.size());
  if (!v->complete_)
    log_warn(
        "the index at '{}' is incomplete (an indexing run was interrupted); results cover the files indexed so far. "
        "Run `repoctx index` again to finish it.",
        db_path);
  return v;
}

// The entities of every file, in file order, each file's in its extraction order (parents first).
void RepoView::load_entities(const std::unordered_map<int64_t, int>& file_index) {
  sql::Stmt s(*db_,
              "SELECT e.id, e.file_id, e.ord, e.parent_ord, e.name, e.qualname, e.kind, e.start_line, e.end_line, "
              "e.decorated_start_line, e.header_end_line, e.doc_start_line, e.doc_end_line, e.body_start_line, "
              "e.body_end_line, e.start_byte, e.end_byte, e.body_start_byte, e.signature, e.docstring, "
              "e.decorators, e.bases, e.params, e.is_async, e.doc_len FROM entities e "
              "JOIN files f ON f.id = e.file_id ORDER BY f.path, e.ord");
  int last_file = -1;
  while (s.step()) {
    EntityRec e;
    e.id = s.i64(0);
    e.file = file_position(file_index, s.i64(1), db_path_, "entities");
    e.ord = s.i32(2);
    e.parent = s.i32(3);
    e.name = s.str(4);
    e.qualname = s.str(5);
    e.kind = kind_from_name(s.str(6)).value_or(EntityKind::function);
    e.start_line = s.i32(7);
    e.end_line = s.i32(8);
    e.decorated_start_line = s.i32(9);
    e.header_end_line = s.i32(10);
    e.doc_start_line = s.i32(11);
    e.doc_end_line = s.i32(12);
    e.body_start_line = s.i32(13);
    e.body_end_line = s.i32(14);
    e.start_byte = static_cast<uint32_t>(s.i64(15));
    e.end_byte = static_cast<uint32_t>(s.i64(16));
    e.body_start_byte = static_cast<uint32_t>(s.i64(17));
    e.signature = s.str(18);
    e.docstring = s.str(19);
    e.decorators = decode_strings(s.str(20));
    e.bases = decode_strings(s.str(21));
    e.params = decode_params(s.str(22));
    e.is_async = s.i32(23) != 0;
    e.doc_len = static_cast<uint32_t>(s.i64(24));
    int idx = static_cast<int>(entities_.size());
    FileRec& f = files_[e.file];
    if (e.file != last_file) {
      f.first_entity = idx;
      last_file = e.file;
    }
    if (e.ord != f.n_entities || e.parent < -1 || e.parent >= e.ord)
      throw Error(ExitCode::bad_input, "the index '" + db_path_ + "' is damaged (entity " + std::to_string(e.ord) +
                                           " of '" + f.path + "' is out of order); " + rebuild_hint(db_path_));
    ++f.n_entities;
    e.parent_index = e.parent >= 0 ? f.first_entity + e.parent : -1;
    entities_.push_back(std::move(e));
  }
}

void RepoView::index_files() {
  for (size_t i = 0; i < files_.size(); ++i) {
    const FileRec& f = files_[i];
    by_path_[f.path] = static_cast<int>(i);
    if (f.module.empty()) continue;
    // The first file of a module (Java: of the package); of "lib/a.js" and "lib/a.cjs", both module lib/a, the
    // one Node or TypeScript loads for "./a".
    auto [it, added] = by_module_.emplace(f.module, static_cast<int>(i));
    if (!added && is_javascript_family(f.language) &&
        javascript_extension_rank(f.path) < javascript_extension_rank(files_[it->second].path))
      it->second = static_cast<int>(i);
    files_by_module_[f.module].push_back(static_cast<int>(i));
  }
  if (snippet_lines_ <= 0) snippet_lines_ = 15;  // indexes made before the value was stored: the default
}

std::optional<int> RepoView::file_by_path(const std::string& path) const {
  auto it = by_path_.find(path);
  if (it == by_path_.end()) return std::nullopt;
  return it->second;
}

std::optional<int> RepoView::file_by_module(const std::string& module) const {
  auto it = by_module_.find(module);
  if (it == by_module_.end()) return std::nullopt;
  return it->second;
}

const std::vector<int>& RepoView::files_in_module(const std::string& module) const {
  static const std::vector<int> none;
  auto it = files_by_module_.find(module);
  return it == files_by_module_.end() ? none : it->second;
}

std::vector<int> RepoView::find_entities(int file, const std::string& qualname) const {
  std::vector<int> out;
  const FileRec& f = files_[file];
  for (int i = f.first_entity; i < f.first_entity + f.n_entities; ++i)
    if (entities_[i].qualname == qualname) out.push_back(i);
  return out;
}

std::vector<int> RepoView::entities_named(const std::string& name) const {
  std::call_once(by_name_once_, [this] {
    by_name_.reserve(entities_.size());
    for (size_t i = 0; i < entities_.size(); ++i) by_name_[entities_[i].name].push_back(static_cast<int>(i));
  });
  auto it = by_name_.find(std::string_view(name));
  return it == by_name_.end() ? std::vector<int>{} : it->second;
}

const std::vector<Reference>& RepoView::references(int file) const {
  std::lock_guard lk(mu_);
  auto& slot = refs_[file];
  if (!slot) {
    sql::Stmt s(*db_, "SELECT data FROM refs WHERE file_id=?");
    s.bind(1, files_[file].id);
    slot = std::make_unique<std::vector<Reference>>(s.step() ? decode_references(s.blob(0)) : std::vector<Reference>{});
  }
  return *slot;
}

const std::string& RepoView::content(int file) const {
  std::lock_guard lk(mu_);
  auto& slot = contents_[file];
  if (!slot) {
    sql::Stmt s(*db_, "SELECT content FROM files WHERE id=?");
    s.bind(1, files_[file].id);
    slot = std::make_unique<std::string>(s.step() ? std::string(s.blob(0)) : std::string());
  }
  return *slot;
}

void RepoView::load_all_terms() const {
  std::lock_guard lk(mu_);
  if (terms_loaded_) return;
  if (image_) {  // file by file: vectors already handed out stay where they are
    for (size_t f = 0; f < files_.size(); ++f) load_file_terms(static_cast<int>(f));
    terms_loaded_ = true;
    return;
  }
  entity_terms_.assign(entities_.size(), {});
  snippet_terms_.assign(snippets_.size(), {});
  std::unordered_map<int64_t, int> fidx;
  for (size_t i = 0; i < files_.size(); ++i) fidx[files_[i].id] = static_cast<int>(i);
  {
    sql::Stmt s(*db_, "SELECT file_id, ord, doc_len, terms FROM entities");
    while (s.step()) {
      const FileRec& f = files_[file_position(fidx, s.i64(0), db_path_, "entities")];
      if (s.i32(1) < 0 || s.i32(1) >= f.n_entities)
        throw Error(ExitCode::bad_input, "the index '" + db_path_ + "' is damaged (entity rows changed under it); " +
                                             rebuild_hint(db_path_));
      entity_terms_[f.first_entity + s.i32(1)] = TermVec::deserialize(s.blob(3), static_cast<uint32_t>(s.i64(2)));
    }
  }
  {
    sql::Stmt s(*db_, "SELECT file_id, ord, doc_len, terms FROM snippets");
    while (s.step()) {
      const FileRec& f = files_[file_position(fidx, s.i64(0), db_path_, "snippets")];
      if (s.i32(1) < 0 || s.i32(1) >= f.n_snippets)
        throw Error(ExitCode::bad_input, "the index '" + db_path_ + "' is damaged (snippet rows changed under it); " +
                                             rebuild_hint(db_path_));
      snippet_terms_[f.first_snippet + s.i32(1)] = TermVec::deserialize(s.blob(3), static_cast<uint32_t>(s.i64(2)));
    }
  }
  terms_loaded_ = true;
}

const TermVec& RepoView::entity_terms(int entity) const {
  if (image_) {
    std::lock_guard lk(mu_);
    load_file_terms(entities_[entity].file);
    return entity_terms_[entity];
  }
  load_all_terms();
  return entity_terms_[entity];
}

const TermVec& RepoView::snippet_terms(int snippet) const {
  if (image_) {
    std::lock_guard lk(mu_);
    load_file_terms(snippets_[snippet].file);
    return snippet_terms_[snippet];
  }
  load_all_terms();
  return snippet_terms_[snippet];
}

bool RepoView::is_within(int e, int outer) const {
  for (int cur = e; cur >= 0; cur = entities_[cur].parent_index)
    if (cur == outer) return true;
  return false;
}

bool entity_before(const RepoView& v, int a, int b) {
  const auto& ea = v.entities()[a];
  const auto& eb = v.entities()[b];
  if (ea.file != eb.file) return v.files()[ea.file].path < v.files()[eb.file].path;
  if (ea.start_line != eb.start_line) return ea.start_line < eb.start_line;
  return ea.qualname < eb.qualname;
}

}  // namespace repoctx
