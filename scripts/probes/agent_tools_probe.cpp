// Probe of the agent tools' worst cases (issue 21 item 6), for docs/RELIABILITY.md: compiled against the
// project library by scripts/probes/run_probes.sh (before and after a change), it opens an index and times
// grep with a pattern that matches whole files, the line-anchor forms, and read_func / search_func with a
// 16k-character name; it prints one JSON object.
#include <chrono>
#include <iostream>
#include <string>

#include <nlohmann/json.hpp>

#include "retrieve/engine.h"
#include "retrieve/procedural/agent_tools.h"

using namespace repoctx;

int main(int argc, char** argv) {
  if (argc != 2) {
    std::cerr << "usage: agent_tools_probe INDEX.db\n";
    return 2;
  }
  auto eng = Engine::open(argv[1]);
  RepoTools tools(*eng);
  nlohmann::json out;
  auto timed = [&](const std::string& name, auto&& call) {
    auto t0 = std::chrono::steady_clock::now();
    ToolResult r = call();
    double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    out[name] = {{"seconds", s}, {"ok", r.ok}, {"chars", r.text().size()}, {"head", r.text().substr(0, 160)}};
  };
  timed("grep [\\s\\S]*\\n", [&] { return tools.grep("[\\s\\S]*\\n", "", false); });
  timed("grep \\Aimport", [&] { return tools.grep("\\Aimport", "", false); });
  timed("grep (?-m)^import", [&] { return tools.grep("(?-m)^import", "", false); });
  timed("grep ^import", [&] { return tools.grep("^import", "", false); });
  std::string huge(16000, 'q');
  timed("read_func 16k name", [&] { return tools.read_func(huge); });
  timed("search_func 16k name", [&] { return tools.search_func(huge); });
  timed("propose_func 16k path::name", [&] {
    ToolCall c;
    c.tool = "propose_func";
    c.name = "core/basic.py::" + huge;
    return tools.call(c);
  });
  std::cout << out.dump(2) << "\n";
  return 0;
}
