#include "index/store.h"

#include "index/location.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "index/index.h"
#include "index/schema.h"
#include "util/error.h"
#include "util/log.h"

namespace fs = std::filesystem;

namespace repoctx {

namespace {

constexpr char kSqliteMagic[] = "SQLite format 3";  // the first 16 bytes of every SQLite database, NUL included

enum class FileKind { missing, empty, sqlite, other };

FileKind file_kind(const std::string& path) {
  std::error_code ec;
  if (!fs::exists(path, ec)) return FileKind::missing;
  if (fs::file_size(path, ec) == 0 && !ec) return FileKind::empty;
  std::ifstream in(path, std::ios::binary);
  char head[16] = {};
  in.read(head, sizeof head);
  return in.gcount() == 16 && std::memcmp(head, kSqliteMagic, 16) == 0 ? FileKind::sqlite : FileKind::other;
}

Error damaged(const std::string& path, const std::string& what) {
  return Error(ExitCode::bad_input, "the index '" + path + "' is damaged (" + what + "); " + rebuild_hint(path));
}

void remove_index_files(const std::string& path) {
  std::error_code ec;
  for (const char* suf : {"", "-wal", "-shm", "-verified", "-unit-refs", "-signature-terms"}) {
    fs::remove(path + suf, ec);
    if (ec)
      throw Error(ExitCode::bad_input, "cannot delete '" + path + suf + "': " + ec.message() + " (nothing was built)");
  }
}

// The tables and columns every reader relies on; a missing one means the file was damaged or edited.
void check_tables(sql::Db& db, const std::string& path) {
  static const std::vector<std::pair<const char*, std::vector<const char*>>> kTables = {
      {"meta", {"key", "value"}},
      {"files",
       {"id", "path", "module", "package", "language", "hash", "size", "mtime_ns", "line_count", "errors", "content"}},
      {"entities", {"file_id", "ord", "parent_ord", "name", "qualname", "kind", "terms", "doc_len"}},
      {"imports", {"file_id", "line", "scope_ord", "module", "level", "name", "alias", "star", "conditional"}},
      {"refs", {"file_id", "count", "data"}},
      {"snippets", {"file_id", "ord", "start_line", "end_line", "doc_len", "terms"}},
  };
  for (const auto& [table, columns] : kTables) {
    std::vector<std::string> have;
    sql::Stmt s(db, (std::string("PRAGMA table_info(") + table + ")").c_str());
    while (s.step()) have.push_back(s.str(1));
    if (have.empty()) {
      // A structurally damaged file can lose tables too: let quick_check say which it is.
      sql::Stmt q(db, "PRAGMA quick_check(1)");
      std::string first = q.step() ? q.str(0) : "ok";
      throw damaged(path, first != "ok" ? first : std::string("its table '") + table + "' is missing");
    }
    for (const char* c : columns)
      if (std::find(have.begin(), have.end(), c) == have.end())
        throw damaged(path, std::string("table '") + table + "' has no column '" + c + "'");
  }
}

// Schema version, foreign files, tables. Returns false for an older schema version (the writer rebuilds).
bool check_existing(sql::Db& db, const std::string& path) {
  if (!is_repoctx_database(db))
    throw Error(ExitCode::bad_input, "'" + path +
                                         "' is a database that is not a repoctx index (it has no meta table); pass "
                                         "another --db (nothing was changed)");
  std::string ver;
  {
    sql::Stmt s(db, "SELECT count(*) FROM sqlite_master WHERE type='table' AND name='meta'");
    if (s.step() && s.i64(0) == 1) ver = meta_get(db, "schema_version");
  }
  if (ver.empty()) {
    sql::Stmt s(db, "SELECT count(*) FROM sqlite_master");
    if (s.step() && s.i64(0) == 0)
      throw Error(ExitCode::bad_input,
                  "'" + path + "' is an empty SQLite database, not a repoctx index; " + rebuild_hint(path));
    throw damaged(path, "it has no schema version");
  }
  char* end = nullptr;
  long v = std::strtol(ver.c_str(), &end, 10);
  if (end == ver.c_str() || *end != '\0') throw damaged(path, "its schema version '" + ver + "' is not a number");
  if (v > kIndexSchemaVersion)
    throw Error(ExitCode::bad_input, "the index '" + path + "' was built by a newer repoctx (schema version " + ver +
                                         "; this one reads version " + std::to_string(kIndexSchemaVersion) +
                                         "): use that version, or " + rebuild_hint(path) + " (nothing was changed)");
  if (v < kIndexSchemaVersion) return false;
  check_tables(db, path);
  return true;
}

// ---- the verified stamp (mark_index_verified) --------------------------------------------------------
std::string verified_path(const std::string& path) {
  return path + "-verified";
}

// "inode size mtime_ns ctime_ns" of the file, empty when it cannot be read. A write through any process
// changes the size or the times (ctime cannot be set back from user space); a file put in its place
// (a copy, a restore) has another inode.
std::string file_identity(const std::string& path) {
  struct stat sb {};
  if (::stat(path.c_str(), &sb) != 0) return {};
  auto ns = [](const timespec& t) { return static_cast<int64_t>(t.tv_sec) * 1000000000 + t.tv_nsec; };
  return std::to_string(sb.st_ino) + " " + std::to_string(sb.st_size) + " " + std::to_string(ns(sb.st_mtim)) + " " +
         std::to_string(ns(sb.st_ctim));
}

}  // namespace

// Whether the file is as the last complete run left it: the stamp names its identity, and no
// write-ahead log holds changes that the file does not show yet.
bool index_unchanged_since_verified(const std::string& path) {
  std::error_code ec;
  auto wal = fs::file_size(path + "-wal", ec);
  if (!ec && wal > 0) return false;
  std::ifstream in(verified_path(path));
  std::string stamp;
  if (!std::getline(in, stamp)) return false;
  const std::string now = file_identity(path);
  return !now.empty() && stamp == now;
}

namespace {

// The damage check (store.h), skipped for a file as the last complete run left it.
void check_damage(sql::Db& db, const std::string& path) {
  if (index_unchanged_since_verified(path)) {
    log_debug("damage check skipped: '{}' is as the last complete run left it", path);
    return;
  }
  sql::Stmt s(db, "PRAGMA quick_check(5)");
  std::string problems;
  try {
    while (s.step()) {
      std::string line = s.str(0);
      if (line == "ok") return;
      problems += (problems.empty() ? "" : "; ") + line;
    }
  } catch (const Error& e) {
    // Pages too damaged for the check to walk: SQLite reports the file as malformed instead of listing them.
    if (e.code() != ExitCode::bad_input) throw;
    throw damaged(path, std::string("PRAGMA quick_check: ") + sqlite3_errmsg(db.raw()));
  }
  throw damaged(path, "PRAGMA quick_check: " + problems.substr(0, 400));
}

std::unique_ptr<sql::Db> open_db(const std::string& path, bool readonly) {
  auto db = std::make_unique<sql::Db>(path, readonly);
  db->set_damage_hint(rebuild_hint(path));
  db->set_full_hint(disk_full_hint(path));
  return db;
}

// A new index is made under a temporary name and linked into place whole, so that the index path never
// holds a zero-byte or schema-less file (which would be indistinguishable from a damaged one).
void create_index(const std::string& path) {
  std::string tmp = path + ".new-" + std::to_string(::getpid());
  remove_index_files(tmp);
  auto remove_tmp = [&] {  // no half-made file stays behind
    std::error_code ec;
    for (const char* suf : {"", "-wal", "-shm"}) fs::remove(tmp + suf, ec);
  };
  try {
    sql::Db db(tmp);
    configure_connection(db);
    ensure_schema(db);
  } catch (const DiskFull&) {
    remove_tmp();
    throw DiskFull("no space left on the disk to create the index '" + path +
                   "': free some space there, or put the index on another disk with --db PATH (nothing was created)");
  } catch (...) {
    remove_tmp();
    throw;
  }  // the last connection closing checkpoints the WAL into the file and deletes it
  if (::link(tmp.c_str(), path.c_str()) != 0 && errno != EEXIST) {
    int err = errno;
    remove_index_files(tmp);
    throw Error(ExitCode::bad_input,
                "cannot create the index '" + path + "': " + std::strerror(err) + " (choose another place with --db)");
  }
  remove_index_files(tmp);  // EEXIST: another process made it first; that one is used
}

}  // namespace

void mark_index_verified(const std::string& path) {
  const std::string id = file_identity(path), stamp = verified_path(path), tmp = stamp + ".tmp";
  std::error_code ec;
  if (id.empty()) {
    fs::remove(stamp, ec);
    return;
  }
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << id << "\n";
    if (!out) {
      fs::remove(tmp, ec);
      return;
    }
  }
  fs::rename(tmp, stamp, ec);
  if (ec) fs::remove(tmp, ec);
}

