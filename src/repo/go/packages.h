// Go import paths for the files of a repository: a Go package is a directory, named by the module path of
// the nearest go.mod above it plus the directory's path below that go.mod.
#pragma once

#include <string>
#include <unordered_map>
#include <vector>

namespace repoctx {

// rel_paths: '/'-separated paths relative to `root` (only the *.go ones are named). A go.mod that is a
// symbolic link is ignored. The import path of a
// file's directory is, in order: the nearest go.mod at or above it inside the root (`module m` + "/" + the
// path below it; Go's own tree declares `module std`, whose packages are named by that path alone); else
// the path below the last `src/` folder above it (a GOPATH tree such as /usr/share/gocode/src); else
// root_name + "/" + the path below the root.
std::unordered_map<std::string, std::string> go_package_paths(const std::vector<std::string>& rel_paths,
                                                              const std::string& root, const std::string& root_name);

// The module path a go.mod declares ("" when it declares none).
std::string go_mod_module(const std::string& go_mod_text);

}  // namespace repoctx
