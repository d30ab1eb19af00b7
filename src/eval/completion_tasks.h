// Repository-level code-completion tasks (AlignCoder IV-A): a repository, a file, a cursor, the ground truth
// that follows the cursor and, optionally, the right context. Read from the published benchmark layouts
// (CrossCodeEval Python/Java, RepoEval line/API/function JSONL: the data cannot be downloaded here, the user
// brings it) or built from any local repository in RepoEval's style (line-level and API-level).
#pragma once

#include <map>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "retrieve/aligncoder/codebase.h"

namespace repoctx {

struct CompletionTask {
  std::string id;
  std::string benchmark;  // the table column group ("cceval-python", "repoeval-api", "flask-line", ...)
  std::string kind;       // line | api | function
  std::string repo;       // local path of the repository
  std::string file;       // relative to the repository
  int line = 1;           // cursor line, 1-based
  int column = 0;         // cursor column (bytes)
  std::string prompt;     // the benchmark's left context, when it gives one (checked against the file)
  std::string ground_truth;
  std::string right_context;
  // "path::qualname" of the repository definitions the ground truth calls (API tasks built here): the
  // LLM-free retrieval measure asks whether the retrieved context contains them.
  std::vector<std::string> definitions;
  std::string error;  // the task could not be read: the runner records this error and goes on
};

struct CompletionTaskLoadOptions {
  std::map<std::string, std::string> repos;  // repository name -> local path
  std::string repos_dir;                     // else <repos_dir>/<name>
  std::string benchmark;                     // the column name (default: from the layout and the file name)
};

// One task a line (JSONL), in any of: CrossCodeEval (prompt, groundtruth, right_context, metadata.{task_id,
// repository, file, context_start_lineno}), RepoEval (prompt, metadata.{task_id, ground_truth, fpath_tuple,
// line_no, context_start_lineno}), or repoctx's own (id, benchmark, kind, repo, file, line, column,
// ground_truth, ...). A line that cannot be read becomes a task with `error` set (the run goes on); an
// unreadable file throws Error(not_found).
std::vector<CompletionTask> load_completion_tasks(const std::string& path, const CompletionTaskLoadOptions& o);
nlohmann::json completion_task_json(const CompletionTask& t);
void write_completion_tasks(const std::string& path, const std::vector<CompletionTask>& tasks);

struct CompletionBuildOptions {
  std::string kind = "line";  // line | api | both
  int max_tasks = 100;
  uint64_t seed = 0;
  int margin_lines = 5;   // never in the first or last lines of a file
  int max_per_file = 2;   // spread over files
  int min_tokens = 3;     // a non-trivial line has at least this many code tokens
  std::string benchmark;  // default: <repository folder>-<kind>
};

// RepoEval-style tasks from a local repository: line-level = a non-trivial line inside a function body;
// API-level = a line calling a repository definition of another file (resolved through the symbol graph).
// The cursor stands at the line's indentation; the ground truth is the rest of the line. Deterministic for
// a seed (candidates are ordered by a hash of the seed and their place, not by a library's shuffle).
std::vector<CompletionTask> build_completion_tasks(const Engine& e, const std::string& repo_path,
                                                   const CompletionBuildOptions& o);

// The task's cursor in the engine's index, after checking that the file still matches the task (the text
// before the cursor ends with the prompt's last line, the ground truth starts at the cursor). Throws
// Error(bad_input / not_found) saying what does not match.
Cursor task_cursor(const Engine& e, const CompletionTask& t);

}  // namespace repoctx