std::string disk_full_hint(const std::string& path) {
  return "free some space there, or put the index on another disk with --db PATH; what earlier runs committed "
         "is kept and the index '" +
         path + "' stays usable (the next run finishes this one)";
}

std::string rebuild_hint(const std::string& path) {
  return "run `repoctx index --rebuild` (with --db " + path + " if it is not the default) to build it again";
}

std::unique_ptr<sql::Db> open_index_for_writing(const std::string& path, const IndexOpenOptions& o) {
  std::error_code ec;
  ensure_index_dir(path, ec);  // also writes .repoctx/.gitignore
  if (ec)
    throw Error(ExitCode::bad_input,
                "cannot create the index folder for '" + path + "': " + ec.message() + " (choose another with --db)");
  FileKind kind = file_kind(path);
  if (o.rebuild && kind != FileKind::missing) {
    if (kind == FileKind::other)
      throw Error(ExitCode::bad_input, "'" + path +
                                           "' is not a SQLite file: --rebuild only replaces repoctx indexes (delete "
                                           "it yourself if it is one; nothing was changed)");
    if (kind == FileKind::sqlite) {
      bool foreign = false;
      try {
        sql::Db probe(path, true);
        foreign = !is_repoctx_database(probe);
      } catch (const Error&) {
        foreign = false;  // unreadable: a damaged file, which --rebuild exists for
      }
      if (foreign)
        throw Error(ExitCode::bad_input,
                    "'" + path + "' is a database that is not a repoctx index: --rebuild does not delete it");
    }
    log_info("--rebuild: deleting the index '{}' and building it again", path);
    remove_index_files(path);
    kind = FileKind::missing;
  }
  if (kind == FileKind::empty)
    throw Error(
        ExitCode::bad_input,
        "the index '" + path + "' is an empty file (0 bytes), not a repoctx index (truncated?); " + rebuild_hint(path));
  if (kind == FileKind::other)
    throw Error(ExitCode::bad_input, "'" + path + "' is not a SQLite database (damaged, or not an index); " +
                                         rebuild_hint(path) + " if it is an index, or pass another --db");
  if (kind == FileKind::missing) create_index(path);
  auto db = open_db(path, false);
  if (!check_existing(*db, path)) {
    log_warn("the index '{}' has an older schema; rebuilding it", path);
    db.reset();
    remove_index_files(path);
    create_index(path);
    db = open_db(path, false);
    check_existing(*db, path);
  }
  if (kind != FileKind::missing) check_damage(*db, path);
  configure_connection(*db);
  return db;
}

std::unique_ptr<sql::Db> open_index_for_reading(const std::string& path) {
  switch (file_kind(path)) {
    case FileKind::missing:
      throw Error(ExitCode::not_found, "no index at '" + path + "': run `repoctx index <repo>` first");
    case FileKind::empty:
      throw Error(ExitCode::bad_input, "the index '" + path +
                                           "' is an empty file (0 bytes), not a repoctx index (truncated?); " +
                                           rebuild_hint(path));
    case FileKind::other:
      throw Error(ExitCode::bad_input, "'" + path + "' is not a SQLite database (damaged, or not an index); " +
                                           rebuild_hint(path) + " if it is an index, or pass another --db");
    case FileKind::sqlite:
      break;
  }
  auto db = open_db(path, true);
  if (!check_existing(*db, path))
    throw Error(ExitCode::bad_input, "the index '" + path +
                                         "' was built by an older repoctx: run `repoctx index` to "
                                         "rebuild it");
  check_damage(*db, path);
  return db;
}

}  // namespace repoctx
