// What the commands share: the option groups every command spells the same way (repository and index,
// output, models), opening an index for queries, and the JSON forms of results.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include "index/index.h"
#include "llm/config.h"
#include "retrieve/retriever.h"

namespace repoctx {

// --------------------------------------------------------------------------------------------- output
struct OutputOptions {
  bool quiet = false;
  bool verbose = false;
  bool json = false;
};
// -q/--quiet, -v/--verbose and (when `json`) --json, in the "Output" group.
void add_output_options(CLI::App* c, OutputOptions& o, bool json = true);

void print_json(const nlohmann::json& j);  // stdout, invalid UTF-8 replaced

// ------------------------------------------------------------------------------------------ checks
// -k/--top-k of every command: how many results, 1..kMaxTopK (0 or a negative number is a usage error, not
// an empty answer).
inline constexpr int kMaxTopK = 10000;
CLI::Validator top_k_range();
// A finite number in [lo, hi] (CLI::Range lets NaN through: every comparison with it is false), e.g.
// seconds between polls; `what` names the unit in the message.
CLI::Validator finite_range(double lo, double hi, const std::string& what);
// Ends a one-shot command that has written its output, without running destructors: the loaded index of a
// large repository is tens of thousands of entities with their strings, and freeing them one by one at exit
// is a measurable part of a cold `retrieve` (docs/BENCHMARKS.md "Serving"); the OS takes the whole heap back
// at once. Only for commands with nothing left to finish: stdout and stderr are flushed here, the index was
// only read, and no LLM session (whose cache is written as it goes) is open.
[[noreturn]] void exit_after_output(int code);

// ------------------------------------------------------------------------------------- repository
struct RepoOptions {
  std::string repo;
  std::string db;
  bool no_refresh = false;
  double max_file_mb = 4.0;
  bool follow_symlinks = false;
  bool keep_vendored = false;
  bool keep_generated = false;
  int threads = 0;
  int snippet_lines = 15;
};
// The positional repository, --db, and the walk/parse options in the "Index" group; `refresh`: also
// --no-refresh (commands that query an index refresh it first unless told not to).
void add_repo_options(CLI::App* c, RepoOptions& o, bool refresh = true);
IndexOptions index_options(const RepoOptions& o, bool progress);
std::string db_path_for(const RepoOptions& o);
// Queries see the tree as it is now: an incremental index run first (cheap when nothing changed), then
// the index is opened.
std::unique_ptr<Engine> open_engine(const RepoOptions& o, const OutputOptions& out);
// open_engine's first half: checks the repository exists and refreshes its index unless --no-refresh.
void refresh_index(const RepoOptions& o, const OutputOptions& out);
// A warning when the walk found no source file (an empty index answers every query with nothing).
void warn_if_empty(const IndexStats& st, const std::string& repo);

// ----------------------------------------------------------------------------------------- models
using ModelOptions = ModelFlags;  // llm/config.h
// --config, --model, --endpoint, ... in the "Model" group.
void add_model_options(CLI::App* c, ModelOptions& o);
// The configuration the flags and the config file give (flags win). The config file is read here, so only
// commands that use a model read it.
LlmConfig llm_config(const ModelOptions& o);

// Models for `needs`: loads only what is needed; returns the session that owns them (null when nothing is
// needed, so that no config file is read and no model loaded).
struct ModelSet {
  std::unique_ptr<LlmSession> session;
  Models models;
};
ModelSet open_models(const ModelOptions& o, const ModelNeeds& needs);

// --------------------------------------------------------------------------------------- results
nlohmann::json hit_json(const Engine& e, const Hit& h, int rank, bool with_text, const TargetContext* ctx);
// --param NAME=VALUE (repeatable): VALUE is JSON when it parses as JSON (numbers, true/false), else a string.
// With `completion`, names of completion parameters (samples, candidates, pool, ...) set those instead.
void apply_params(ProceduralParams& p, const std::vector<std::string>& kvs, CompletionParams* completion = nullptr);
struct GenerationParams;
// generate's and evaluate's --param: the generation table's names, else the procedural ones.
void apply_params(GenerationParams& g, const std::vector<std::string>& kvs);
// The same for every strategy: a name of the context-retrieval study's parameters (StudyParams) sets that,
// any other name a procedural one.
void apply_params(RetrieverOptions& ro, const std::vector<std::string>& kvs);
// A file of target specs, one path::Qual.name a line ('#' comments and blank lines skipped); throws
// Error(not_found) naming the file when it cannot be read.
std::vector<std::string> read_target_specs(const std::string& path);
// "a,b, c" -> {"a", "b", "c"} (empty items dropped).
std::vector<std::string> split_list(const std::string& csv);
// Writes `text` to `path`, or throws Error(bad_input) naming the file.
void write_file(const std::string& path, const std::string& text);
// This binary's path (re-run as a child by evaluate --jobs, the guard, the benchmarks).
std::string self_exe();
// The command line as given (evaluate --jobs re-runs itself per job); set by main().
extern std::vector<std::string> g_argv;

}  // namespace repoctx
