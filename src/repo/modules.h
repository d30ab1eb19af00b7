// Dotted Python module names for the files of a repository, from the __init__.py package structure.
#pragma once

#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace repoctx {

// rel_paths: '/'-separated paths relative to the repository root. root_name: the root folder's name,
// used as the top package when the root itself holds an __init__.py (an installed package such as
// /usr/lib/python3/dist-packages/sympy). A file inside a chain of packages is named from the top-most
// package; a file outside any package (scripts, PEP 420 namespace folders) by its root-relative path.
// Java files are named by their package declaration later, at parse time.
std::unordered_map<std::string, std::string> python_module_names(const std::vector<std::string>& rel_paths,
                                                                 const std::string& root_name);

// "a/b/c.py" -> "a.b.c", "a/b/__init__.py" -> "a.b"
std::string module_from_relpath(const std::string& rel);

// The folder of a '/'-separated relative path ("a/b/c.py" -> "a/b", "c.py" -> "").
std::string parent_folder(const std::string& rel);

// "a" + "b" -> "a/b"; either part empty -> the other.
std::string join_relative(const std::string& a, const std::string& b);

// "a/b/../c/./d" -> "a/c/d" in `out` ("" = the start itself); false when the path climbs above its start.
bool normalise_relative_path(std::string_view path, std::string& out);

// The first 64 KiB of the file at `rel` below root (more than any real manifest's head), or nothing when it is
// missing, not a regular file or a symbolic link (the index reads nothing outside the repository).
std::optional<std::string> read_manifest_head(const std::string& root, const std::string& rel);

// The nearest manifest (go.mod, Cargo.toml) at or above folders of a repository, each folder walked once.
// A manifest counts when `read` gives its head a non-empty value (the module path, the crate name); one that
// is a symbolic link is not read (the index reads nothing outside the repository), and only its first 64 KiB
// are (more than any real manifest's head, where these values live).
class NearestManifest {
 public:
  struct Found {
    bool found = false;
    std::string dir;    // the manifest's folder, relative to the root ("" = the root)
    std::string value;  // what `read` made of it
  };
  NearestManifest(std::string root, std::string file_name, std::function<std::string(const std::string&)> read)
      : root_(std::move(root)), file_name_(std::move(file_name)), read_(std::move(read)) {}
  // For a folder relative to the root: the nearest manifest at or above it, up to the root.
  const Found& at(const std::string& dir);

 private:
  std::string root_, file_name_;
  std::function<std::string(const std::string&)> read_;
  std::unordered_map<std::string, Found> of_dir_;
};

}  // namespace repoctx
