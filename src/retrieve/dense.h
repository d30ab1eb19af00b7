// Dense similarity over entity embeddings (shared by `dense`, `hybrid` and `imports`).
#pragma once

#include <vector>

#include "retrieve/engine.h"

namespace repoctx {

// Cosine of every entity's document vector with `q` (both normalised); -2 for entities that are hidden,
// not allowed, or have no document.
std::vector<double> dense_scores(const Engine& e, LlmBackend& embedder, const std::vector<float>& q,
                                 const TargetContext* ctx, const std::vector<char>* allowed);

}  // namespace repoctx
