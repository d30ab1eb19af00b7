// The persistent index: one SQLite database per repository holding files (path, content hash, content),
// entities, imports, references and base snippets, with BM25 term vectors for entities and snippets.
//
// Incremental: a re-index re-parses only files whose content hash changed (size+mtime is the fast
// pre-check) and deletes rows of removed files. Crash-safe: each batch of files is one transaction, and a
// file's old rows are replaced in the same transaction as its new ones, so a run killed at any point leaves
// a consistent index that the next run completes; meta.complete says whether the last run finished.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>

#include "repo/walker.h"
#include "util/cancel.h"

namespace repoctx {

inline constexpr int kIndexSchemaVersion = 1;
// Bumped whenever extraction (parsers, documents, snippets, tokenizer) changes what a file yields: an
// index built by another extractor version is re-parsed in full.
inline constexpr const char* kExtractorVersion = "code-v1.11";

struct IndexOptions {
  std::string db_path;  // empty = default_index_path(repo)
  WalkOptions walk;
  int threads = 0;          // parser threads; 0 = all cores
  int snippet_lines = 15;   // AlignCoder's L (the paper gives no value; 15 is RLCoder's)
  size_t batch_files = 64;  // files per transaction
  bool progress = true;
  bool force = false;    // re-parse every file
  bool rebuild = false;  // delete the index (damaged, or of a newer repoctx) and build it anew
  // An automatic refresh (before a query): an existing index keeps the walk rules and snippet length it was
  // built with (stored in its meta table) instead of `walk`'s and `snippet_lines`' values.
  bool keep_stored_settings = false;
  // Test hook: behave as if interrupted (Ctrl-C) once this many files are committed; 0 = never.
  // (REPOCTX_DEBUG_KILL_AFTER_FILES=N makes the process SIGKILL itself instead, for crash tests.)
  size_t interrupt_after_files = 0;
};

struct IndexStats {
  size_t files_seen = 0, parsed = 0, unchanged = 0, touched = 0, removed = 0, skipped = 0;
  size_t files_with_errors = 0;
  size_t partial = 0;  // files indexed only in part (nesting beyond the extractors' limits, document budget)
  uint64_t bytes_parsed = 0;
  size_t entities = 0, references = 0, snippets = 0;
  double seconds = 0;
  bool complete = false;
  std::string db_path;
};

// <repo>/.repoctx/index.db when the repository is a git work tree or already has a .repoctx folder;
// otherwise (installed packages, read-only trees) ~/.cache/repoctx/indexes/<name>-<hash of path>/index.db.
// REPOCTX_INDEX_DIR overrides the cache location.
std::string default_index_path(const std::string& repo);

IndexStats build_index(const std::string& repo, const IndexOptions& opt);

}  // namespace repoctx
