// AlignCoder III-A2 dependency snippets: for the intra-repository imports of a file, one snippet per
// imported class (its signature, its methods' signatures, nested classes and their methods' signatures)
// and one snippet aggregating the signatures of the imported functions and methods.
#pragma once

#include <string>
#include <vector>

#include "retrieve/engine.h"

namespace repoctx {

struct DependencySnippet {
  std::string label;  // "class pkg.mod.Name" or "functions"
  std::string text;
  std::vector<int> entities;  // the entities it summarises
};

// `before_line` > 0 (a completion cursor): only the imports that start before that line, and only entities
// of other files (the file itself is the query side).
std::vector<DependencySnippet> dependency_snippets(const Engine& e, int file, const HiddenBody* hidden = nullptr,
                                                   int before_line = 0);

}  // namespace repoctx
