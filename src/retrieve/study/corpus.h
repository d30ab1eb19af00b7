// The files the study's strategies read: its BM25 corpus, the context they gather and the files
// add_to_context may name. The indexed files come first (document id = file id), then the repository's
// other files as plain text, read from the index's root with the walker's ignore rules:
//   text     every other file that is text (no NUL in its first 8 KiB, valid UTF-8, at most 1 MiB), so
//            recall is not capped by file type: a patch to docs/*.rst or setup.cfg is retrievable;
//   study    only the extensions of the study's code (py c cpp h hpp java ts json yaml yml sh go rb kt; its
//            md, rst and txt are commented out) and not its excluded folders (.git boost Python24
//            third_party AppServer/lib): its corpus exactly;
//   indexed  the indexed source files only.
// Functions and classes exist for indexed files only; a text file's lines belong to no entity.
#pragma once

#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "retrieve/engine.h"

namespace repoctx {

class StudyCorpus {
 public:
  // Throws Error(usage) on an unknown `files` name. A root that is gone leaves the indexed files only, and
  // note() says so.
  StudyCorpus(const Engine& e, const std::string& files);
  const Engine& engine() const { return e_; }
  int size() const { return static_cast<int>(n_indexed_ + extra_.size()); }
  int indexed() const { return n_indexed_; }
  // The file id of an indexed document, -1 for a text file.
  int file(int doc) const { return doc < n_indexed_ ? doc : -1; }
  const std::string& path(int doc) const;
  const std::string& content(int doc) const;
  int line_count(int doc) const;
  std::optional<int> find(const std::string& path) const;
  // The documents of the BM25 corpus, in path order (the excluded ones of `study` are not).
  const std::vector<int>& searched() const { return searched_; }
  const std::string& files() const { return files_; }
  const std::string& note() const { return note_; }

 private:
  struct TextFile {
    std::string path, content;
    int line_count = 0;
  };
  const Engine& e_;
  std::string files_, note_;
  int n_indexed_ = 0;
  std::vector<TextFile> extra_;
  std::unordered_map<std::string, int> extra_by_path_;
  std::vector<int> searched_;
};

// One corpus per engine and `files` name, read at first use (Engine::derived).
const StudyCorpus& study_corpus(const Engine& e, const std::string& files);

}  // namespace repoctx
