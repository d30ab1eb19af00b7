// repoctx's public C++ API, for programs that embed the engine (the HTTP server, the MCP server and the
// Python module are built on it, so all of them offer the same operations with the same parameters).
//
//   #include <repoctx/repoctx.h>
//   repoctx::api::Index ix("/path/to/repo");                      // indexes (incrementally) and loads
//   repoctx::api::RetrieveParams p;
//   p.query = "parse a json config file";
//   p.k = 10;
//   for (const auto& h : ix.retrieve(p).hits) std::cout << h.target << " " << h.score << "\n";
//
// Every operation takes one parameter struct whose defaults are the CLI's. Results are plain structs;
// traces (whose shape depends on the strategy) are JSON text. Errors throw repoctx::Error (util/error.h):
// what() names the problem and what to do, code() is the CLI's exit code (2 usage, 3 not found, 4 bad
// input, 5 LLM backend, 130 interrupted).
//
// Thread safety: every const operation may run concurrently with any other, refresh() included. An Index
// serves from an immutable snapshot of the index (a loaded engine); refresh() indexes what changed and then
// swaps in a new snapshot, so a reader sees either the old or the new index, never a mix. Operations that
// call a model run one at a time (the backends are not re-entrant).
#pragma once

#include <cstdint>
#include <exception>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace repoctx::api {

// How the repository is walked and indexed (the CLI's "Index" options).
struct IndexParams {
  std::string db;            // index database; empty = <repo>/.repoctx/index.db (git trees) or the user cache
  double max_file_mb = 4.0;  // larger source files are skipped
  bool follow_symlinks = false;
  bool keep_vendored = false;   // index vendor/, third_party/, ...
  bool keep_generated = false;  // index files marked as generated
  int threads = 0;              // parser threads; 0 = all cores
  int snippet_lines = 15;       // AlignCoder's split-aggregate snippet length L
};

// Which models the operations that need one use (the CLI's "Model" options; docs/LLM.md). Nothing is
// loaded until an operation needs it.
struct ModelParams {
  std::string config;   // model configuration file (JSON)
  std::string backend;  // "llama" (in-process GGUF) or "openai" (OpenAI-compatible server)
  std::string model;    // GGUF file or model name
  std::vector<std::string> endpoints;
  std::string embed_backend, embed_model;
  std::vector<std::string> embed_endpoints;
  // ProjAgent's snippet validation (its own embedding model in the paper); empty = the embedding model.
  std::string snippet_embed_backend, snippet_embed_model;
  std::vector<std::string> snippet_embed_endpoints;
  std::string hidden_model;  // GGUF whose hidden states project steps (procedural)
  int threads = 0, ctx = 0;  // llama backend
  std::string cache;         // LLM cache database; empty = ~/.cache/repoctx/llm-cache.db
  bool no_cache = false;     // do not read cached results (fresh results are still stored)
};

struct OpenParams {
  IndexParams index;
  ModelParams models;
  bool refresh = true;  // index what changed before loading; false = load the index as it is (it must exist)
};

struct RefreshStats {
  std::string db;
  int64_t files = 0, parsed = 0, unchanged = 0, removed = 0, skipped = 0, with_errors = 0;
  int64_t entities = 0;  // entities of the files parsed in this run
  double seconds = 0;
  bool complete = true;   // false: interrupted (the index is consistent; a refresh finishes it)
  bool reloaded = false;  // something changed and a new snapshot now serves
};

// Every field is declared once, with its meaning, range and choices, in api/json.cpp's retrieve_fields(): the
// CLI's options, the HTTP and MCP schemas, the Python keywords and docs/PARAMETERS.md come from there.
struct RetrieveParams {
  std::string target;  // "path/to/file.py::Qualified.name": context for this function, its body hidden
  std::string query;   // free text (instead of, or overriding, the target's signature and docstring)
  // see strategies(); empty = structural for a target, cursor-deps for a cursor, sparse for a query
  std::string strategy;
  int k = 20;
  bool with_text = false;           // each hit's source text
  bool exclude_tests = false;       // leave test files out (the next hits take their places)
  std::string corpus = "entities";  // sparse: "entities" or "snippets"
  double k1 = 1.5, b = 0.75;        // BM25
  bool pool_methods = false;        // imports: also rank methods of pool classes
  bool bm25_only = false;           // imports: ignore the embedder
  std::string structural_model;     // structural: weights file; empty = the shipped model
  std::string locate_model;         // locate: model file; empty = the built-in one
  std::string model_file;           // aligncoder, rlcoder: AlignRetriever model; empty = the built-in one
  // A completion cursor (cursor-deps, aligncoder and its baselines): the file being written, the cursor's
  // line (1-based) and column (bytes); the text from the cursor on is treated as absent.
  std::string file;
  int line = 0, column = 0;
  // strategy parameters NAME -> VALUE, the names of the CLI's `retrieve --param` (procedural's, listed in its
  // trace's "params"; completion's; the study's; imports_order, hybrid_fusion), VALUE as JSON when it parses
  // (numbers, booleans), else a string.
  std::map<std::string, std::string> params;
  bool trace = false;  // return the strategy's trace (procedural) as JSON text
};

