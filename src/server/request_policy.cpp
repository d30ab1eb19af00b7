#include "server/request_policy.h"

#include <fmt/core.h>

#include "retrieve/aligncoder/encoder.h"
#include "retrieve/structural/structural.h"
#include "util/error.h"

namespace repoctx {

namespace {

constexpr const char* kBuiltin = "builtin";
// AlignRetriever's ablation without training (AlignCoder III-C "w/o RL"): a mode, not a file.
constexpr const char* kUntrained = "untrained";

std::vector<std::string> names_of(const std::map<std::string, std::string>& m, bool untrained) {
  std::vector<std::string> out = {kBuiltin};
  if (untrained) out.push_back(kUntrained);
  for (const auto& [name, file] : m) out.push_back(name);
  return out;
}

std::string join(const std::vector<std::string>& v) {
  std::string s;
  for (const auto& x : v) s += (s.empty() ? "" : ", ") + x;
  return s;
}

// The file for the model `name` names, "" for the built-in one.
std::string file_of(const std::map<std::string, std::string>& m, const std::string& name, const std::string& field,
                    const std::string& option, bool untrained) {
  if (name.empty()) {
    auto it = m.find("default");
    return it == m.end() ? "" : it->second;
  }
  if (name == kBuiltin) return "";
  if (untrained && name == kUntrained) return kUntrained;
  auto it = m.find(name);
  if (it != m.end()) return it->second;
  bool looks_like_path = name.find('/') != std::string::npos || name.find('.') != std::string::npos;
  throw Error(ExitCode::usage,
              fmt::format("{} '{}' {}; requests choose among the models this server loaded at start: {} (start the "
                          "server with {} NAME=FILE to add one)",
                          field, name,
                          looks_like_path ? "names a file on the server, which a request may not do"
                                          : "is not a model this server loaded",
                          join(names_of(m, untrained)), option));
}

}  // namespace

void ServerModels::add(std::map<std::string, std::string>& into, const std::string& spec, const std::string& option) {
  auto eq = spec.find('=');
  std::string name = eq == std::string::npos ? "default" : spec.substr(0, eq);
  std::string file = eq == std::string::npos ? spec : spec.substr(eq + 1);
  if (name.empty() || file.empty())
    throw Error(ExitCode::usage, option + " takes NAME=FILE or FILE, got '" + spec + "'");
  if (name == kBuiltin || name == kUntrained)
    throw Error(ExitCode::usage, option + ": '" + name + "' is reserved (it names the built-in model or a mode)");
  if (!into.emplace(name, file).second)
    throw Error(ExitCode::usage, option + ": the name '" + name + "' is given twice");
}

void ServerModels::load() const {
  for (const auto& [name, file] : structural) {
    try {
      shared_structural_ranker(file);
    } catch (const Error& e) {
      throw Error(e.code(), fmt::format("structural model '{}' ({}): {}", name, file, e.what()));
    }
  }
  for (const auto& [name, file] : aligncoder) {
    try {
      load_align_encoder(file);
    } catch (const Error& e) {
      throw Error(e.code(), fmt::format("AlignRetriever model '{}' ({}): {}", name, file, e.what()));
    }
  }
}

std::vector<std::string> ServerModels::structural_names() const {
  return names_of(structural, false);
}

std::vector<std::string> ServerModels::aligncoder_names() const {
  return names_of(aligncoder, true);
}

void ServerModels::resolve(api::RetrieveParams& p) const {
  p.structural_model =
      file_of(structural, p.structural_model, "structural_model", "--structural-model", /*untrained=*/false);
  p.model_file = file_of(aligncoder, p.model_file, "model_file", "--align-model", /*untrained=*/true);
  p.locate_model = builtin_locate_model(p.locate_model);
  resolve(p.params);
}

void ServerModels::resolve(api::LocalizeParams& p) const {
  p.locate_model = builtin_locate_model(p.locate_model);
  resolve(p.params);
}

std::string ServerModels::builtin_locate_model(const std::string& name) {
  if (name.empty() || name == kBuiltin) return "";
  bool looks_like_path = name.find('/') != std::string::npos || name.find('.') != std::string::npos;
  throw Error(ExitCode::usage,
              fmt::format("locate_model '{}' {}; a server serves the built-in locate model (builtin)", name,
                          looks_like_path ? "names a file on the server, which a request may not do"
                                          : "is not a model this server has"));
}

void ServerModels::resolve(std::map<std::string, std::string>& strategy_params) const {
  auto it = strategy_params.find("model_path");
  std::string name = it == strategy_params.end() ? "" : it->second;
  std::string file = file_of(aligncoder, name, "parameter model_path", "--align-model", /*untrained=*/true);
  if (file.empty()) {
    if (it != strategy_params.end()) strategy_params.erase(it);
  } else {
    strategy_params["model_path"] = file;
  }
  // RLCoder's retriever: a server serves the built-in one (no server option loads another).
  if (auto rl = strategy_params.find("rlcoder_model_path"); rl != strategy_params.end()) {
    if (!rl->second.empty() && rl->second != kBuiltin)
      throw Error(ExitCode::usage, fmt::format("parameter rlcoder_model_path '{}': a server serves the built-in "
                                               "RLCoder retriever (builtin); a request may not name a file",
                                               rl->second));
    strategy_params.erase(rl);
  }
}

}  // namespace repoctx
