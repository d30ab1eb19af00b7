// The `repoctx` program: one file per command group, each registering its subcommands with CLI11 and the
// handler that runs when the subcommand was given. main() (cli/main.cpp) only registers the groups, parses,
// and turns errors into exit codes.
#pragma once

#include <functional>
#include <vector>

#include <CLI/CLI.hpp>

namespace repoctx {

struct Command {
  CLI::App* app;             // the subcommand (for nested commands, the innermost)
  std::function<int()> run;  // returns the exit code; throws Error for failures
};
using Commands = std::vector<Command>;

void add_index_commands(CLI::App& app, Commands& out);     // index, symbols, files, snippets, debug-tree
void add_retrieve_commands(CLI::App& app, Commands& out);  // retrieve, strategies, select-functions
void add_generate_commands(CLI::App& app, Commands& out);  // generate, check-bodies
void add_evaluate_commands(CLI::App& app, Commands& out);  // evaluate, table, make-tasks, _guard
void add_eval_commands(CLI::App& app, Commands& out);      // eval, train-structural, rq2
void add_llm_commands(CLI::App& app, Commands& out);       // llm *, cache *, subspace, make-test-model
// bench, bench-agent-tools, bench-sandbox, bench-syntax, bench-llm, bench-projection
void add_bench_commands(CLI::App& app, Commands& out);
// localize, localize-eval, localize-table, make-lca-tasks, count-tokens (the context-retrieval study)
void add_localize_commands(CLI::App& app, Commands& out);
// complete, complete-eval, complete-table, make-completion-tasks, train-aligncoder, complete-retrieval-eval,
// bench-completion
void add_complete_commands(CLI::App& app, Commands& out);
// serve, mcp, report, bench-serve (cli/cmd_serve.cpp)
void add_serve_commands(CLI::App& app, Commands& out);

}  // namespace repoctx
