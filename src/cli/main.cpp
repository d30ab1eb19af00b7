// repoctx: finds the repository context an LLM needs to write code, and writes it.
//
// main() registers the command groups (one file each, cli/commands.h), parses the command line, runs the
// handler of the command given, and turns errors into exit codes (README.md): 0 ok, 1 internal failure,
// 2 usage, 3 not found, 4 bad input, 5 LLM backend failure, 130 interrupted.
#include <fmt/core.h>
#include <mimalloc.h>

#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <iostream>
#include <set>
#include <string_view>

#include "cli/commands.h"
#include "cli/common.h"
#include "llm/prompts.h"
#include "util/cancel.h"
#include "util/error.h"

namespace {
// Large (2 MiB, transparent huge) OS pages: loading an index touches tens of MB of fresh memory, and with
// 4 KiB pages the page faults are most of a cold query's time (docs/BENCHMARKS.md "Serving"). mimalloc reads
// the option once, when it starts, before main; this runs earlier still, before every shared library's
// initializer (the executable's ELF preinit_array), and mi_option_set marks the option as initialized, so
// mimalloc starts with it. Setting it through the environment would mean starting the process twice.
// The environment is read from `envp`: libc's getenv does not see it yet at this point. An explicit
// MIMALLOC_LARGE_OS_PAGES is left to mimalloc.
void mimalloc_options_before_start(int, char**, char** envp) {
  constexpr std::string_view kName = "MIMALLOC_LARGE_OS_PAGES=";
  for (char** e = envp; e && *e; ++e)
    if (std::string_view(*e).substr(0, kName.size()) == kName) return;
  mi_option_set(mi_option_large_os_pages, 1);
}
__attribute__((section(".preinit_array"), used)) void (*const kMimallocOptions)(int, char**,
                                                                                char**) = mimalloc_options_before_start;
}  // namespace

int main(int argc, char** argv) {
  using namespace repoctx;
  // Parsing frees and reallocates millions of small tree nodes per file: keep freed pages mapped
  // instead of resetting them (measured ~4% faster indexing).
  mi_option_disable(mi_option_page_reset);
  // (Large OS pages: mimalloc_options_before_start above.)
  // Freed memory stays committed instead of going back to the OS: indexing reuses it for the next file's
  // tree (sympy: half the page faults, ~4% less CPU, ~+35 MB peak RSS; docs/BENCHMARKS.md).
  mi_option_disable(mi_option_allow_decommit);
  g_argv.assign(argv, argv + argc);
  // The first Ctrl-C (or SIGTERM) asks every long loop to stop, keeping what is finished; a second one
  // ends the process at once.
  auto on_signal = [](int) {
    if (g_interrupted.exchange(true)) _exit(static_cast<int>(ExitCode::interrupted));
  };
  std::signal(SIGINT, on_signal);
  std::signal(SIGTERM, on_signal);

  CLI::App app{"repoctx: finds the repository context an LLM needs to write code"};
  app.set_version_flag("--version", "repoctx 0.1.0");
  app.require_subcommand(0, 1);
  std::string prompts_dir;
  app.add_option("--prompts-dir", prompts_dir, "directory of prompt templates overriding the built-in ones");
  Commands commands;
  add_index_commands(app, commands);
  add_retrieve_commands(app, commands);
  add_generate_commands(app, commands);
  add_evaluate_commands(app, commands);
  add_eval_commands(app, commands);
  add_llm_commands(app, commands);
  add_bench_commands(app, commands);
  add_localize_commands(app, commands);  // context-retrieval study (cli/cmd_localize.cpp)
  add_complete_commands(app, commands);  // AlignCoder: cli/cmd_complete.cpp
  add_serve_commands(app, commands);     // serving: cli/cmd_serve.cpp
  // Two faces of one program: the engine a coding assistant drives comes first in help, the research lab
  // (measures, training, benchmarks, models) under its own heading.
  static const std::set<std::string> engine = {"index",    "symbols",    "files",      "imports",  "snippets",
                                               "retrieve", "strategies", "parameters", "localize", "complete",
                                               "serve",    "mcp",        "report"};
  for (auto* sub : app.get_subcommands([](CLI::App*) { return true; }))
    if (!sub->get_group().empty())  // hidden ones stay hidden
      sub->group(engine.count(sub->get_name()) ? "Engine" : "Research lab (evaluation, training, benchmarks, models)");

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // CLI11 has its own exit codes (104-109 ...); every usage error of repoctx is 2.
    app.exit(e);
    return static_cast<int>(ExitCode::usage);
  }
  if (argc == 1) {  // a bare `repoctx`: what it can do
    std::cout << app.help();
    return 0;
  }
  if (!prompts_dir.empty()) set_prompts_dir(prompts_dir);

  try {
    for (auto& cmd : commands)
      if (cmd.app->parsed()) return cmd.run();
    // A command group given without its subcommand (`repoctx llm`): its help.
    for (auto* sub : app.get_subcommands()) {
      std::cerr << sub->help();
      return static_cast<int>(ExitCode::usage);
    }
    std::cerr << app.help();
    return static_cast<int>(ExitCode::usage);
  } catch (const Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return static_cast<int>(ExitCode::failure);
  }
}
