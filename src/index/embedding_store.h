// Embedding vectors in the index, keyed by (model identity, content hash of the embedded text): each
// text is embedded once per model, whatever file or entity it belongs to, and survives re-indexing.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "index/sqlite.h"

namespace repoctx {

class EmbeddingStore {
 public:
  explicit EmbeddingStore(const std::string& db_path);
  // Vectors present for these hashes.
  std::unordered_map<std::string, std::vector<float>> get(const std::string& model, const std::vector<std::string>& hashes);
  void put(const std::string& model, const std::vector<std::pair<std::string, std::vector<float>>>& rows);
  size_t count(const std::string& model);

 private:
  sql::Db db_;
};

}  // namespace repoctx
