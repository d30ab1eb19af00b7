// ProjAgent 4.2, Agentic Seed Finding: the repository tools of the exploring agent (the paper's Table 1):
// ls, grep (the paper's execute_bash, which is a pattern search), read_func, read_lines, search_func and
// propose_func.
//
// The tools read the index only (RepoView: indexed file paths, contents and entities), never the file
// system and never a shell, so nothing outside the indexed repository can be reached whatever the agent
// asks: confinement holds by construction, not by path checks alone. The target's body is hidden: with a
// TargetContext, the target's file reads as its masked content (signature and docstring visible, body
// gone) and the entities defined inside the body do not exist. Every bad argument yields ok = false and an
// error saying what was wrong and what to do instead; every output is bounded (ToolLimits), with a note
// saying how much was left out.
#pragma once

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "retrieve/engine.h"

namespace repoctx {

// One tool call as the agent writes it (prompts/agent_system.txt): `path` for ls/grep/read_lines,
// `pattern` and `fixed` for grep, `name` for read_func/search_func/propose_func, `start`/`end` for
// read_lines (0 = from the first line / up to the line limit).
struct ToolCall {
  std::string tool, path, pattern, name;
  int start = 0, end = 0;
  bool fixed = false;
};

struct ToolLimits {
  size_t max_output_chars = 4000;  // whole output, truncated on a line boundary with a note
  int max_matches = 50;            // grep lines shown
  int max_lines = 200;             // read_lines / read_func lines shown
  int max_entries = 200;           // ls entries, search_func results
  size_t max_line_chars = 300;     // one shown line (minified code, data tables)
  size_t max_pattern_chars = 1000;
  size_t max_name_chars = 500;      // read_func / search_func / propose_func names
  int64_t regex_max_mem = 8 << 20;  // RE2's budget: a pattern that compiles past it is an error
};

struct ToolResult {
  bool ok = false;
  std::string output;  // what the agent reads (empty when !ok)
  std::string error;   // what was wrong and what to do (empty when ok)
  // What the call touched, for the compaction summary (prompts/agent_compaction.txt): repository paths
  // of files shown, directories listed, entity indices of functions read, listed or proposed.
  std::vector<std::string> files, dirs;
  std::vector<int> functions;
  std::string text() const { return ok ? output : "error: " + error; }
};

class RepoTools {
 public:
  // `ctx` (may be null) must outlive the tools; its target's body is hidden from every tool.
  RepoTools(const Engine& e, const TargetContext* ctx = nullptr, ToolLimits l = {});

  // "" or "." = the root. Sub-directories (with a trailing '/', and how many indexed files they hold)
  // first, then files (with their line counts); only indexed source files exist for the tools.
  ToolResult ls(const std::string& path);
  // RE2 (linear time, no backreferences or lookaround; "(?i)" for case-insensitive) or a fixed string,
  // matched line by line in every file under `path` ("" = everywhere; a directory or a file).
  // "path:line: text" per match, at most max_matches, then a count of the rest.
  ToolResult grep(const std::string& pattern, const std::string& path, bool fixed);
  // "path::Qual.name", or a qualname / short name that names one function or class in the repository
  // (otherwise the candidates are listed). Every definition of that qualname in the file, numbered lines.
  ToolResult read_func(const std::string& name);
  // Lines [start, end] (1-based, inclusive) of a file, numbered; end past the file is clamped; at most
  // max_lines, with a note telling where to continue.
  ToolResult read_lines(const std::string& path, int start, int end);
  // Functions, methods and classes whose qualname contains every whitespace-separated word of `query`
  // (case-insensitive): "path::qualname  signature" per line, exact names first.
  ToolResult search_func(const std::string& query);
  // propose_func's resolution: the entity index of a function or method (not a class, not the target, not
  // a hidden one). Same name forms as read_func; on failure *error says why (ambiguity lists candidates).
  std::optional<int> resolve_function(const std::string& name, std::string* error) const;
  // Dispatch on c.tool: ls, grep (alias execute_bash), read_func, read_lines, search_func (query in
  // `name`, or `pattern` when `name` is empty) and propose_func, which only validates and resolves (its
  // output is the function's "path::qualname", functions = {entity}). Unknown tools list the valid ones.
  ToolResult call(const ToolCall& c);

  // A directory tree of the repository (the agent's first message, "repository structure"): directories
  // down to `depth` levels with their file counts, and the files of the root; bounded by max_chars.
  std::string structure(int depth = 2, size_t max_chars = 3000) const;
  // The name read_func and propose_func accept for an entity: "path::qualname".
  std::string function_name(int entity) const;

 private:
  struct Dir {
    std::set<std::string> subdirs;  // names
    std::vector<int> files;         // file indices, by path
    int total_files = 0;            // under it, recursively
  };
  struct Located {
    std::string path;  // normalised, relative to the root ("" = root)
    int file = -1;     // when a file
    bool is_dir = false;
  };

  ToolResult dispatch(const ToolCall& c);
  const std::string& text_of(int file) const;
  bool exists(int entity) const;  // not defined inside the hidden body
  // Normalises a path the agent wrote and finds it; on failure *error says why and what is close.
  std::optional<Located> locate(const std::string& path, std::string* error) const;
  std::string close_paths(const std::string& path) const;
  // Entities a read_func / propose_func name stands for; *error explains an empty or ambiguous answer.
  std::vector<int> lookup(const std::string& name, bool callables_only, std::string* error) const;
  // lookup's steps: whether an entity is of the kind asked for and visible; the entities `qual` names in
  // the file at `path` ("path::qual").
  bool lookup_accepts(int entity, bool callables_only) const;
  std::vector<int> lookup_in_file(const std::string& path, const std::string& qual, bool callables_only,
                                  std::string* error) const;
  std::string close_names(const std::string& name, bool callables_only) const;
  std::string numbered(int file, int first, int last, int* shown_last, size_t budget) const;

  const Engine& e_;
  const TargetContext* ctx_;
  ToolLimits lim_;
  std::map<std::string, Dir> dirs_;  // "" = root
};

// The ToolCall in an agent's JSON turn ({"thought": ..., "tool": ..., arguments}); arguments may also be
// nested under "args"/"arguments". Numbers given as strings ("12") and booleans as "true" are accepted.
// Throws Error(bad_input) when "tool" is missing or an argument has an unusable type.
ToolCall tool_call_from_json(const nlohmann::json& j);

}  // namespace repoctx
