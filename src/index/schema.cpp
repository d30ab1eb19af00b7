#include "index/schema.h"

#include <nlohmann/json.hpp>

#include "index/index.h"

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

std::string encode_references(const std::vector<Reference>& refs) {
  json arr = json::array();
  for (const auto& r : refs) {
    json row = {r.scope, r.chain, static_cast<int>(r.kind), r.line, r.nargs, r.is_store ? 1 : 0};
    if (!r.kwargs.empty()) row.push_back(r.kwargs);
    arr.push_back(std::move(row));
  }
  auto bytes = json::to_cbor(arr);
  return std::string(bytes.begin(), bytes.end());
}

std::vector<Reference> decode_references(std::string_view blob) {
  std::vector<Reference> out;
  if (blob.empty()) return out;
  json arr = json::from_cbor(blob.begin(), blob.end());
  out.reserve(arr.size());
  for (const auto& row : arr) {
    Reference r;
    r.scope = row[0].get<int>();
    r.chain = row[1].get<std::string>();
    r.kind = static_cast<RefKind>(row[2].get<int>());
    r.line = row[3].get<int>();
    r.nargs = row[4].get<int>();
    r.is_store = row[5].get<int>() != 0;
    if (row.size() > 6) r.kwargs = row[6].get<std::vector<std::string>>();
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
