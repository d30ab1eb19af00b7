#include "retrieve/procedural/offline_store.h"

#include <cstdint>
#include <vector>

#include "util/error.h"

namespace repoctx {

using nlohmann::json;

OfflineStore::OfflineStore(const std::string& db_path) : db_(db_path) {
  db_.exec("PRAGMA journal_mode=WAL");
  db_.exec("PRAGMA synchronous=NORMAL");
  db_.exec(
      "CREATE TABLE IF NOT EXISTS procedural_offline(key TEXT PRIMARY KEY, created INTEGER NOT NULL, "
      "artifact BLOB NOT NULL)");
}

std::optional<json> OfflineStore::get(const std::string& key) {
  sql::Stmt s(db_, "SELECT artifact FROM procedural_offline WHERE key=?");
  s.bind(1, key);
  if (!s.step()) return std::nullopt;
  auto blob = s.blob(0);
  json j = json::from_cbor(blob.begin(), blob.end(), true, false);
  if (j.is_discarded() || !j.is_object()) return std::nullopt;  // damaged: computed again and replaced
  return j;
}

void OfflineStore::put(const std::string& key, const json& artifact) {
  std::vector<std::uint8_t> bytes = json::to_cbor(artifact);
  sql::Transaction tx(db_);
  sql::Stmt s(db_, "INSERT OR REPLACE INTO procedural_offline(key, created, artifact) VALUES(?, strftime('%s'), ?)");
  s.bind(1, key).bind_blob(2, bytes.data(), bytes.size()).exec();
  tx.commit();
}

size_t OfflineStore::count() {
  sql::Stmt s(db_, "SELECT count(*) FROM procedural_offline");
  return s.step() ? static_cast<size_t>(s.i64(0)) : 0;
}

namespace {

json validation_json(const StepValidation& v) {
  return {{"description_stage", v.description_stage}, {"rouge", v.rouge},           {"judge_reason", v.judge_reason},
          {"snippet_stage", v.snippet_stage},         {"cosine", v.snippet_cosine}, {"rejection", v.rejection}};
}

StepValidation validation_from(const json& j) {
  StepValidation v;
  v.description_stage = j.at("description_stage").get<std::string>();
  v.rouge = j.at("rouge").get<double>();
  v.judge_reason = j.at("judge_reason").get<std::string>();
  v.snippet_stage = j.at("snippet_stage").get<std::string>();
  v.snippet_cosine = j.at("cosine").get<double>();
  v.rejection = j.at("rejection").get<std::string>();
  return v;
}

}  // namespace

json pool_to_artifact(const Engine& e, const StepPool& steps, const json& trace) {
  json fns = json::array();
  const auto& ents = e.view().entities();
  for (const auto& [f, d] : steps.decomposed) {
    json sj = json::array();
    for (const auto& s : d.steps)
      sj.push_back({{"ord", s.ord},
                    {"description", s.description},
                    {"snippet", s.snippet},
                    {"grounded", s.grounded},
                    {"key", s.key},
                    {"validation", validation_json(s.validation)},
                    {"projection", s.projection}});
    fns.push_back({{"path", e.view().files()[ents[f].file].path},
                   {"qualname", ents[f].qualname},
                   {"line", ents[f].start_line},
                   {"error", d.error},
                   {"steps", sj}});
  }
  return {{"functions", fns},
          {"mu", steps.mp.mu},
          {"pc1", steps.mp.pc1},
          {"n", steps.mp.n},
          {"explained", steps.mp.explained},
          {"trace", trace}};
}

bool artifact_to_pool(const Engine& e, const json& a, StepPool& steps, std::string* why) {
  StepPool out;
  try {
    for (const auto& fj : a.at("functions")) {
      const std::string path = fj.at("path").get<std::string>(), qualname = fj.at("qualname").get<std::string>();
      const int line = fj.at("line").get<int>();
      int function = -1;
      if (auto file = e.view().file_by_path(path))
        for (int cand : e.view().find_entities(*file, qualname))
          if (e.view().entities()[cand].start_line == line) function = cand;
      if (function < 0) {
        *why = "it names " + path + "::" + qualname + " at line " + std::to_string(line) + ", not in the index";
        return false;
      }
      FunctionDecomposition& d = out.decomposed[function];
      d.function = function;
      d.error = fj.at("error").get<std::string>();
      for (const auto& sj : fj.at("steps")) {
        Step s;
        s.function = function;
        s.ord = sj.at("ord").get<int>();
        s.description = sj.at("description").get<std::string>();
        s.snippet = sj.at("snippet").get<std::string>();
        s.grounded = sj.at("grounded").get<bool>();
        s.key = sj.at("key").get<std::string>();
        s.validation = validation_from(sj.at("validation"));
        s.projection = sj.at("projection").get<std::vector<float>>();
        d.steps.push_back(std::move(s));
      }
    }
    out.mp.mu = a.at("mu").get<std::vector<float>>();
    out.mp.pc1 = a.at("pc1").get<std::vector<float>>();
    out.mp.n = a.at("n").get<size_t>();
    out.mp.explained = a.at("explained").get<double>();
    if (!a.at("trace").is_object()) throw std::runtime_error("no trace record");
  } catch (const std::exception& ex) {
    *why = std::string("damaged artifact: ") + ex.what();
    return false;
  }
  steps = std::move(out);
  steps.reindex();
  return true;
}

}  // namespace repoctx
