// The offline stage's artifact (ProjAgent 4.1: decompositions, grounded steps with their projections,
// mu / PC1) in the index database, one row per key (offline.cpp says what the key covers). Functions are
// stored by path, qualified name and line, not by entity index, so an artifact survives a re-index that
// renumbers entities; one whose functions no longer exist is refused, never half used.
#pragma once

#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "retrieve/engine.h"
#include "retrieve/procedural/stages.h"
#include "util/sqlite.h"

namespace repoctx {

// Bumped when the artifact's layout or meaning changes (part of the key).
inline constexpr int kOfflineArtifactFormat = 1;

class OfflineStore {
 public:
  explicit OfflineStore(const std::string& db_path);
  std::optional<nlohmann::json> get(const std::string& key);
  void put(const std::string& key, const nlohmann::json& artifact);
  size_t count();

 private:
  sql::Db db_;
};

// The artifact of `steps` (every decomposition, the projections of grounded steps, mu / PC1) with the
// stage's trace record.
nlohmann::json pool_to_artifact(const Engine& e, const StepPool& steps, const nlohmann::json& trace);
// Fills `steps` (projections raw; the caller debiases) from an artifact; false (and why) when a function
// it names is not in the index or the artifact is damaged.
bool artifact_to_pool(const Engine& e, const nlohmann::json& artifact, StepPool& steps, std::string* why);

}  // namespace repoctx
