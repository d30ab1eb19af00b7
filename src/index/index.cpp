#include "index/index.h"

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

#include <nlohmann/json.hpp>

#include "index/location.h"
#include "index/query_image.h"
#include "index/schema.h"
#include "repo/documents.h"
#include "repo/modules.h"
#include "repo/parser.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/log.h"
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
  else if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    base = std::string(x) + "/repoctx/indexes";
  else
    base = std::string(std::getenv("HOME") ? std::getenv("HOME") : "/tmp") + "/.cache/repoctx/indexes";
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

}  // namespace

IndexStats build_index(const std::string& repo, const IndexOptions& opt) {
  auto t0 = std::chrono::steady_clock::now();
  IndexStats st;
  std::error_code ec;
  if (!fs::is_directory(repo, ec))
    throw Error(
        ExitCode::not_found,
        "repository path '" + repo + "' does not exist or is not a directory; pass the folder that holds the sources");
  fs::path root = fs::canonical(fs::absolute(repo, ec), ec);
  st.db_path = opt.db_path.empty() ? default_index_path(repo) : opt.db_path;
  ensure_index_dir(st.db_path, ec);
  if (ec)
    throw Error(ExitCode::bad_input, "cannot create the index folder for '" + st.db_path + "': " + ec.message() +
                                         " (choose another with --db)");

  auto db = std::make_unique<sql::Db>(st.db_path);
  if (!is_repoctx_database(*db))
    throw Error(
        ExitCode::bad_input,
        "'" + st.db_path + "' is a database that is not a repoctx index; pass another --db (nothing was changed)");
  configure_connection(*db);
  if (!ensure_schema(*db)) {
    log_warn("index '{}' has an older schema; rebuilding it", st.db_path);
    db.reset();
    for (const char* suf : {"", "-wal", "-shm"}) fs::remove(st.db_path + suf, ec);
    db = std::make_unique<sql::Db>(st.db_path);
    configure_connection(*db);
    ensure_schema(*db);
  }
  std::string stored_root = meta_get(*db, "root");
  if (!stored_root.empty() && stored_root != root.string()) {
    throw Error(ExitCode::bad_input, "index '" + st.db_path + "' belongs to '" + stored_root + "', not '" +
                                         root.string() + "'; pass another --db or delete that index");
  }
  bool force = opt.force;
  std::string stored_L = meta_get(*db, "snippet_lines");
  if (!stored_L.empty() && stored_L != std::to_string(opt.snippet_lines)) {
    log_info("snippet length changed ({} -> {}): re-indexing every file", stored_L, opt.snippet_lines);
    force = true;
  }
  std::string stored_ext = meta_get(*db, "extractor");
  if (!stored_ext.empty() && stored_ext != kExtractorVersion) {
    log_info("index built by extractor {} (now {}): re-indexing every file", stored_ext, kExtractorVersion);
    force = true;
  }

  std::unordered_map<std::string, ExistingFile> existing;
  {
    sql::Stmt s(*db, "SELECT id, path, hash, size, mtime_ns, module FROM files");
    while (s.step()) existing.emplace(s.str(1), ExistingFile{s.i64(0), s.str(2), s.i64(3), s.i64(4), s.str(5)});
  }
  WalkOptions wopt = opt.walk;
  // Files checked at an earlier run with the same rules need not be opened by the walk again.
  if (!force && meta_get(*db, "walk") == opt.walk.fingerprint())
    wopt.known_unchanged = [&](const std::string& rel, uint64_t size, int64_t mtime) {
      auto it = existing.find(rel);
      return it != existing.end() && it->second.size == static_cast<int64_t>(size) && it->second.mtime_ns == mtime;
    };
  WalkResult walk = walk_repository(repo, wopt);

  std::vector<std::string> rels;
  rels.reserve(walk.files.size());
  for (const auto& f : walk.files) rels.push_back(f.rel);
  auto modules = python_module_names(rels, root.filename().string());
  auto module_of = [&](const WalkedFile& f) -> std::string {
    auto it = modules.find(f.rel);
    return it == modules.end() ? std::string() : it->second;
  };

  st.files_seen = walk.files.size();
  st.skipped = walk.skipped.size();

  // Files that disappeared from the tree.
  std::unordered_map<std::string, size_t> walked;
  for (size_t i = 0; i < walk.files.size(); ++i) walked.emplace(walk.files[i].rel, i);
  std::vector<int64_t> removed;
  for (const auto& [path, ef] : existing)
    if (!walked.count(path)) removed.push_back(ef.id);

  log_debug("walk: {} files in {:.3f}s", walk.files.size(),
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  std::vector<size_t> todo;
  std::vector<std::pair<int64_t, std::string>> module_updates;
  for (size_t i = 0; i < walk.files.size(); ++i) {
    const auto& f = walk.files[i];
    auto it = existing.find(f.rel);
    if (!force && it != existing.end() && it->second.size == static_cast<int64_t>(f.size) &&
        it->second.mtime_ns == f.mtime_ns) {
      ++st.unchanged;
      if (it->second.module != module_of(f)) module_updates.emplace_back(it->second.id, module_of(f));
      continue;
    }
    todo.push_back(i);
  }

  // The query image stops matching before the first change (index/query_image.h).
  const bool changing = !todo.empty() || !removed.empty() || !module_updates.empty();
  if (changing) invalidate_query_image(*db);
  meta_set(*db, "root", root.string());
  {
    nlohmann::json sk = nlohmann::json::array();
    for (const auto& f : walk.skipped) sk.push_back({f.rel, f.reason});
    meta_set(*db, "skipped", sk.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
  }
  meta_set(*db, "snippet_lines", std::to_string(opt.snippet_lines));
  meta_set(*db, "extractor", kExtractorVersion);
  meta_set(*db, "walk", opt.walk.fingerprint());
  if (!removed.empty() || !module_updates.empty()) {
    sql::Transaction tx(*db);
    sql::Stmt del(*db, "DELETE FROM files WHERE id=?");
    for (int64_t id : removed) del.bind(1, id).exec();
    sql::Stmt upd(*db, "UPDATE files SET module=? WHERE id=?");
    for (auto& [id, m] : module_updates) upd.bind(1, m).bind(2, id).exec();
    tx.commit();
    st.removed = removed.size();
  }
  if (todo.empty()) {
    meta_set(*db, "complete", "1");
    refresh_query_image(*db, st.db_path, changing);
    st.complete = true;
    st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return st;
  }
  meta_set(*db, "complete", "0");

  // Largest files first: one 1.5 MB test file parsed last would leave the other core idle.
  std::stable_sort(todo.begin(), todo.end(),
                   [&](size_t a, size_t b) { return walk.files[a].size > walk.files[b].size; });
  int nthreads = opt.threads > 0 ? opt.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  nthreads = std::min<int>(nthreads, static_cast<int>(todo.size()));
  uint64_t total_bytes = 0;
  for (size_t i : todo) total_bytes += walk.files[i].size;
  Progress progress("indexing", todo.size(), opt.progress, total_bytes);

  Channel<FileResult> chan(256);
  chan.set_producers(nthreads);
  std::atomic<size_t> next{0};
  auto worker = [&] {
    SourceParser parser;
    for (;;) {
      if (g_interrupted) break;
      size_t k = next.fetch_add(1);
      if (k >= todo.size()) break;
      size_t wi = todo[k];
      const auto& f = walk.files[wi];
      FileResult r;
      r.walk_index = wi;
      if (!read_file(f.abs, r.content, r.error)) {
        r.failed = true;
        chan.push(std::move(r));
        continue;
      }
      r.hash = content_hash(r.content);
      auto it = existing.find(f.rel);
      if (!force && it != existing.end() && it->second.hash == r.hash) {
        r.content_unchanged = true;
        r.content.clear();
        chan.push(std::move(r));
        continue;
      }
      r.utf8 = is_valid_utf8(r.content);
      r.pf = parser.parse(f.rel, module_of(f), r.content, f.language);
      auto starts = line_starts(r.content);
      r.entity_terms.reserve(r.pf.entities.size());
      for (size_t e = 0; e < r.pf.entities.size(); ++e)
        r.entity_terms.push_back(term_vector(entity_document(r.pf, r.content, starts, static_cast<int>(e))));
      r.snippets = split_aggregate(r.content, opt.snippet_lines);
      r.snippet_terms.reserve(r.snippets.size());
      for (const auto& sp : r.snippets)
        r.snippet_terms.push_back(term_vector(line_range(r.content, starts, sp.start_line, sp.end_line)));
      r.refs_blob = encode_references(r.pf.references);
      chan.push(std::move(r));
    }
    chan.producer_done();
  };
  std::vector<std::thread> threads;
  for (int i = 0; i < nthreads; ++i) threads.emplace_back(worker);

  sql::Stmt del_file(*db, "DELETE FROM files WHERE path=?");
  sql::Stmt ins_file(*db,
                     "INSERT INTO files(path,module,package,language,hash,size,mtime_ns,line_count,errors,content) "
                     "VALUES(?,?,?,?,?,?,?,?,?,?)");
  sql::Stmt touch_file(*db, "UPDATE files SET size=?, mtime_ns=?, module=? WHERE path=?");
  sql::Stmt ins_ent(
      *db,
      "INSERT INTO entities(file_id,ord,parent_ord,name,qualname,kind,start_line,end_line,"
      "decorated_start_line,header_end_line,doc_start_line,doc_end_line,body_start_line,body_end_line,"
      "start_byte,end_byte,body_start_byte,signature,docstring,decorators,bases,params,is_async,doc_len,terms) "
      "VALUES(?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?,?)");
  sql::Stmt ins_imp(*db,
                    "INSERT INTO imports(file_id,line,scope_ord,module,level,name,alias,star,conditional) "
                    "VALUES(?,?,?,?,?,?,?,?,?)");
  sql::Stmt ins_refs(*db, "INSERT INTO refs(file_id,count,data) VALUES(?,?,?)");
  sql::Stmt ins_snip(*db, "INSERT INTO snippets(file_id,ord,start_line,end_line,doc_len,terms) VALUES(?,?,?,?,?,?)");

  const char* kill_env = std::getenv("REPOCTX_DEBUG_KILL_AFTER_FILES");
  size_t kill_after = kill_env ? std::strtoull(kill_env, nullptr, 10) : 0;
  size_t committed = 0, in_batch = 0, warned_errors = 0, warned_utf8 = 0;
  std::optional<sql::Transaction> tx;
  auto commit_batch = [&] {
    if (!tx) return;
    tx->commit();
    tx.reset();
    committed += in_batch;
    in_batch = 0;
    if (kill_after && committed >= kill_after) {
      // Test hook: die exactly like `kill -9` would, with no cleanup, to prove crash safety.
      std::raise(SIGKILL);
    }
    if (opt.interrupt_after_files && committed >= opt.interrupt_after_files) g_interrupted = true;
  };

  try {
    while (auto item = chan.pop()) {
      FileResult& r = *item;
      const auto& f = walk.files[r.walk_index];
      progress.add(1, f.size);
      if (r.failed) {
        log_warn("cannot read '{}': {} (skipped; its previous index entry, if any, is kept)", f.rel, r.error);
        ++st.skipped;
        continue;
      }
      if (!tx) tx.emplace(*db);
      if (r.content_unchanged) {
        touch_file.bind(1, static_cast<int64_t>(f.size))
            .bind(2, f.mtime_ns)
            .bind(3, module_of(f))
            .bind(4, f.rel)
            .exec();
        ++st.touched;
      } else {
        const ParsedFile& pf = r.pf;
        if (!pf.errors.empty()) {
          ++st.files_with_errors;
          if (warned_errors++ < 10) {
            log_warn("'{}': syntax errors at line {}{} ({} region{}); kept the {} definitions tree-sitter recovered",
                     f.rel, pf.errors[0].start_line, pf.errors.size() > 1 ? " and elsewhere" : "", pf.errors.size(),
                     pf.errors.size() == 1 ? "" : "s", pf.entities.size());
          }
        }
        if (!r.utf8 && warned_utf8++ < 10)
          log_warn("'{}' is not valid UTF-8; indexed as bytes (output shows invalid bytes as U+FFFD)", f.rel);
        nlohmann::json errs = nlohmann::json::array();
        for (const auto& e : pf.errors) errs.push_back({e.start_line, e.end_line, e.message});
        del_file.bind(1, f.rel).exec();
        ins_file.bind(1, f.rel)
            .bind(2, pf.module)
            .bind(3, pf.package)
            .bind(4, language_name(pf.language))
            .bind(5, r.hash)
            .bind(6, static_cast<int64_t>(f.size))
            .bind(7, f.mtime_ns)
            .bind(8, pf.line_count)
            .bind(9, errs.dump())
            .bind_blob(10, r.content.data(), r.content.size())
            .exec();
        int64_t fid = db->last_insert_id();
        for (size_t i = 0; i < pf.entities.size(); ++i) {
          const Entity& e = pf.entities[i];
          std::string terms = r.entity_terms[i].serialize();
          ins_ent.bind(1, fid)
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
        }
        for (const auto& im : pf.imports)
          ins_imp.bind(1, fid)
              .bind(2, im.line)
              .bind(3, im.scope)
              .bind(4, im.module)
              .bind(5, im.level)
              .bind(6, im.name)
              .bind(7, im.alias)
              .bind(8, im.star ? 1 : 0)
              .bind(9, im.conditional ? 1 : 0)
              .exec();
        ins_refs.bind(1, fid)
            .bind(2, static_cast<int64_t>(pf.references.size()))
            .bind_blob(3, r.refs_blob.data(), r.refs_blob.size())
            .exec();
        for (size_t i = 0; i < r.snippets.size(); ++i) {
          std::string terms = r.snippet_terms[i].serialize();
          ins_snip.bind(1, fid)
              .bind(2, static_cast<int64_t>(i))
              .bind(3, r.snippets[i].start_line)
              .bind(4, r.snippets[i].end_line)
              .bind(5, static_cast<int64_t>(r.snippet_terms[i].length))
              .bind_blob(6, terms.data(), terms.size())
              .exec();
        }
        ++st.parsed;
        st.bytes_parsed += f.size;
        st.entities += pf.entities.size();
        st.references += pf.references.size();
        st.snippets += r.snippets.size();
      }
      if (++in_batch >= opt.batch_files) commit_batch();
      if (g_interrupted) break;
    }
    commit_batch();
  } catch (...) {
    g_interrupted = true;
    chan.close();
    for (auto& t : threads) t.join();
    throw;
  }
  chan.close();
  for (auto& t : threads) t.join();
  progress.finish();

  if (st.files_with_errors > 10)
    log_warn("{} files had syntax errors in all (list them with `repoctx files --errors`)", st.files_with_errors);
  log_debug("parse+write done at {:.3f}s",
            std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  st.complete = !g_interrupted;
  meta_set(*db, "complete", st.complete ? "1" : "0");
  if (st.complete) refresh_query_image(*db, st.db_path, true, force);
  // Fold the write-ahead log into the database so readers start from a compact file (without waiting for a
  // reader of an older snapshot, e.g. a server still answering from the index it loaded).
  if (st.complete) db->checkpoint_if_idle();
  log_debug("checkpoint done at {:.3f}s", std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  st.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return st;
}

}  // namespace repoctx
