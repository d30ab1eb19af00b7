// The seed-finding agent's tools driven by arbitrary JSON tool calls (the model writes them): the
// argument parser, path resolution, grep's pattern handling, name lookup. Checked: no crash, every answer
// within the output limit, and nothing from outside the repository (a file there holds a marker, reachable
// only through symlinks the walk does not follow) ever shown.
#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "fuzz_repo.h"
#include "index/index.h"
#include "retrieve/engine.h"
#include "retrieve/procedural/agent_tools.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace repoctx;

namespace {

struct World {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<RepoTools> tools;
};

World* world = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fs::path root = fuzz::make_fuzz_repo("repoctx-fuzz-tools");
  IndexOptions o;
  o.db_path = (root / "index.db").string();
  o.progress = false;
  o.threads = 1;
  build_index((root / "repo").string(), o);
  world = new World;
  world->engine = Engine::open(o.db_path);
  world->tools = std::make_unique<RepoTools>(*world->engine);
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  auto j = nlohmann::json::parse(data, data + size, nullptr, false);
  if (j.is_discarded()) return 0;
  ToolCall c;
  try {
    c = tool_call_from_json(j);
  } catch (const Error&) {
    return 0;  // an unusable call is answered with a message, not run
  }
  ToolResult r = world->tools->call(c);
  std::string text = r.text();
  if (text.size() > ToolLimits{}.max_output_chars + 16) std::abort();
  // A leak is the outside file's token in the answer when the call did not carry it: a call naming it
  // (an unknown tool "read_f<token>") is echoed in the error message (a crash input of CI's fuzz run).
  if (fuzz::shows_outside_secret(std::string_view(reinterpret_cast<const char*>(data), size), text)) std::abort();
  return 0;
}
