// `cursor-deps` and `imports-recency`: LLM-free retrieval for a completion cursor that ranks the repository
// definitions the next line is likely to call. Candidates are what the code before the cursor can reach by
// name: definitions its imports bind (a module's top-level definitions, an imported class's methods), the
// methods of the enclosing class's bases in other files, and the definitions (and class members) that the
// references before the cursor resolve to. Every feature is computed from the unfinished code alone.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "retrieve/aligncoder/codebase.h"
#include "retrieve/engine.h"

namespace repoctx {

struct CursorCandidate {
  int entity = -1;
  // How the code refers to it: "name" (imported by name), "alias.name" (a module's member), "self.name" (a
  // base's method), ".name" (a member of a class reached otherwise).
  std::string ref;
  std::map<std::string, double> features;
  double score = 0;
};

// The candidates of a cursor with their features (unscored, in no particular order).
std::vector<CursorCandidate> cursor_candidates(const Engine& e, const CursorContext& cc);

// The feature names, in the order of the fitted weights.
const std::vector<std::string>& cursor_feature_names();

}  // namespace repoctx
