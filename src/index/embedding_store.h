// Vectors in the index, keyed by (model identity, content hash of what they represent): embeddings of
// texts ("embeddings") and raw reasoning-subspace projections of steps ("step_projections"). Each is
// computed once per model and content, whatever file or entity it belongs to, and survives re-indexing.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "util/sqlite.h"

namespace repoctx {

class EmbeddingStore {
 public:
  explicit EmbeddingStore(const std::string& db_path, const std::string& table = "embeddings");
  // Vectors present for these hashes.
  std::unordered_map<std::string, std::vector<float>> get(const std::string& model,
                                                          const std::vector<std::string>& hashes);
  void put(const std::string& model, const std::vector<std::pair<std::string, std::vector<float>>>& rows);
  size_t count(const std::string& model);

 private:
  sql::Db db_;
  std::string table_;
};

}  // namespace repoctx
