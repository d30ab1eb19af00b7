// A private temporary folder, removed with everything in it when the object goes (benchmarks' scratch
// files, test repositories). mkdtemp(3) makes the name unpredictable and the folder 0700.
#pragma once

#include <filesystem>
#include <string>

namespace repoctx {

// Removes `path` and everything below it, first giving the owner access to folders a test made read-only.
// Never follows symlinks. Errors are ignored (what cannot be removed stays).
void remove_tree(const std::filesystem::path& path);

class TempDir {
 public:
  // Under $TMPDIR (else /tmp), named <prefix>XXXXXX; throws Error(failure) when it cannot be made.
  explicit TempDir(const std::string& prefix = "repoctx-");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::filesystem::path& path() const { return path_; }
  std::string str() const { return path_.string(); }
  std::filesystem::path operator/(const std::string& rel) const { return path_ / rel; }
  // Writes `content` to path()/rel, creating folders.
  void write(const std::string& rel, const std::string& content) const;
  std::string read(const std::string& rel) const;

 private:
  std::filesystem::path path_;
};

}  // namespace repoctx
