// The index's SQLite schema and the encodings of its blob columns.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "repo/model.h"
#include "util/sqlite.h"

namespace repoctx {

// Creates the tables when missing; returns false when an existing database has another schema version
// (the caller rebuilds it).
bool ensure_schema(sql::Db& db);
void configure_connection(sql::Db& db);
// True for an empty database or one holding repoctx's meta table; false for any other SQLite file.
bool is_repoctx_database(sql::Db& db);

std::string meta_get(sql::Db& db, const std::string& key, const std::string& fallback = "");
void meta_set(sql::Db& db, const std::string& key, const std::string& value);

// References of one file, CBOR-encoded (one row per file keeps inserts cheap: a large library has
// millions of references, and they are always read file by file).
std::string encode_references(const std::vector<Reference>& refs);
std::vector<Reference> decode_references(std::string_view blob);

std::string encode_params(const std::vector<Parameter>& ps);
std::vector<Parameter> decode_params(const std::string& json);
std::string encode_strings(const std::vector<std::string>& v);
std::vector<std::string> decode_strings(const std::string& json);

}  // namespace repoctx
