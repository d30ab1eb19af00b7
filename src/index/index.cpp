#include "index/index.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <csignal>
#include <deque>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <optional>
#include <thread>
#include <unordered_map>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "index/full_image.h"
#include "index/location.h"
#include "index/query_image.h"
#include "index/schema.h"
#include "index/store.h"
#include "repo/c/includes.h"
#include "repo/documents.h"
#include "repo/go/packages.h"
#include "repo/javascript/manifests.h"
#include "repo/javascript/modules.h"
#include "repo/modules.h"
#include "repo/parser.h"
#include "repo/rust/crates.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/paths.h"
#include "util/progress.h"
#include "util/sqlite.h"
#include "util/text.h"

namespace fs = std::filesystem;

namespace repoctx {

std::string default_index_path(const std::string& repo) {
  std::error_code ec;
  fs::path root = fs::weakly_canonical(fs::absolute(repo, ec), ec);
  if (fs::exists(root / ".git", ec) || fs::exists(root / ".repoctx", ec))
    return (root / ".repoctx" / "index.db").string();
  std::string base;
  if (const char* d = std::getenv("REPOCTX_INDEX_DIR"); d && *d)
    base = d;
  else
    base = user_cache_dir() + "/indexes";
  std::string name = root.filename().string();
  return base + "/" + name + "-" + content_hash(root.string()).substr(0, 12) + "/index.db";
}

namespace {

struct ExistingFile {
  int64_t id;
  std::string hash;
  int64_t size, mtime_ns;
  std::string module;
};

struct FileResult {
  size_t walk_index = 0;
  bool failed = false;
  std::string error;  // read failure
  bool content_unchanged = false;
  std::string content, hash;
  ParsedFile pf;
  std::vector<TermVec> entity_terms;
  std::vector<SnippetSpan> snippets;
  std::vector<TermVec> snippet_terms;
  std::string refs_blob;
  bool utf8 = true;
  size_t shortened = 0;  // entities scored by their signature blocks (the document budget ran out)
};

bool read_file(const std::string& path, std::string& out, std::string& err) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    err = std::strerror(errno);
    return false;
  }
  in.seekg(0, std::ios::end);
  auto size = in.tellg();
  if (size < 0) {
    err = "cannot determine size";
    return false;
  }
  in.seekg(0);
  out.resize(static_cast<size_t>(size));
  in.read(out.data(), size);
  if (in.gcount() != size) {
    err = "short read";
    return false;
  }
  return true;
}

// A bounded queue between the parser threads and the single SQLite writer.
template <class T>
class Channel {
 public:
  explicit Channel(size_t cap) : cap_(cap) {}
  void push(T v) {
    std::unique_lock lk(mu_);
    not_full_.wait(lk, [&] { return q_.size() < cap_ || closed_; });
    q_.push_back(std::move(v));
    not_empty_.notify_one();
  }
  std::optional<T> pop() {
    std::unique_lock lk(mu_);
    not_empty_.wait(lk, [&] { return !q_.empty() || producers_ == 0 || closed_; });
    if (q_.empty()) return std::nullopt;
    T v = std::move(q_.front());
    q_.pop_front();
    not_full_.notify_one();
    return v;
  }
  void set_producers(int n) {
    std::lock_guard lk(mu_);
    producers_ = n;
  }
  void producer_done() {
    std::lock_guard lk(mu_);
    --producers_;
    not_empty_.notify_all();
  }
  void close() {
    std::lock_guard lk(mu_);
    closed_ = true;
    not_full_.notify_all();
    not_empty_.notify_all();
  }

 private:
  std::mutex mu_;
  std::condition_variable not_full_, not_empty_;
  std::deque<T> q_;
  size_t cap_;
  int producers_ = 0;
  bool closed_ = false;
};

// ---------------------------------------------------------------------------------------------- walk
// What one run has to do, decided from the walk and the rows already in the index.
struct RunPlan {
  fs::path root;
  bool force = false;
  WalkResult walk;
  std::unordered_map<std::string, ExistingFile> existing;
  std::unordered_map<std::string, std::string> modules;  // rel -> dotted module name
  std::vector<size_t> todo;                              // walk indices to (re)parse, largest first
  std::vector<int64_t> removed;                          // file ids no longer in the tree
  std::vector<std::pair<int64_t, std::string>> module_updates;
  std::string javascript_resolution;  // repo/javascript/manifests.h, as JSON ("" without JavaScript files)
  std::string c_include_dirs;         // repo/c/compile_commands.h, as JSON ("" without a compilation database)
  std::string c_include_stamp;        // compile_commands_stamp of the database c_include_dirs was read from
  bool resolution_changed = false;    // it differs from the stored one: resolved imports change

