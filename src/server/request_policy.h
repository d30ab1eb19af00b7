// What a network client may choose on a server: never a server-side file. Models are loaded when the server
// starts (`--structural-model NAME=FILE`, `--align-model NAME=FILE`) and requests choose among them by name;
// a request field or parameter that names anything else is refused (Error(usage): HTTP 400, an MCP tool
// error), before any file is opened.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "repoctx/repoctx.h"

namespace repoctx {

struct ServerModels {
  // name -> file. "builtin" (the model built into the binary) is always available; a model named "default"
  // serves requests that name none (else the built-in one does).
  std::map<std::string, std::string> structural, aligncoder;

  // Adds "NAME=FILE", or "FILE" as "default". Throws Error(usage) for an empty or repeated name or "builtin".
  static void add(std::map<std::string, std::string>& into, const std::string& spec, const std::string& option);
  // Loads every file now, so that a missing or broken model stops the server at start with its name, not
  // a request later.
  void load() const;
  // The names a request may give, "builtin" first.
  std::vector<std::string> structural_names() const;
  std::vector<std::string> aligncoder_names() const;

  // Rewrites the model names a request gives (RetrieveParams::structural_model, the strategy parameter
  // model_path) into the files loaded at start. Throws Error(usage) for a name not loaded.
  // RetrieveParams::model_file and locate_model too: model_file by the --align-model names, locate_model only
  // "builtin" (or empty).
  void resolve(api::RetrieveParams& p) const;
  void resolve(api::LocalizeParams& p) const;
  void resolve(std::map<std::string, std::string>& strategy_params) const;
  static std::string builtin_locate_model(const std::string& name);
};

}  // namespace repoctx