struct Hit {
  int rank = 0;
  std::string type;                    // "entity" | "snippet" | "file"
  std::string file;                    // path relative to the repository root
  std::string qualname, kind, target;  // entities: "Cls.meth", "method", "path::Cls.meth"
  int start_line = 0, end_line = 0;
  double score = 0;
  std::string label;        // e.g. "dependency" (AlignCoder dependency snippets)
  std::string description;  // procedural: what the context step does
  std::string text;         // with_text
  std::map<std::string, double> features;
};

struct PlanStep {
  int step = 0;
  std::string description;
  bool confirmed = false;
  std::vector<int> hits;  // ranks of the hits serving this step
};

struct RetrieveResult {
  std::string strategy, target, query;  // query: the text the strategy searched with
  std::string score;                    // what a hit's score means for this strategy (not comparable across)
  std::vector<Hit> hits;
  std::vector<PlanStep> plan;  // procedural: the target's steps
  std::string trace;           // JSON text (params.trace), else empty
  std::string usage;           // JSON text: LLM calls, cached calls, tokens by stage (empty without a model)
};

// The context-retrieval study's localization (the CLI's `repoctx localize`): the line ranges a change request
// (an issue, a commit message) needs, gathered by one of the study's strategies (localize_strategies()) until
// the strategy stops (study-bm25: when the context holds 500 tokens). Only study-bm25 runs without a model.
struct LocalizeParams {
  std::string request;                  // the issue text or commit message
  std::string strategy = "study-bm25";  // see localize_strategies()
  bool with_text = false;               // each range's source text
  std::string locate_model;             // locate: model file; empty = the built-in one
  // study parameters NAME -> VALUE (the CLI's --param: context_tokens, chunk_chars, ...; the names of
  // RetrieveParams::params are accepted too), VALUE as JSON when it parses, else a string
  std::map<std::string, std::string> params;
  bool trace = false;  // return the strategy's trace as JSON text
};

struct LocalizeResult {
  std::string strategy;
  std::string score;  // what a hit's score means for this strategy
  int context_tokens = 0;
  std::string stop_reason;  // why the strategy stopped gathering
  std::vector<Hit> hits;
  std::string trace;  // JSON text (params.trace), else empty
  std::string usage;  // JSON text: LLM calls by stage (empty without a model)
};

struct SymbolsParams {
  std::string kind;  // class, function, method, variable, attribute, ... (empty = all)
  std::string file;  // only this file (path relative to the root)
  std::string name;  // qualified names containing this text, case-insensitive (empty = all)
  int limit = 1000;  // at most this many (0 = no limit)
};

struct Symbol {
  std::string file, module, qualname, kind, signature, target;
  int start_line = 0, end_line = 0, decorated_start_line = 0;
};

struct FilesParams {
  bool errors_only = false;  // only files with syntax errors
};

struct FileInfo {
  std::string path, module, language;
  int lines = 0, entities = 0, syntax_errors = 0;
};

struct SnippetsParams {
  std::string file;         // path relative to the root
  bool dependency = false;  // AlignCoder dependency snippets of the file's imports instead of its own snippets
};

struct Snippet {
  int start_line = 0, end_line = 0;  // 0 for dependency snippets
  std::string label;                 // dependency snippets: what they come from
  std::string text;
};

// Reads and searches are confined to the indexed files of the repository: a path outside it (absolute,
// "..", "~") is refused with an error that says so, like the procedural agent's tools.
struct ReadParams {
  std::string path;
  int start_line = 1;
  int end_line = 0;  // 0 = start_line + max_lines - 1
  int max_lines = 400;
  int max_chars = 40000;
};