  std::string module_of(const WalkedFile& f) const {
    auto it = modules.find(f.rel);
    return it == modules.end() ? std::string() : it->second;
  }
};

// Settings recorded in the index that, changed, make every file stale.
// The settings a user chooses for an index (which files are sources, the snippet length), as stored in its
// meta table.
nlohmann::json settings_json(const IndexOptions& o) {
  return {{"max_file_bytes", o.walk.max_file_bytes},
          {"follow_symlinks", o.walk.follow_symlinks},
          {"skip_vendored", o.walk.skip_vendored},
          {"skip_generated", o.walk.skip_generated},
          {"snippet_lines", o.snippet_lines}};
}

// "--keep-vendored yes -> no, --snippet-lines 20 -> 15": the settings that differ, as the flags that set them.
std::string settings_change(const nlohmann::json& from, const nlohmann::json& to) {
  struct Flag {
    const char* key;
    const char* flag;
    bool inverted;  // the flag sets the opposite of the stored value
  };
  std::string out;
  for (const Flag& f :
       {Flag{"follow_symlinks", "--follow-symlinks", false}, Flag{"skip_vendored", "--keep-vendored", true},
        Flag{"skip_generated", "--keep-generated", true}, Flag{"max_file_bytes", "--max-file-mb", false},
        Flag{"snippet_lines", "--snippet-lines", false}}) {
    const nlohmann::json a = from.value(f.key, nlohmann::json()), b = to.value(f.key, nlohmann::json());
    if (a == b) continue;
    auto shown = [&](const nlohmann::json& v) -> std::string {
      if (v.is_boolean()) return v.get<bool>() != f.inverted ? "yes" : "no";
      if (std::string_view(f.key) == "max_file_bytes" && v.is_number())
        return fmt::format("{:g}", v.get<double>() / 1048576.0);
      return v.dump();
    };
    out += fmt::format("{}{} {} -> {}", out.empty() ? "" : ", ", f.flag, shown(a), shown(b));
  }
  return out;
}

// The options this run applies. An automatic refresh (keep_stored_settings) of an index keeps the settings
// it was built with: a query must not drop the files an `index --follow-symlinks` or `--keep-vendored`
// added, nor re-index everything for another snippet length. An explicit run applies what it was given, and
// says so when that changes the index's settings.
IndexOptions effective_settings(sql::Db& db, const IndexOptions& requested) {
  const std::string text = meta_get(db, "settings");
  const nlohmann::json stored = nlohmann::json::parse(text, nullptr, false);
  if (text.empty() || !stored.is_object()) return requested;
  const nlohmann::json wanted = settings_json(requested);
  if (stored == wanted) return requested;
  if (!requested.keep_stored_settings) {
    log_info("this run changes the index's settings ({}); the refreshes before queries keep them from now on",
             settings_change(stored, wanted));
    return requested;
  }
  IndexOptions o = requested;
  try {
    o.walk.max_file_bytes = stored.value("max_file_bytes", o.walk.max_file_bytes);
    o.walk.follow_symlinks = stored.value("follow_symlinks", o.walk.follow_symlinks);
    o.walk.skip_vendored = stored.value("skip_vendored", o.walk.skip_vendored);
    o.walk.skip_generated = stored.value("skip_generated", o.walk.skip_generated);
    o.snippet_lines = stored.value("snippet_lines", o.snippet_lines);
  } catch (const nlohmann::json::exception&) {  // a damaged value: the settings as requested
    return requested;
  }
  if (o.snippet_lines <= 0) o.snippet_lines = requested.snippet_lines;
  log_debug("refresh with the index's settings {}", stored.dump());
  return o;
}

bool settings_changed(sql::Db& db, const IndexOptions& opt) {
  std::string stored_L = meta_get(db, "snippet_lines");
  if (!stored_L.empty() && stored_L != std::to_string(opt.snippet_lines)) {
    log_info("snippet length changed ({} -> {}): re-indexing every file", stored_L, opt.snippet_lines);
    return true;
  }
  std::string stored_ext = meta_get(db, "extractor");
  if (!stored_ext.empty() && stored_ext != kExtractorVersion) {
    log_info("index built by extractor {} (now {}): re-indexing every file", stored_ext, kExtractorVersion);
    return true;
  }
  return false;
}

