// Model files of either ranker (linear or gbdt): reading them, and sharing each loaded one per process.
#include <nlohmann/json.hpp>

#include <filesystem>
#include <fstream>
#include <future>
#include <map>
#include <memory>
#include <mutex>
#include <string>

#include "retrieve/structural/gbdt.h"
#include "retrieve/structural/structural.h"
#include "util/error.h"
#include "util/file_io.h"

namespace repoctx {

// The shipped model, embedded at build time from models/structural.json (see src/CMakeLists.txt).
extern const char* const kDefaultStructuralModel;

namespace {

// The text of a model file; empty path = the model built into repoctx.
std::string model_text(const std::string& path) {
  if (path.empty()) {
    if (!*kDefaultStructuralModel)
      throw Error(ExitCode::not_found,
                  "this build has no built-in structural model (models/structural.json was "
                  "missing at build time): train one with `repoctx train-structural` and pass --model");
    return kDefaultStructuralModel;
  }
  return read_file(path, "structural model");
}

}  // namespace

StructuralModel StructuralModel::load(const std::string& path) {
  return from_json(model_text(path), path.empty() ? "built-in" : path);
}

std::unique_ptr<StructuralRanker> structural_ranker_from_json(const std::string& text, const std::string& origin) {
  auto file = nlohmann::json::parse(text, nullptr, false);
  if (file.is_discarded() || !file.is_object())
    throw Error(ExitCode::bad_input, "structural model '" + origin + "' is not JSON");
  std::string kind =
      file.contains("ranker") && file["ranker"].is_string() ? file["ranker"].get<std::string>() : "linear";
  if (kind == "gbdt") return GbdtRanker::from_json(file, origin);
  if (kind != "linear")
    throw Error(ExitCode::bad_input, "structural model '" + origin + "' has an unknown ranker '" + kind +
                                         "' (this build knows linear and gbdt)");
  return std::make_unique<StructuralModel>(StructuralModel::from_json(text, origin));
}

std::unique_ptr<StructuralRanker> load_structural_ranker(const std::string& path) {
  return structural_ranker_from_json(model_text(path), path.empty() ? "built-in" : path);
}

RankerFuture structural_ranker_future(const std::string& path) {
  static std::mutex mu;
  // Never destroyed: freeing an XGBoost booster from a static destructor at exit runs after XGBoost's own
  // statics are gone (a crash at exit); the process is ending anyway.
  static auto& loaded = *new std::map<std::string, RankerFuture>();
  auto load = [path] {
    return std::async(std::launch::deferred,
                      [path] { return std::shared_ptr<const StructuralRanker>(load_structural_ranker(path)); })
        .share();
  };
  std::string key = path;
  if (!path.empty()) {
    std::error_code ec;
    auto size = std::filesystem::file_size(path, ec);
    auto mtime = std::filesystem::last_write_time(path, ec);
    if (ec) return load();  // not kept: the loader says what is wrong with it, when asked
    key += "|" + std::to_string(size) + "|" + std::to_string(mtime.time_since_epoch().count());
  }
  std::lock_guard lk(mu);
  auto it = loaded.find(key);
  if (it == loaded.end()) it = loaded.emplace(key, load()).first;
  return it->second;
}

std::shared_ptr<const StructuralRanker> shared_structural_ranker(const std::string& path) {
  return structural_ranker_future(path).get();
}

}  // namespace repoctx
