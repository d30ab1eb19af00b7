// Repository walk: which files of a tree are source files repoctx indexes.
// Honours .gitignore files (every level), .git/info/exclude and .repoctxignore (same syntax), skips
// version-control, cache, vendored and generated trees by rule, binary files, and files above a size limit.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "repo/model.h"

namespace repoctx {

struct WalkOptions {
  uint64_t max_file_bytes = 4ull << 20;  // larger files are skipped with a warning (generated data, dumps)
  bool follow_symlinks = false;          // directory symlinks; loops are detected when true
  bool skip_vendored = true;             // vendor/, third_party/, extern/, externals/, _vendor/ ...
  bool skip_generated = true;            // "generated ... do not edit" markers, *_pb2.py
  bool skip_tests = false;
  // Every file whose first bytes hold no NUL, not only source files (language unknown for the others),
  // without a warning per skipped file: the text corpus of the study's BM25 (retrieve/study/corpus.h).
  bool every_text_file = false;
  std::vector<std::string> extra_ignore_patterns;  // gitignore syntax, relative to the root
  // Files the caller already knows unchanged (same size and mtime as when their content was checked):
  // their first bytes are not read again for the binary and generated-file rules. A re-index of a large
  // tree would otherwise open every file.
  std::function<bool(const std::string& rel, uint64_t size, int64_t mtime_ns)> known_unchanged;
  std::string fingerprint() const;  // the options that decide which files are sources
};

struct WalkedFile {
  std::string rel;  // '/'-separated, relative to the root
  std::string abs;
  uint64_t size = 0;
  int64_t mtime_ns = 0;
  Language language = Language::unknown;
};

struct SkippedFile {
  std::string rel;
  std::string reason;
};

struct WalkResult {
  std::vector<WalkedFile> files;     // sorted by rel
  std::vector<SkippedFile> skipped;  // with the rule that skipped each one
};

// Throws Error(not_found) when root is missing or not a directory.
WalkResult walk_repository(const std::string& root, const WalkOptions& opt = {});

// One .gitignore-syntax rule set anchored at a directory (exposed for tests).
class IgnoreRules {
 public:
  explicit IgnoreRules(std::string base_rel);  // base directory relative to the root ("" = root)
  ~IgnoreRules();
  IgnoreRules(IgnoreRules&&) noexcept;
  void add_lines(const std::string& text);
  void add_pattern(const std::string& line);
  // 1 = ignored, -1 = re-included by a negated pattern, 0 = no rule matched. One thread at a time: the first
  // match after a rule is added builds the matcher.
  int match(const std::string& rel, bool is_dir) const;

 private:
  struct Rule;
  struct Sets;
  const Sets& sets() const;  // built at the first match after the last rule added
  std::string base_;
  std::vector<std::unique_ptr<Rule>> rules_;
  mutable std::unique_ptr<Sets> sets_;
};

// Is the file's content generated code (a marker in its first lines)?
bool looks_generated(const std::string& head);

}  // namespace repoctx
