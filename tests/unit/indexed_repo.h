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
};

// Debian's python3-flask, indexed once per test program.
inline IndexedRepo& flask_index() {
  static IndexedRepo r("/usr/lib/python3/dist-packages/flask");
  return r;
}

}  // namespace repoctx::testing
