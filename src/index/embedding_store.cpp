#include "index/embedding_store.h"

#include <cstring>

#include "util/error.h"

namespace repoctx {

EmbeddingStore::EmbeddingStore(const std::string& db_path, const std::string& table) : db_(db_path), table_(table) {
  if (table_ != "embeddings" && table_ != "step_projections")
    throw Error(ExitCode::usage, "unknown vector table '" + table_ + "'");
  db_.exec("PRAGMA journal_mode=WAL");
  db_.exec("PRAGMA synchronous=NORMAL");
  db_.exec(("CREATE TABLE IF NOT EXISTS " + table_ +
            "(model TEXT NOT NULL, hash TEXT NOT NULL, dim INTEGER NOT NULL, "
            "vector BLOB NOT NULL, PRIMARY KEY(model, hash))")
               .c_str());
}

std::unordered_map<std::string, std::vector<float>> EmbeddingStore::get(const std::string& model,
                                                                        const std::vector<std::string>& hashes) {
  std::unordered_map<std::string, std::vector<float>> out;
  sql::Stmt s(db_, ("SELECT dim, vector FROM " + table_ + " WHERE model=? AND hash=?").c_str());
  for (const auto& h : hashes) {
    s.bind(1, model).bind(2, h);
    if (s.step()) {
      auto blob = s.blob(1);
      std::vector<float> v(blob.size() / sizeof(float));
      if (!v.empty()) std::memcpy(v.data(), blob.data(), v.size() * sizeof(float));
      out.emplace(h, std::move(v));
    }
    s.reset();
  }
  return out;
}

void EmbeddingStore::put(const std::string& model,
                         const std::vector<std::pair<std::string, std::vector<float>>>& rows) {
  sql::Transaction tx(db_);
  sql::Stmt s(db_, ("INSERT OR REPLACE INTO " + table_ + "(model, hash, dim, vector) VALUES(?,?,?,?)").c_str());
  for (const auto& [h, v] : rows)
    s.bind(1, model)
        .bind(2, h)
        .bind(3, static_cast<int64_t>(v.size()))
        .bind_blob(4, v.data(), v.size() * sizeof(float))
        .exec();
  tx.commit();
}

size_t EmbeddingStore::count(const std::string& model) {
  sql::Stmt s(db_, ("SELECT count(*) FROM " + table_ + " WHERE model=?").c_str());
  s.bind(1, model);
  return s.step() ? static_cast<size_t>(s.i64(0)) : 0;
}

}  // namespace repoctx