RunPlan plan_run(sql::Db& db, const std::string& repo, const IndexOptions& opt, IndexStats& st) {
  RunPlan plan;
  std::error_code ec;
  plan.root = fs::canonical(fs::absolute(repo, ec), ec);
  std::string stored_root = meta_get(db, "root");
  if (!stored_root.empty() && stored_root != plan.root.string())
    throw Error(ExitCode::bad_input, "index '" + st.db_path + "' belongs to '" + stored_root + "', not '" +
                                         plan.root.string() + "'; pass another --db or delete that index");
  plan.force = opt.force || settings_changed(db, opt);
  {
    sql::Stmt s(db, "SELECT id, path, hash, size, mtime_ns, module FROM files");
    while (s.step()) plan.existing.emplace(s.str(1), ExistingFile{s.i64(0), s.str(2), s.i64(3), s.i64(4), s.str(5)});
  }
  WalkOptions wopt = opt.walk;
  // Files checked at an earlier run with the same rules need not be opened by the walk again.
  if (!plan.force && meta_get(db, "walk") == opt.walk.fingerprint())
    wopt.known_unchanged = [&](const std::string& rel, uint64_t size, int64_t mtime) {
      auto it = plan.existing.find(rel);
      return it != plan.existing.end() && it->second.size == static_cast<int64_t>(size) && it->second.mtime_ns == mtime;
    };
  plan.walk = walk_repository(repo, wopt);
  std::vector<std::string> rels;
  rels.reserve(plan.walk.files.size());
  for (const auto& f : plan.walk.files) rels.push_back(f.rel);
  plan.modules = python_module_names(rels, plan.root.filename().string());
  for (auto& [rel, path] : go_package_paths(rels, plan.root.string(), plan.root.filename().string()))
    plan.modules[rel] = std::move(path);
  for (auto& [rel, module] : javascript_module_names(rels)) plan.modules[rel] = std::move(module);
  for (auto& [rel, module] : rust_module_names(rels, plan.root.string(), plan.root.filename().string()))
    plan.modules[rel] = std::move(module);
  for (auto& [rel, module] : c_module_names(rels)) plan.modules[rel] = std::move(module);
  JavascriptResolution js = read_javascript_resolution(plan.root.string(), rels);
  if (!js.empty()) plan.javascript_resolution = js.to_json();
  // The compilation database is read again only when it changed (a one-file re-index must not re-parse
  // a database of thousands of entries).
  plan.c_include_stamp = compile_commands_stamp(plan.root.string());
  if (!plan.force && !plan.c_include_stamp.empty() && plan.c_include_stamp == meta_get(db, "c_include_stamp"))
    plan.c_include_dirs = meta_get(db, "c_include_dirs");
  else
    plan.c_include_dirs = read_compile_commands(plan.root.string()).to_json();
  plan.resolution_changed = plan.javascript_resolution != meta_get(db, "javascript_resolution") ||
                            plan.c_include_dirs != meta_get(db, "c_include_dirs");
  st.files_seen = plan.walk.files.size();
  st.skipped = plan.walk.skipped.size();

  std::unordered_map<std::string, size_t> walked;
  for (size_t i = 0; i < plan.walk.files.size(); ++i) walked.emplace(plan.walk.files[i].rel, i);
  for (const auto& [path, ef] : plan.existing)
    if (!walked.count(path)) plan.removed.push_back(ef.id);
  for (size_t i = 0; i < plan.walk.files.size(); ++i) {
    const auto& f = plan.walk.files[i];
    auto it = plan.existing.find(f.rel);
    if (!plan.force && it != plan.existing.end() && it->second.size == static_cast<int64_t>(f.size) &&
        it->second.mtime_ns == f.mtime_ns) {
      ++st.unchanged;
      // A Python file's module follows its path (a new __init__.py moves it), a Go file's its folder and
      // go.mod; a Java file's is its package declaration, which only a re-parse changes.
      if (module_follows_path(f.language) && it->second.module != plan.module_of(f))
        plan.module_updates.emplace_back(it->second.id, plan.module_of(f));
      continue;
    }
    plan.todo.push_back(i);
  }
  // Largest files first: one 1.5 MB test file parsed last would leave the other core idle.
  std::stable_sort(plan.todo.begin(), plan.todo.end(),
                   [&](size_t a, size_t b) { return plan.walk.files[a].size > plan.walk.files[b].size; });
  return plan;
}

