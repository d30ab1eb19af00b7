// The references of every function of the repository (outermost callables: what popularity and module co-use
// count), kept next to the index in <db>-unit-refs (index/derived_file.h) once a process has resolved them, so
// that a cold process reads ~0.7 MB instead of resolving every reference of the repository (most of a cold
// structural request's time on sympy). Named by the resolver's version (kResolverVersion).
#pragma once

#include <optional>
#include <utility>
#include <vector>

#include "index/repo_view.h"

namespace repoctx::structural {

// (unit entity, its referenced entities ascending), units ascending.
using UnitRefs = std::vector<std::pair<int, std::vector<int>>>;

// The stored references when the file matches this view's image and holds exactly its units; else nullopt.
std::optional<UnitRefs> read_unit_refs(const RepoView& view);
// Kept for the next process (a failure to write only means it resolves them again).
void write_unit_refs(const RepoView& view, const UnitRefs& refs);

}  // namespace repoctx::structural
