#include "index/schema.h"

#include <nlohmann/json.hpp>

#include "index/index.h"
#include "util/error.h"

namespace repoctx {

using nlohmann::json;

void configure_connection(sql::Db& db) {
  // WAL: readers never block the indexer and a killed writer leaves the last committed state.
  db.exec("PRAGMA journal_mode=WAL");
  db.exec("PRAGMA synchronous=NORMAL");
  db.exec("PRAGMA foreign_keys=ON");
  db.exec("PRAGMA temp_store=MEMORY");
  db.exec("PRAGMA cache_size=-65536");
}

bool is_repoctx_database(sql::Db& db) {
  sql::Stmt s(db, "SELECT count(*), sum(name='meta') FROM sqlite_master WHERE type='table'");
  if (!s.step()) return true;
  return s.i64(0) == 0 || s.i64(1) > 0;
}

bool ensure_schema(sql::Db& db) {
  db.exec("CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT NOT NULL)");
  std::string ver = meta_get(db, "schema_version");
  if (!ver.empty() && ver != std::to_string(kIndexSchemaVersion)) return false;
  db.exec(R"SQL(
    CREATE TABLE IF NOT EXISTS files(
      id INTEGER PRIMARY KEY,
      path TEXT NOT NULL UNIQUE,
      module TEXT NOT NULL DEFAULT '',
      package TEXT NOT NULL DEFAULT '',
      language TEXT NOT NULL,
      hash TEXT NOT NULL,
      size INTEGER NOT NULL,
      mtime_ns INTEGER NOT NULL,
      line_count INTEGER NOT NULL,
      errors TEXT NOT NULL DEFAULT '[]',
      content BLOB NOT NULL);
    CREATE TABLE IF NOT EXISTS entities(
      id INTEGER PRIMARY KEY,
      file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
      ord INTEGER NOT NULL,
      parent_ord INTEGER NOT NULL,
      name TEXT NOT NULL,
      qualname TEXT NOT NULL,
      kind TEXT NOT NULL,
      start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
      decorated_start_line INTEGER NOT NULL, header_end_line INTEGER NOT NULL,
      doc_start_line INTEGER NOT NULL, doc_end_line INTEGER NOT NULL,
      body_start_line INTEGER NOT NULL, body_end_line INTEGER NOT NULL,
      start_byte INTEGER NOT NULL, end_byte INTEGER NOT NULL, body_start_byte INTEGER NOT NULL,
      signature TEXT NOT NULL, docstring TEXT NOT NULL,
      decorators TEXT NOT NULL, bases TEXT NOT NULL, params TEXT NOT NULL,
      is_async INTEGER NOT NULL,
      doc_len INTEGER NOT NULL,
      terms BLOB NOT NULL);
    CREATE INDEX IF NOT EXISTS entities_file ON entities(file_id);
    CREATE INDEX IF NOT EXISTS entities_qualname ON entities(qualname);
    CREATE INDEX IF NOT EXISTS entities_name ON entities(name);
    CREATE TABLE IF NOT EXISTS imports(
      file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
      line INTEGER NOT NULL, scope_ord INTEGER NOT NULL,
      module TEXT NOT NULL, level INTEGER NOT NULL, name TEXT NOT NULL, alias TEXT NOT NULL,
      star INTEGER NOT NULL, conditional INTEGER NOT NULL);
    CREATE INDEX IF NOT EXISTS imports_file ON imports(file_id);
    CREATE TABLE IF NOT EXISTS refs(
      file_id INTEGER PRIMARY KEY REFERENCES files(id) ON DELETE CASCADE,
      count INTEGER NOT NULL,
      data BLOB NOT NULL);
    CREATE TABLE IF NOT EXISTS snippets(
      id INTEGER PRIMARY KEY,
      file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
      ord INTEGER NOT NULL,
      start_line INTEGER NOT NULL, end_line INTEGER NOT NULL,
      doc_len INTEGER NOT NULL,
      terms BLOB NOT NULL);
    CREATE INDEX IF NOT EXISTS snippets_file ON snippets(file_id);
  )SQL");
  if (ver.empty()) meta_set(db, "schema_version", std::to_string(kIndexSchemaVersion));
  return true;
}

std::string meta_get(sql::Db& db, const std::string& key, const std::string& fallback) {
  sql::Stmt s(db, "SELECT value FROM meta WHERE key=?");
  s.bind(1, key);
  if (s.step()) return s.str(0);
  return fallback;
}

void meta_set(sql::Db& db, const std::string& key, const std::string& value) {
  sql::Stmt s(db, "INSERT INTO meta(key,value) VALUES(?,?) ON CONFLICT(key) DO UPDATE SET value=excluded.value");
  s.bind(1, key).bind(2, value).exec();
}

// References use a flat varint layout instead of CBOR: a large library has millions of them, and
// building a JSON tree per reference dominated indexing time. Layout per reference:
//   scope+1, kind, line, nargs+1 (varints), flags byte (bit0 = store), chain (varint length + bytes),
//   kwargs count, then each kwarg (varint length + bytes). Preceded by a version byte and a count.
namespace {
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
bool get_varint(std::string_view in, size_t& pos, uint64_t& v) {
  v = 0;
  for (int shift = 0; pos < in.size() && shift < 64; shift += 7) {
    uint8_t b = static_cast<uint8_t>(in[pos++]);
    v |= static_cast<uint64_t>(b & 0x7f) << shift;
    if (!(b & 0x80)) return true;
  }
  return false;
}
void put_str(std::string& out, const std::string& s) {
  put_varint(out, s.size());
  out.append(s);
}
bool get_str(std::string_view in, size_t& pos, std::string& s) {
  uint64_t n;
  if (!get_varint(in, pos, n) || pos + n > in.size()) return false;
  s.assign(in.substr(pos, n));
  pos += n;
  return true;
}
constexpr char kRefsFormat = 1;
}  // namespace

std::string encode_references(const std::vector<Reference>& refs) {
  std::string out;
  out.reserve(refs.size() * 24);
  out.push_back(kRefsFormat);
  put_varint(out, refs.size());
  for (const auto& r : refs) {
    put_varint(out, static_cast<uint64_t>(r.scope + 1));
    put_varint(out, static_cast<uint64_t>(r.kind));
    put_varint(out, static_cast<uint64_t>(r.line));
    put_varint(out, static_cast<uint64_t>(r.nargs + 1));
    out.push_back(r.is_store ? 1 : 0);
    put_str(out, r.chain);
    put_varint(out, r.kwargs.size());
    for (const auto& k : r.kwargs) put_str(out, k);
  }
  return out;
}

std::vector<Reference> decode_references(std::string_view in) {
  std::vector<Reference> out;
  if (in.empty()) return out;
  size_t pos = 1;
  uint64_t n = 0;
  auto bad = [] {
    return Error(ExitCode::bad_input, "damaged references in the index: re-run `repoctx index --force`");
  };
  if (in[0] != kRefsFormat || !get_varint(in, pos, n)) throw bad();
  out.reserve(n);
  for (uint64_t i = 0; i < n; ++i) {
    Reference r;
    uint64_t scope, kind, line, nargs, nk;
    if (!get_varint(in, pos, scope) || !get_varint(in, pos, kind) || !get_varint(in, pos, line) ||
        !get_varint(in, pos, nargs) || pos >= in.size())
      throw bad();
    r.scope = static_cast<int>(scope) - 1;
    r.kind = static_cast<RefKind>(kind);
    r.line = static_cast<int>(line);
    r.nargs = static_cast<int>(nargs) - 1;
    r.is_store = in[pos++] != 0;
    if (!get_str(in, pos, r.chain) || !get_varint(in, pos, nk)) throw bad();
    r.kwargs.resize(nk);
    for (auto& k : r.kwargs)
      if (!get_str(in, pos, k)) throw bad();
    out.push_back(std::move(r));
  }
  return out;
}

std::string encode_params(const std::vector<Parameter>& ps) {
  json arr = json::array();
  for (const auto& p : ps) arr.push_back({p.name, static_cast<int>(p.kind), p.has_default ? 1 : 0, p.annotation});
  return arr.dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<Parameter> decode_params(const std::string& s) {
  std::vector<Parameter> out;
  json arr = json::parse(s, nullptr, false);
  if (!arr.is_array()) return out;
  for (const auto& row : arr) {
    Parameter p;
    p.name = row[0].get<std::string>();
    p.kind = static_cast<Parameter::Kind>(row[1].get<int>());
    p.has_default = row[2].get<int>() != 0;
    p.annotation = row[3].get<std::string>();
    out.push_back(std::move(p));
  }
  return out;
}

std::string encode_strings(const std::vector<std::string>& v) {
  return json(v).dump(-1, ' ', false, json::error_handler_t::replace);
}

std::vector<std::string> decode_strings(const std::string& s) {
  json arr = json::parse(s, nullptr, false);
  if (!arr.is_array()) return {};
  return arr.get<std::vector<std::string>>();
}

}  // namespace repoctx
