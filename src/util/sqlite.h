// A thin RAII layer over SQLite's C API (prepared statements, transactions, typed binds and columns).
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace repoctx::sql {

class Db;

class Stmt {
 public:
  Stmt() = default;
  Stmt(Db& db, const char* sql);
  ~Stmt();
  Stmt(Stmt&& o) noexcept : db_(o.db_), s_(o.s_) { o.s_ = nullptr; }
  Stmt& operator=(Stmt&& o) noexcept;
  Stmt(const Stmt&) = delete;

  Stmt& bind(int i, int64_t v);
  Stmt& bind(int i, int v) { return bind(i, static_cast<int64_t>(v)); }
  Stmt& bind(int i, double v);
  Stmt& bind(int i, std::string_view v);
  Stmt& bind(int i, const std::string& v) { return bind(i, std::string_view(v)); }
  Stmt& bind(int i, const char* v) { return bind(i, std::string_view(v)); }
  Stmt& bind_blob(int i, const void* data, size_t n);
  Stmt& bind_null(int i);

  bool step();  // true while a row is available
  void exec();  // step to completion, then reset
  void reset();

  int64_t i64(int col) const { return sqlite3_column_int64(s_, col); }
  int i32(int col) const { return sqlite3_column_int(s_, col); }
  double f64(int col) const { return sqlite3_column_double(s_, col); }
  bool is_null(int col) const { return sqlite3_column_type(s_, col) == SQLITE_NULL; }
  std::string str(int col) const;
  std::string_view blob(int col) const;

 private:
  Db* db_ = nullptr;
  sqlite3_stmt* s_ = nullptr;
};

class Db {
 public:
  Db() = default;
  explicit Db(const std::string& path, bool readonly = false);
  ~Db();
  Db(Db&& o) noexcept
      : db_(o.db_),
        path_(std::move(o.path_)),
        damage_hint_(std::move(o.damage_hint_)),
        full_hint_(std::move(o.full_hint_)) {
    o.db_ = nullptr;
  }
  Db(const Db&) = delete;

  void exec(const char* sql);
  int64_t last_insert_id() const { return sqlite3_last_insert_rowid(db_); }
  sqlite3* raw() const { return db_; }
  const std::string& path() const { return path_; }
  // What a damage message tells the user to do (SQLITE_CORRUPT / SQLITE_NOTADB become Error(bad_input)
  // naming the file and this fix); default: delete the file and re-run.
  void set_damage_hint(std::string hint) { damage_hint_ = std::move(hint); }
  // What a full-disk message tells the user to do (SQLITE_FULL, or an I/O error whose cause is ENOSPC or
  // EDQUOT, becomes DiskFull naming the file and this); default: free some space and re-run.
  void set_full_hint(std::string hint) { full_hint_ = std::move(hint); }
  [[noreturn]] void fail(const std::string& what) const;

 private:
  sqlite3* db_ = nullptr;
  std::string path_;
  std::string damage_hint_ = "delete it and re-run";
  std::string full_hint_ = "free some space there and re-run";
};

// Commits on commit(), rolls back if destroyed without it (exceptions, early returns).
class Transaction {
 public:
  explicit Transaction(Db& db, bool immediate = true);
  ~Transaction();
  void commit();

 private:
  Db& db_;
  bool done_ = false;
};

}  // namespace repoctx::sql