// The walk's facts and the removals, before any file is parsed.
void record_walk(sql::Db& db, const RunPlan& plan, const IndexOptions& opt, IndexStats& st) {
  meta_set(db, "root", plan.root.string());
  meta_set(db, "settings", settings_json(opt).dump());
  nlohmann::json sk = nlohmann::json::array();
  for (const auto& f : plan.walk.skipped) sk.push_back({f.rel, f.reason});
  meta_set(db, "skipped", sk.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  meta_set(db, "snippet_lines", std::to_string(opt.snippet_lines));
  meta_set(db, "extractor", kExtractorVersion);
  meta_set(db, "walk", opt.walk.fingerprint());
  meta_set(db, "javascript_resolution", plan.javascript_resolution);
  meta_set(db, "c_include_dirs", plan.c_include_dirs);
  meta_set(db, "c_include_stamp", plan.c_include_stamp);
  if (plan.removed.empty() && plan.module_updates.empty()) return;
  sql::Transaction tx(db);
  sql::Stmt del(db, "DELETE FROM files WHERE id=?");
  for (int64_t id : plan.removed) del.bind(1, id).exec();
  sql::Stmt upd(db, "UPDATE files SET module=? WHERE id=?");
  for (auto& [id, m] : plan.module_updates) upd.bind(1, m).bind(2, id).exec();
  tx.commit();
  st.removed = plan.removed.size();
}

// --------------------------------------------------------------------------------------------- parse
// One file's work on a parser thread: read, hash, parse, documents, snippets, references. Every step is
// linear in the file; false when an interrupt arrived or the run stopped meanwhile (the result is
// incomplete: dropped).
bool parse_file(const WalkedFile& f, const RunPlan& plan, const IndexOptions& opt, SourceParser& parser,
                const std::atomic<bool>& stop, FileResult& r) {
  auto stopped = [&] { return interrupted() || stop.load(std::memory_order_relaxed); };
  if (!read_file(f.abs, r.content, r.error)) {
    r.failed = true;
    return true;
  }
  r.hash = content_hash(r.content);
  auto it = plan.existing.find(f.rel);
  if (!plan.force && it != plan.existing.end() && it->second.hash == r.hash) {
    r.content_unchanged = true;
    r.content.clear();
    return true;
  }
  r.utf8 = is_valid_utf8(r.content);
  r.pf = parser.parse(f.rel, plan.module_of(f), r.content, f.language);
  if (stopped()) return false;
  auto starts = line_starts(r.content);
  EntityTerms et = entity_term_vectors(r.pf, r.content, starts);
  if (stopped()) return false;
  r.entity_terms = std::move(et.terms);
  r.shortened = et.shortened;
  r.snippets = split_aggregate(r.content, opt.snippet_lines);
  r.snippet_terms.reserve(r.snippets.size());
  for (size_t i = 0; i < r.snippets.size(); ++i) {
    if ((i & 1023) == 0 && stopped()) return false;
    const auto& sp = r.snippets[i];
    r.snippet_terms.push_back(term_vector(line_range(r.content, starts, sp.start_line, sp.end_line)));
  }
  r.refs_blob = encode_references(r.pf.references);
  if (r.shortened > 0) {
    r.pf.errors.push_back({1, r.pf.line_count,
                           fmt::format("the documents of {} entities were cut to their signatures: the file's "
                                       "documents would hold more than {} times its size",
                                       r.shortened, kEntityDocumentBudget),
                           true});
  }
  return true;
}

// -------------------------------------------------------------------------------------------- write
// The single SQLite writer: a file's old rows are replaced in the same transaction as its new ones, and
// each batch of files is one transaction (a killed run leaves whole files only).
class IndexWriter {
 public:
  // `collect`: the records of every written file are kept there for the query image (null: not kept).
  // `stop`: set by the interrupt_after_files test hook.
  IndexWriter(sql::Db& db, const RunPlan& plan, const IndexOptions& opt, IndexStats& st,
              std::vector<CollectedFile>* collect, std::atomic<bool>& stop)
      : db_(db), plan_(plan), opt_(opt), st_(st), collect_(collect), stop_(stop) {
    const char* kill_env = std::getenv("REPOCTX_DEBUG_KILL_AFTER_FILES");
    kill_after_ = kill_env ? std::strtoull(kill_env, nullptr, 10) : 0;
  }

  // The module of a file whose content did not change: a Python file's follows its path, a Java file's is
  // the package its last parse declared.
  std::string kept_module(const WalkedFile& f) const {
    auto it = plan_.existing.find(f.rel);
    if (module_follows_path(f.language) || it == plan_.existing.end()) return plan_.module_of(f);
    return it->second.module;
  }

  void add(FileResult& r) {
    const auto& f = plan_.walk.files[r.walk_index];
    if (r.failed) {
      log_warn("cannot read '{}': {} (skipped; its previous index entry, if any, is kept)", f.rel, r.error);
      ++st_.skipped;
      if (plan_.existing.count(f.rel)) collect_ = nullptr;  // a kept row the collection would miss
      return;
    }
    if (!tx_) tx_.emplace(db_);
    if (r.content_unchanged) {
      collect_ = nullptr;  // a row this run does not write
      touch_file_.bind(1, static_cast<int64_t>(f.size))
          .bind(2, f.mtime_ns)
          .bind(3, kept_module(f))
          .bind(4, f.rel)
          .exec();
      ++st_.touched;
    } else {
      warn_about(f, r);
      write_file(f, r);
    }
    if (++in_batch_ >= opt_.batch_files) commit_batch();
  }

  void commit_batch() {
    if (!tx_) return;
    tx_->commit();
    tx_.reset();
    committed_ += in_batch_;
    in_batch_ = 0;
    if (kill_after_ && committed_ >= kill_after_) {
      // Test hook: die exactly like `kill -9` would, with no cleanup, to prove crash safety.
      std::raise(SIGKILL);
    }
    if (opt_.interrupt_after_files && committed_ >= opt_.interrupt_after_files) stop_ = true;
  }

  // Whether the collection holds every file of the index (no row was kept from an earlier run).
  bool collected_all() const { return collect_ != nullptr; }

 private:
  void warn_about(const WalkedFile& f, const FileResult& r) {
    const ParsedFile& pf = r.pf;
    std::string partial = pf.partial_reason();
    if (!partial.empty()) {
      ++st_.partial;
      log_warn("'{}' is partly indexed: {} (listed by `repoctx files --skipped`)", f.rel, partial);
    }
    size_t syntax = 0;
    for (const auto& e : pf.errors) syntax += e.partial ? 0 : 1;
    if (syntax > 0) {
      ++st_.files_with_errors;
      if (warned_errors_++ < 10) {
        const ParseError& first =
            *std::find_if(pf.errors.begin(), pf.errors.end(), [](const auto& e) { return !e.partial; });
        log_warn("'{}': syntax errors at line {}{} ({} region{}); kept the {} definitions tree-sitter recovered", f.rel,
                 first.start_line, syntax > 1 ? " and elsewhere" : "", syntax, syntax == 1 ? "" : "s",
                 pf.entities.size());
      }
    }
    if (!r.utf8 && warned_utf8_++ < 10)
      log_warn("'{}' is not valid UTF-8; indexed as bytes (output shows invalid bytes as U+FFFD)", f.rel);
  }

  void write_file(const WalkedFile& f, FileResult& r) {
    const ParsedFile& pf = r.pf;
    nlohmann::json errs = nlohmann::json::array();
    for (const auto& e : pf.errors) {
      nlohmann::json row = {e.start_line, e.end_line, e.message};
      if (e.partial) row.push_back("partial");
      errs.push_back(std::move(row));
    }
    del_file_.bind(1, f.rel).exec();
    ins_file_.bind(1, f.rel)
        .bind(2, pf.module)
        .bind(3, pf.package)
        .bind(4, language_name(pf.language))
        .bind(5, r.hash)
        .bind(6, static_cast<int64_t>(f.size))
        .bind(7, f.mtime_ns)
        .bind(8, pf.line_count)
        .bind(9, errs.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace))
        .bind_blob(10, r.content.data(), r.content.size())
        .exec();
    int64_t fid = db_.last_insert_id();
    std::vector<int64_t> entity_ids = write_entities(fid, r);
    for (const auto& im : pf.imports)
      ins_imp_.bind(1, fid)
          .bind(2, im.line)
          .bind(3, im.scope)
          .bind(4, im.module)
          .bind(5, im.level)
          .bind(6, im.name)
          .bind(7, im.alias)
          .bind(8, im.star ? 1 : 0)
          .bind(9, im.conditional ? 1 : 0)
          .exec();
    ins_refs_.bind(1, fid)
        .bind(2, static_cast<int64_t>(pf.references.size()))
        .bind_blob(3, r.refs_blob.data(), r.refs_blob.size())
        .exec();
    for (size_t i = 0; i < r.snippets.size(); ++i) {
      std::string terms = r.snippet_terms[i].serialize();
      ins_snip_.bind(1, fid)
          .bind(2, static_cast<int64_t>(i))
          .bind(3, r.snippets[i].start_line)
          .bind(4, r.snippets[i].end_line)
          .bind(5, static_cast<int64_t>(r.snippet_terms[i].length))
          .bind_blob(6, terms.data(), terms.size())
          .exec();
    }
    ++st_.parsed;
    st_.bytes_parsed += f.size;
    st_.entities += pf.entities.size();
    st_.references += pf.references.size();
    st_.snippets += r.snippets.size();
    if (collect_) collect(fid, entity_ids, r);
  }

  // The records just written, as a RepoView would read them back (strings as stored), for the image. The
  // file's result is consumed.
  void collect(int64_t fid, const std::vector<int64_t>& entity_ids, FileResult& r) {
    ParsedFile& pf = r.pf;
    CollectedFile cf;
    cf.file.id = fid;
    cf.file.path = plan_.walk.files[r.walk_index].rel;
    cf.file.module = pf.module;
    cf.file.package = pf.package;
    cf.file.hash = r.hash;
    cf.file.language = pf.language;
    cf.file.line_count = pf.line_count;
    for (const auto& e : pf.errors) cf.file.n_errors += e.partial ? 0 : 1;
    cf.entities.reserve(pf.entities.size());
    for (size_t i = 0; i < pf.entities.size(); ++i) {
      EntityRec e;
      static_cast<Entity&>(e) = std::move(pf.entities[i]);
      e.signature = sanitize_utf8(e.signature);
      e.docstring = sanitize_utf8(e.docstring);
      e.id = entity_ids[i];
      e.ord = static_cast<int>(i);
      e.doc_len = r.entity_terms[i].length;
      cf.entities.push_back(std::move(e));
    }
    for (size_t i = 0; i < r.snippets.size(); ++i)
      cf.snippets.push_back(
          {0, static_cast<int>(i), r.snippets[i].start_line, r.snippets[i].end_line, r.snippet_terms[i].length});
    cf.entity_terms = std::move(r.entity_terms);
    cf.snippet_terms = std::move(r.snippet_terms);
    cf.imports = std::move(pf.imports);
    collect_->push_back(std::move(cf));
  }

  std::vector<int64_t> write_entities(int64_t fid, const FileResult& r) {
    const ParsedFile& pf = r.pf;
    std::vector<int64_t> ids;
    ids.reserve(pf.entities.size());
    for (size_t i = 0; i < pf.entities.size(); ++i) {
      const Entity& e = pf.entities[i];
      std::string terms = r.entity_terms[i].serialize();
      ins_ent_.bind(1, fid)
          .bind(2, static_cast<int64_t>(i))
          .bind(3, e.parent)
          .bind(4, e.name)
          .bind(5, e.qualname)
          .bind(6, kind_name(e.kind))
          .bind(7, e.start_line)
          .bind(8, e.end_line)
          .bind(9, e.decorated_start_line)
          .bind(10, e.header_end_line)
          .bind(11, e.doc_start_line)
          .bind(12, e.doc_end_line)
          .bind(13, e.body_start_line)
          .bind(14, e.body_end_line)
          .bind(15, static_cast<int64_t>(e.start_byte))
          .bind(16, static_cast<int64_t>(e.end_byte))
          .bind(17, static_cast<int64_t>(e.body_start_byte))
          .bind(18, sanitize_utf8(e.signature))
          .bind(19, sanitize_utf8(e.docstring))
          .bind(20, encode_strings(e.decorators))
          .bind(21, encode_strings(e.bases))
          .bind(22, encode_params(e.params))
          .bind(23, e.is_async ? 1 : 0)
          .bind(24, static_cast<int64_t>(r.entity_terms[i].length))
          .bind_blob(25, terms.data(), terms.size())
          .exec();
      ids.push_back(db_.last_insert_id());
    }
    return ids;
  }

  sql::Db& db_;
  const RunPlan& plan_;
  const IndexOptions& opt_;
  IndexStats& st_;
  std::vector<CollectedFile>* collect_;
  std::atomic<bool>& stop_;
  size_t kill_after_ = 0, committed_ = 0, in_batch_ = 0, warned_errors_ = 0, warned_utf8_ = 0;
  std::optional<sql::Transaction> tx_;
  sql::Stmt del_file_{db_, "DELETE FROM files WHERE path=?"};
  sql::Stmt ins_file_{db_,
                      "INSERT INTO files(path,module,package,language,hash,size,mtime_ns,line_count,errors,content) "
                      "VALUES(?,?,?,?,?,?,?,?,?,?)"};
  sql::Stmt touch_file_{db_, "UPDATE files SET size=?, mtime_ns=?, module=? WHERE path=?"};
  sql::Stmt ins_ent_{
      db_,
      "INSERT INTO entities(file_id,ord,parent_ord,name,qualname,kind,start_line,end_line,"
      "decorated_start_line,header_end_line,doc_start_line,doc_end_line,body_start_line,body_end_line,"
      "start_byte,end_byte,body_start_byte,signature,docstring,decorators,bases,params,is_async,doc_len,terms) "
      "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)"};
  sql::Stmt ins_imp_{db_,
                     "INSERT INTO imports(file_id,line,scope_ord,module,level,name,alias,star,conditional) "
                     "VALUES(?,?,?,?,?,?,?,?,?)"};
  sql::Stmt ins_refs_{db_, "INSERT INTO refs(file_id,count,data) VALUES(?,?,?)"};
  sql::Stmt ins_snip_{db_, "INSERT INTO snippets(file_id,ord,start_line,end_line,doc_len,terms) VALUES(?,?,?,?,?,?)"};
};

