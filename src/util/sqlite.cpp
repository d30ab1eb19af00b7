#include "util/sqlite.h"

#include <cerrno>

#include "util/error.h"

namespace repoctx::sql {

Db::Db(const std::string& path, bool readonly) : path_(path) {
  int flags = readonly ? SQLITE_OPEN_READONLY : (SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE);
  flags |= SQLITE_OPEN_NOMUTEX;
  if (sqlite3_open_v2(path.c_str(), &db_, flags, nullptr) != SQLITE_OK) {
    std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    if (db_) sqlite3_close(db_);
    db_ = nullptr;
    throw Error(ExitCode::bad_input, "cannot open SQLite database '" + path + "': " + msg);
  }
  sqlite3_busy_timeout(db_, 30000);
  sqlite3_extended_result_codes(db_, 1);
}

Db::~Db() {
  if (db_) sqlite3_close_v2(db_);
}

void Db::fail(const std::string& what) const {
  std::string msg = what + ": " + (db_ ? sqlite3_errmsg(db_) : "no database");
  int code = db_ ? sqlite3_errcode(db_) & 0xff : 0;  // extended codes (SQLITE_CORRUPT_INDEX ...) share the low byte
  if (code == SQLITE_CORRUPT || code == SQLITE_NOTADB)
    throw Error(ExitCode::bad_input, msg + " (the database '" + path_ + "' is damaged: " + damage_hint_ + ")");
  // SQLite reports ENOSPC from write() as SQLITE_FULL, and from growing a file (ftruncate, fallocate) as an
  // I/O error whose system errno says it.
  const int sys = db_ ? sqlite3_system_errno(db_) : 0;
  if (code == SQLITE_FULL || (code == SQLITE_IOERR && (sys == ENOSPC || sys == EDQUOT)))
    throw DiskFull("no space left on the disk holding '" + path_ + "' (" + msg + "); " + full_hint_);
  throw Error(ExitCode::failure, msg);
}

void Db::exec(const char* sql) {
  char* err = nullptr;
  if (sqlite3_exec(db_, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string m = err ? err : "?";
    sqlite3_free(err);
    fail(std::string("SQL failed (") + m + ") in: " + std::string(sql).substr(0, 120));
  }
}

Stmt::Stmt(Db& db, const char* sql) : db_(&db) {
  if (sqlite3_prepare_v2(db.raw(), sql, -1, &s_, nullptr) != SQLITE_OK)
    db.fail(std::string("cannot prepare: ") + std::string(sql).substr(0, 120));
}

Stmt::~Stmt() {
  if (s_) sqlite3_finalize(s_);
}

Stmt& Stmt::operator=(Stmt&& o) noexcept {
  if (this != &o) {
    if (s_) sqlite3_finalize(s_);
    db_ = o.db_;
    s_ = o.s_;
    o.s_ = nullptr;
  }
  return *this;
}

Stmt& Stmt::bind(int i, int64_t v) {
  sqlite3_bind_int64(s_, i, v);
  return *this;
}
Stmt& Stmt::bind(int i, double v) {
  sqlite3_bind_double(s_, i, v);
  return *this;
}
Stmt& Stmt::bind(int i, std::string_view v) {
  sqlite3_bind_text(s_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::bind_blob(int i, const void* data, size_t n) {
  sqlite3_bind_blob(s_, i, n ? data : "", static_cast<int>(n), SQLITE_TRANSIENT);
  return *this;
}
Stmt& Stmt::bind_null(int i) {
  sqlite3_bind_null(s_, i);
  return *this;
}

bool Stmt::step() {
  int rc = sqlite3_step(s_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  sqlite3_reset(s_);
  db_->fail("SQL step failed");
}

void Stmt::exec() {
  while (step()) {
  }
  reset();
}

void Stmt::reset() {
  sqlite3_reset(s_);
  sqlite3_clear_bindings(s_);
}

std::string Stmt::str(int col) const {
  auto p = reinterpret_cast<const char*>(sqlite3_column_text(s_, col));
  return p ? std::string(p, static_cast<size_t>(sqlite3_column_bytes(s_, col))) : std::string();
}

std::string_view Stmt::blob(int col) const {
  auto p = static_cast<const char*>(sqlite3_column_blob(s_, col));
  return p ? std::string_view(p, static_cast<size_t>(sqlite3_column_bytes(s_, col))) : std::string_view();
}

Transaction::Transaction(Db& db, bool immediate) : db_(db) {
  db_.exec(immediate ? "BEGIN IMMEDIATE" : "BEGIN");
}

Transaction::~Transaction() {
  if (!done_) sqlite3_exec(db_.raw(), "ROLLBACK", nullptr, nullptr, nullptr);
}

void Transaction::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace repoctx::sql
