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

#include "index/index.h"
#include "retrieve/engine.h"
#include "retrieve/procedural/agent_tools.h"
#include "util/error.h"

namespace fs = std::filesystem;
using namespace repoctx;

namespace {

constexpr const char* kSecret = "OUTSIDE_SECRET_TOKEN_7f3a";

void write(const fs::path& p, const std::string& text) {
  fs::create_directories(p.parent_path());
  std::ofstream(p) << text;
}

struct World {
  std::unique_ptr<Engine> engine;
  std::unique_ptr<RepoTools> tools;
};

World* world = nullptr;

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  fs::path root = fs::temp_directory_path() / ("repoctx-fuzz-tools-" + std::to_string(::getpid()));
  fs::remove_all(root);
  write(root / "repo/pkg/__init__.py", "from .core import Report\n");
  write(root / "repo/pkg/core.py",
        "import json\n\n\nclass Report:\n    \"\"\"A report.\"\"\"\n    def __init__(self, store):\n"
        "        self.store = store\n\n    def summarize(self, key):\n        rows = load(self.store)\n"
        "        return json.dumps(sorted(rows, key=key))\n\n\ndef load(store):\n    return store.rows()\n");
  write(root / "repo/pkg/sub/deep.py", "def deep_helper(path):\n    with open(path) as f:\n        return f.read()\n");
  write(root / "outside/secret.py", std::string(kSecret) + " = 1\n");
  fs::create_symlink(root / "outside/secret.py", root / "repo/pkg/evil.py");
  fs::create_symlink(root / "outside", root / "repo/pkg/linked");
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
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  if (text.find(kSecret) != std::string::npos && input.find(kSecret) == std::string_view::npos) std::abort();
  return 0;
}