struct GrepParams {
  std::string pattern;  // RE2 syntax ("(?i)" for case-insensitive), or a literal with fixed
  std::string path;     // a directory or a file under the root; empty = everywhere
  bool fixed = false;
  int max_matches = 100;
  int max_chars = 40000;
};

// Bounded, numbered text ("path:line: text" per grep match; "   12  code" per read line), with a note
// saying what was left out.
struct ToolText {
  std::string text;
};

struct GenerateParams {
  std::string target;                // "path/to/file.py::Qualified.name", its body hidden then written
  std::string method = "projagent";  // projagent, its ablations, sparse, dense, same-file
  int prompt_budget_tokens = 12000;
  int max_tokens = 4096;
  int max_rounds = 10;                        // static-analysis feedback rounds
  std::map<std::string, std::string> params;  // procedural parameters, as in RetrieveParams
  bool trace = false;
};

struct GenerateResult {
  std::string method, target;
  std::string body, function_text, diff;
  int rounds = 0;
  std::vector<std::string> findings;  // static-check findings left after the last round
  std::string trace;                  // JSON text (params.trace)
  std::string usage;                  // JSON text
};

struct StrategyInfo {
  std::string name, description, needs;  // needs: "", "llm+hidden states", "embedder", ...
  std::string score;                     // what a hit's score means (the CLI's table header says the same)
};

struct IndexInfo {
  std::string root, db;
  int64_t files = 0, entities = 0, snippets = 0;
  bool complete = true;
  bool fast_load = false;   // loaded from the persisted query image (no rebuild at load)
  double load_seconds = 0;  // time to load the current snapshot
  int64_t generation = 0;   // snapshots loaded so far (1 = the first)
};

struct CacheStatsRow {
  std::string op, model;
  int64_t entries = 0, prompt_tokens = 0, completion_tokens = 0;
};
struct CacheStats {
  std::string path;
  std::vector<CacheStatsRow> rows;
  int64_t hits = 0, misses = 0;  // this process
};

class Index {
 public:
  // Indexes `repo` (unless params.refresh is false) and loads it. Throws Error(not_found) for a missing
  // repository or index, Error(bad_input) for a damaged or foreign index.
  explicit Index(const std::string& repo, const OpenParams& params = {});
  ~Index();
  Index(Index&&) noexcept;
  Index& operator=(Index&&) noexcept;
  Index(const Index&) = delete;

  // Indexes what changed since the last refresh and, when anything did, swaps in a new snapshot.
  // Concurrent refreshes are serialised. `force`: re-parse every file.
  RefreshStats refresh(bool force = false);
  // Builds now, for the snapshot current at the call, what LLM-free retrieval otherwise builds on the first
  // request touching each file (the structural strategy's per-file facts: references resolved, member use
  // counts, import closures; on sympy such a first request cost 6-8x a warm one). Returns that snapshot's
  // generation (IndexInfo::generation), or 0 when `should_stop` returned true first. Thread-safe; requests
  // running meanwhile share what it builds. `repoctx serve` runs it in the background after each load.
  int64_t warm(const std::function<bool()>& should_stop = {}) const;

  RetrieveResult retrieve(const RetrieveParams& p) const;
  LocalizeResult localize(const LocalizeParams& p) const;
  std::vector<Symbol> symbols(const SymbolsParams& p = {}) const;
  std::vector<FileInfo> files(const FilesParams& p = {}) const;
  std::vector<Snippet> snippets(const SnippetsParams& p) const;
  ToolText read(const ReadParams& p) const;
  ToolText grep(const GrepParams& p) const;
  GenerateResult generate(const GenerateParams& p) const;  // needs a model; writes nothing to the repository
  IndexInfo info() const;
  CacheStats cache_stats() const;  // the LLM cache this Index uses
  bool has_llm() const;            // a model is configured (procedural retrieval, generation)

  const std::string& repo() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

std::vector<StrategyInfo> strategies();
std::vector<StrategyInfo> localize_strategies();  // the strategies localize() runs
std::vector<std::string> generation_methods();

// The exit code an error stands for (2 usage, 3 not found, 4 bad input, 5 LLM backend, 130 interrupted;
// 1 for any other exception), so that callers can map errors without the engine's headers.
int error_code(const std::exception& e);

}  // namespace repoctx::api
