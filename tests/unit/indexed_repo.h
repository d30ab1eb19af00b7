// Test fixture: a repository indexed into a temporary database, with its Engine.
#pragma once

#include <memory>
#include <string>

#include "helpers.h"
#include "index/index.h"
#include "retrieve/engine.h"

namespace repoctx::testing {

struct IndexedRepo {
  TempDir db;
  std::unique_ptr<Engine> engine;
  explicit IndexedRepo(const std::string& root) {
    IndexOptions o;
    o.db_path = db.str() + "/index.db";
    o.progress = false;
    build_index(root, o);
    engine = Engine::open(o.db_path);
  }
  // The file at `path` (relative to the root), or -1.
  int file(const std::string& path) const {
    auto f = engine->view().file_by_path(path);
    return f ? *f : -1;
  }
  // The entity named "path::Qualified.name", or -1.
  int entity(const std::string& target) const {
    for (size_t i = 0; i < engine->view().entities().size(); ++i)
      if (engine->target_name(static_cast<int>(i)) == target) return static_cast<int>(i);
    return -1;
  }
  // What `chain` inside entity `scope` of `file` resolves to, as "path::Qualified.name" ("" when no entity).
  std::string resolve(int file, const std::string& chain, int scope) const {
    Resolution r = engine->graph().resolve(file, scope, chain);
    return r.kind == Resolution::Kind::entity ? engine->target_name(r.entity) : "";
  }
};

// Debian's python3-flask, indexed once per test program.
inline IndexedRepo& flask_index() {
  static IndexedRepo r("/usr/lib/python3/dist-packages/flask");
  return r;
}

}  // namespace repoctx::testing
