#include "retrieve/study/corpus.h"

#include <algorithm>
#include <map>
#include <memory>
#include <mutex>

#include "repo/walker.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/log.h"
#include "util/text.h"

namespace repoctx {
namespace {

constexpr uint64_t kMaxTextFileBytes = 1u << 20;

// The study's corpus (its retrieval/file_extensions.py: the globs and filter_docs' excluded substrings).
bool in_study_corpus(const std::string& path) {
  static const char* const extensions[] = {".py",   ".c",    ".cpp", ".h",  ".hpp", ".java", ".ts",
                                           ".json", ".yaml", ".yml", ".sh", ".go",  ".rb",   ".kt"};
  static const char* const excluded[] = {".git", "boost", "Python24", "third_party", "AppServer/lib"};
  for (const char* x : excluded)
    if (path.find(x) != std::string::npos) return false;
  return std::any_of(std::begin(extensions), std::end(extensions),
                     [&](const char* ext) { return ends_with(path, ext); });
}

int lines_in(const std::string& s) {
  return s.empty() ? 0 : static_cast<int>(line_starts(s).size()) - (s.back() == '\n' ? 1 : 0);
}

}  // namespace

StudyCorpus::StudyCorpus(const Engine& e, const std::string& files) : e_(e), files_(files) {
  if (files != "text" && files != "study" && files != "indexed")
    throw Error(ExitCode::usage, "unknown corpus '" + files +
                                     "': use text (every text file), study (the study's "
                                     "file types) or indexed (the indexed source files)");
  const RepoView& v = e.view();
  n_indexed_ = static_cast<int>(v.files().size());
  if (files != "indexed") {
    WalkOptions wo;
    wo.every_text_file = true;
    wo.max_file_bytes = kMaxTextFileBytes;
    try {
      for (auto& wf : walk_repository(v.root(), wo).files) {
        throw_if_interrupted("nothing is kept of the corpus");
        // .repoctx-* files are repoctx's own (the marker of a tree written from git objects).
        if (v.file_by_path(wf.rel) || starts_with(wf.rel, ".repoctx") || (files == "study" && !in_study_corpus(wf.rel)))
          continue;
        auto content = read_file_if_present(wf.abs);
        if (!content || !is_valid_utf8(*content)) continue;
        int lines = lines_in(*content);
        extra_by_path_.emplace(wf.rel, n_indexed_ + static_cast<int>(extra_.size()));
        extra_.push_back({wf.rel, std::move(*content), lines});
      }
    } catch (const Error& err) {
      if (err.code() == ExitCode::interrupted) throw;
      note_ = "the repository's other files are not read (" + std::string(err.what()) + "): the indexed files only";
      log_warn("study corpus: {}", note_);
    }
  }
  for (int d = 0; d < size(); ++d)
    if (files != "study" || in_study_corpus(path(d))) searched_.push_back(d);
  std::sort(searched_.begin(), searched_.end(), [&](int a, int b) { return path(a) < path(b); });
}

const std::string& StudyCorpus::path(int doc) const {
  return doc < n_indexed_ ? e_.view().files()[static_cast<size_t>(doc)].path
                          : extra_[static_cast<size_t>(doc - n_indexed_)].path;
}

const std::string& StudyCorpus::content(int doc) const {
  return doc < n_indexed_ ? e_.view().content(doc) : extra_[static_cast<size_t>(doc - n_indexed_)].content;
}

int StudyCorpus::line_count(int doc) const {
  return doc < n_indexed_ ? e_.view().files()[static_cast<size_t>(doc)].line_count
                          : extra_[static_cast<size_t>(doc - n_indexed_)].line_count;
}

std::optional<int> StudyCorpus::find(const std::string& p) const {
  if (auto f = e_.view().file_by_path(p)) return *f;
  auto it = extra_by_path_.find(p);
  if (it == extra_by_path_.end()) return std::nullopt;
  return it->second;
}

namespace {
struct CorpusCache {
  std::mutex mu;
  std::map<std::string, std::unique_ptr<StudyCorpus>> by_files;
};
}  // namespace

const StudyCorpus& study_corpus(const Engine& e, const std::string& files) {
  auto& cache = e.derived<CorpusCache>();
  std::lock_guard lk(cache.mu);
  auto& slot = cache.by_files[files];
  if (!slot) slot = std::make_unique<StudyCorpus>(e, files);
  return *slot;
}

}  // namespace repoctx
