// The per-run copy of a repository that a task's tests run on, so that the user's tree is never edited: no
// journal, nothing to restore, and a run killed at any moment (SIGKILL of every process) leaves the user's
// files as they were. The target file is written as a new file (a new inode) with the generated body.
//
// Unchanged files are hard links only where the test cannot change the shared inode: a link is made for a file
// the test's identity neither owns nor may write through its group or other bits (tests run without
// capabilities in the sandbox, so they can neither write nor chmod such a file). Every other file is copied
// (a reflink where the filesystem has them, else copy_file_range), with its mode and modification time, so
// Python's bytecode caches stay valid. A hard link to a file the test could write would let a test (or a
// generated body) edit the user's file through the link; bubblewrap 0.8 cannot mount thousands of files
// read-only cheaply (each read-only bind re-reads the mount table: 43 s for sympy's 2,973 files), so copying
// is the safe choice for the user's own files. Symlinks are recreated as they are; other special files are
// left out; so are the index folder `.repoctx` and the folders in `exclude` (the results folder; a git work
// tree's .git, which the sandbox shows read-only instead).
#pragma once

#include <sys/types.h>

#include <map>
#include <string>
#include <vector>

namespace repoctx {

struct ScratchPolicy {
  bool link_unwritable = false;  // hard-link what the test cannot write (true only in the sandbox)
  uid_t test_uid = 0;            // the identity the test runs under
};

struct ScratchStats {
  int dirs = 0, linked = 0, copied = 0, symlinks = 0, skipped = 0;
  double seconds = 0;
};

class ScratchTree {
 public:
  // Builds the copy of `repo` at `path` (which must not exist), with `replace` (path relative to the repository
  // -> content) written as new files; each must exist in the repository. Throws Error(not_found) for a missing
  // repository or replaced file, Error(bad_input) when `path` cannot be written.
  ScratchTree(const std::string& repo, std::string path, const std::map<std::string, std::string>& replace,
              const ScratchPolicy& policy, const std::vector<std::string>& exclude = {});
  ~ScratchTree();  // removes the copy
  ScratchTree(const ScratchTree&) = delete;
  ScratchTree& operator=(const ScratchTree&) = delete;

  const std::string& path() const { return path_; }
  const ScratchStats& stats() const { return stats_; }

 private:
  std::string path_;
  ScratchStats stats_;
};

// The name of the next scratch tree of this process under `root`: <host>-<pid>-<serial>.
std::string next_scratch_name();
// Removes the scratch trees under `root` left by processes of this host that no longer run (SIGKILL).
void remove_stale_scratch(const std::string& root);

}  // namespace repoctx
