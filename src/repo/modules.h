// Dotted Python module names for the files of a repository, from the __init__.py package structure.
#pragma once

#include <string>
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

}  // namespace repoctx
