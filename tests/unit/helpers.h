// Test helpers: temporary repositories written from inline files.
#pragma once

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "repo/model.h"
#include "util/temp_dir.h"

namespace repoctx::testing {

// The project's TempDir (util/temp_dir.h): a private folder removed with its contents.
using repoctx::TempDir;

// A parsed file's entity by qualified name (and kind: C's struct tag and typedef may share a name), or nullptr.
inline const Entity* find_entity(const ParsedFile& pf, const std::string& qualname) {
  for (const auto& e : pf.entities)
    if (e.qualname == qualname) return &e;
  return nullptr;
}
inline const Entity* find_entity(const ParsedFile& pf, const std::string& qualname, EntityKind k) {
  for (const auto& e : pf.entities)
    if (e.qualname == qualname && e.kind == k) return &e;
  return nullptr;
}

// The reference chains recorded inside one entity of a parsed file (by index, or by qualified name).
inline std::set<std::string> chains_in(const ParsedFile& pf, int scope) {
  std::set<std::string> out;
  for (const auto& r : pf.references)
    if (r.scope == scope) out.insert(r.chain);
  return out;
}
inline std::set<std::string> chains_in(const ParsedFile& pf, const std::string& qualname) {
  std::set<std::string> out;
  for (const auto& r : pf.references)
    if (r.scope >= 0 && pf.entities[r.scope].qualname == qualname) out.insert(r.chain);
  return out;
}

}  // namespace repoctx::testing