// Parser threads feed the writer (this thread) through a bounded channel; returns whether every file of
// the plan was written (false: interrupted). The workers stop on the process-wide interrupt (Ctrl-C, a
// server shutting down) or on this run's own stop flag, which a failed write sets before the error goes to
// the caller: a failure ends this run only, never the process that asked for it (a server's refresh).
// With `collected` engaged, the written files' records are kept there for the query image; it is reset when
// the run turned out not to write every file of the index.
bool parse_and_write(sql::Db& db, const RunPlan& plan, const IndexOptions& opt, IndexStats& st,
                     std::optional<std::vector<CollectedFile>>& collected) {
  int nthreads = opt.threads > 0 ? opt.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  nthreads = std::min<int>(nthreads, static_cast<int>(plan.todo.size()));
  uint64_t total_bytes = 0;
  for (size_t i : plan.todo) total_bytes += plan.walk.files[i].size;
  Progress progress("indexing", plan.todo.size(), opt.progress, total_bytes);
  // Few results in flight: each holds a whole file (content, parse, term vectors).
  Channel<FileResult> chan(static_cast<size_t>(2 * nthreads + 2));
  chan.set_producers(nthreads);
  std::atomic<size_t> next{0};
  std::atomic<bool> stop{false};
  auto stopped = [&] { return interrupted() || stop.load(std::memory_order_relaxed); };
  auto worker = [&] {
    SourceParser parser;
    parser.set_stop(&stop);
    while (!stopped()) {
      size_t k = next.fetch_add(1);
      if (k >= plan.todo.size()) break;
      FileResult r;
      r.walk_index = plan.todo[k];
      if (!parse_file(plan.walk.files[r.walk_index], plan, opt, parser, stop, r)) break;
      chan.push(std::move(r));
    }
    chan.producer_done();
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < nthreads; ++i) threads.emplace_back(worker);
  auto stop_workers = [&] {
    stop = true;
    chan.close();
    for (auto& t : threads) t.join();
  };
  try {
    IndexWriter writer(db, plan, opt, st, collected ? &*collected : nullptr, stop);
    while (auto item = chan.pop()) {
      progress.add(1, plan.walk.files[item->walk_index].size);
      writer.add(*item);
      if (stopped()) break;
    }
    writer.commit_batch();
    if (!writer.collected_all()) collected.reset();
  } catch (...) {
    stop_workers();
    throw;
  }
  // Every file of the plan was written unless the run stopped before the writer had them all.
  bool whole = !stopped();
  stop_workers();
  progress.finish();
  return whole;
}

// Folds the write-ahead log into the database so readers start from a compact file. Readers holding an
// older snapshot (a query running meanwhile) must not stall the indexer: then only what they do not need
// is folded, and a later run finishes the job.
void checkpoint(sql::Db& db) {
  sqlite3_busy_timeout(db.raw(), 0);
  int rc = sqlite3_wal_checkpoint_v2(db.raw(), nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
  if (rc == SQLITE_BUSY) sqlite3_wal_checkpoint_v2(db.raw(), nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  sqlite3_busy_timeout(db.raw(), 30000);
}

// PRAGMA synchronous=OFF for the parse-and-write phase, NORMAL again afterwards (also when it throws).
class SyncOffDuringBuild {
 public:
  explicit SyncOffDuringBuild(sql::Db& db) : db_(db) { db_.exec("PRAGMA synchronous=OFF"); }
  ~SyncOffDuringBuild() {
    try {
      db_.exec("PRAGMA synchronous=NORMAL");
    } catch (...) {  // the connection is closed next anyway; NORMAL is its default
    }
  }
  SyncOffDuringBuild(const SyncOffDuringBuild&) = delete;
  SyncOffDuringBuild& operator=(const SyncOffDuringBuild&) = delete;

 private:
  sql::Db& db_;
};

double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

// The image of a finished run: from the collected records when the run wrote every file, else updated from
// the previous image (or rebuilt through SQL). Failures only warn: queries then load through SQL. A full disk
// (DiskFull) goes to the caller: the index is complete, but the user must make room.
void publish_image(sql::Db& db, const std::string& db_path, std::optional<std::vector<CollectedFile>>& collected,
                   bool full) {
  if (collected) {
    auto t0 = std::chrono::steady_clock::now();
    try {
      publish_full_image(db, db_path, *collected);
      log_debug("query image written from the run's records in {:.3f}s", since(t0));
      return;
    } catch (const DiskFull&) {
      throw;
    } catch (const std::exception& e) {
      log_debug("writing the query image from the run's records failed ({}); rebuilding it", e.what());
    }
  }
  refresh_query_image(db, db_path, true, full);
}

}  // namespace

IndexStats build_index(const std::string& repo, const IndexOptions& requested) {
  auto t0 = std::chrono::steady_clock::now();
  IndexStats st;
  std::error_code ec;
  if (!fs::is_directory(repo, ec))
    throw Error(
        ExitCode::not_found,
        "repository path '" + repo + "' does not exist or is not a directory; pass the folder that holds the sources");
  st.db_path = requested.db_path.empty() ? default_index_path(repo) : requested.db_path;
  // Checked for damage unless stamped (index/store.h): the stamp written after a complete run below
  // always follows a check that passed.
  auto db = open_index_for_writing(st.db_path, IndexOpenOptions{requested.rebuild});
  const IndexOptions opt = effective_settings(*db, requested);
  RunPlan plan = plan_run(*db, repo, opt, st);
  log_debug("walk: {} files in {:.3f}s", plan.walk.files.size(), since(t0));
  // The query image stops matching before the first change (index/query_image.h).
  const bool changing =
      !plan.todo.empty() || !plan.removed.empty() || !plan.module_updates.empty() || plan.resolution_changed;
  if (changing) invalidate_query_image(*db);
  record_walk(*db, plan, opt, st);
  if (plan.todo.empty()) {
    meta_set(*db, "complete", "1");
    refresh_query_image(*db, st.db_path, changing);
    st.complete = true;
    db.reset();  // closed: its last changes are in the file before the file is stamped
    mark_index_verified(st.db_path);
    st.seconds = since(t0);
    return st;
  }
  meta_set(*db, "complete", "0");
  // A run that rewrites every file (a new index, or --force) makes the query image from what it wrote.
  std::optional<std::vector<CollectedFile>> collected;
  if (plan.existing.empty() || plan.force) collected.emplace();
  bool whole;
  {
    // No fsync per checkpoint while the files are written: a killed process loses nothing SQLite committed
    // (the OS holds the pages), only a power loss or OS crash during the run could; the final checkpoint
    // below runs with synchronous=NORMAL again and makes the finished index durable.
    SyncOffDuringBuild sync_off(*db);
    whole = parse_and_write(*db, plan, opt, st, collected);
  }
  if (st.files_with_errors > 10)
    log_warn("{} files had syntax errors in all (list them with `repoctx files --errors`)", st.files_with_errors);
  log_debug("parse+write done at {:.3f}s", since(t0));
  st.complete = whole;
  meta_set(*db, "complete", st.complete ? "1" : "0");
  if (st.complete) publish_image(*db, st.db_path, collected, plan.force);
  if (st.complete) checkpoint(*db);
  log_debug("checkpoint done at {:.3f}s", since(t0));
  db.reset();
  if (st.complete) mark_index_verified(st.db_path);
  st.seconds = since(t0);
  return st;
}

}  // namespace repoctx
