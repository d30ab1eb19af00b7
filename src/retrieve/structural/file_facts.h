// The structural strategy's facts of an engine's index: per file (the references and what they resolve
// to, the module-level imports, the use of its members), per entity (name facts, class members, the
// references of each function) and repository-wide (popularity, module co-use). None of them reads a
// hidden body: requests take their target's part away themselves. Each is built on first use and shared by
// every request on the engine (see SharedRepositoryFacts in retriever.cpp), or all at once by warm().
#pragma once

#include <cstdint>
#include <functional>
#include <mutex>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "retrieve/engine.h"
#include "retrieve/structural/structural.h"

namespace repoctx::structural {

// The outermost function or method containing an entity (the "unit" whose references are its usage).
int unit_of(const RepoView& view, int entity);
// A unit itself: the functions module co-use counts as users (ModuleCoUse::users_of).
bool is_unit(const RepoView& view, int entity);

// The references of one file and what they resolve to.
struct FileUsage {
  // Per reference of the file: the unit (outermost callable, -1 = module/class level), the entity whose
  // scope holds it, the chain root, and the repository entities it resolves to.
  struct Use {
    int unit;
    int scope;
    int root;  // id of the chain's first name (root_id)
    std::vector<int> along;
  };
  std::vector<Use> uses;
  std::unordered_map<std::string, int> root_id;  // distinct chain roots of the file -> 0, 1, ...
  // The same uses summed over the whole file, so that a request only takes away its hidden body's uses
  // (sorting each request's (entity, unit) pairs anew was 2% of a structural request's CPU on sympy):
  // the distinct (entity, unit) pairs, ascending, with the number of (use, along) entries giving each; the
  // distinct units (>= 0), ascending, with their uses; the uses of each root.
  std::vector<std::pair<int, int>> pairs;
  std::vector<int> pair_uses;
  std::vector<int> units, unit_uses;
  std::vector<int> root_uses;
  void summarise();
};

// What an entity's name is (made with the name parts): read for every candidate of every request, where
// comparing and hashing the strings would be ~2% of it.
struct NameFacts {
  int name_id;  // the same for entities of the same name
  bool dunder, private_, upper, exception_name;
};

// A module-level import (not a star one) as the scope tiers read it: the bound name and what it resolves
// to.
struct ImportBinding {
  std::string bound;
  Resolution::Kind kind;
  int entity, file;
};

// users_of[c]: the functions (outermost callables) referencing entity c, ascending; module_users[f]: how
// many functions reference any entity of file f. Queries remove the target's own function from both.
struct ModuleCoUse {
  std::vector<std::vector<int>> users_of;
  std::vector<int> module_users;
};

// The facts of one engine's index, each built on first use. Thread-safe: concurrent requests of a warm
// server share one instance.
class RepositoryFacts {
 public:
  explicit RepositoryFacts(const Engine& engine) : engine_(engine), view_(engine.view()), graph_(engine.graph()) {}

  const Engine& engine() const { return engine_; }

  const FileUsage& usage(int file);
  const std::vector<int>& refs_of(int entity);

  // How many functions of the repository reference each entity (outermost callables; computed once). The
  // references of each function are kept for refs_of(): neighbours are such functions, and a warm server
  // then never resolves them again.
  const std::vector<int>& popularity();

  // The subword tokens of every entity's name, made once: a pool of ~1,000 candidates tokenized its names
  // twice per request. Also as ids of a vocabulary of every name part, so that a request matches them
  // against its query by id (string hashing per part and candidate would be ~3% of it).
  const std::vector<int>& name_part_ids_of(int entity);
  const NameFacts& name_facts(int entity);
  // The id of an entity name, -1 when no entity has it.
  int name_id(const std::string& name);
  // The id of a name part, -1 when no entity's name has it.
  int part_id(const std::string& part);
  size_t n_parts();

  // Each entity's file when it is a top-level one (defined outside any other), else -1; made once.
  const std::vector<int32_t>& top_level_file();

  // A file's module-level imports. Module-level imports are never inside a hidden body, so this is a fact of
  // the index; resolving them would be ~2% of a request, twice (scope tiers, module co-use).
  const std::vector<ImportBinding>& bindings(int file);

  // A class's members through its MRO (SymbolGraph::class_members walks the MRO and each class's entities).
  const std::vector<int>& members_of(int cls);

  // Module co-use, from the index only (per engine).
  const ModuleCoUse& module_couse();
  // The use counts (users_of sizes) of a file's entities, descending: a request's module-member ranks
  // read them for every candidate file the target's function does not touch.
  const std::vector<int>& member_uses(int file);

  // Every per-file fact a request may read, built now instead of by the first request on each file (see
  // warm_structural). The same memo entries requests fill: a request running meanwhile finds them or builds
  // its own twin. False when `stop` said so before the last file.
  bool warm(const std::function<bool()>& stop);

 private:
  // cache[key], computed outside the lock on a miss (concurrent requests of a warm server share this
  // object); a twin computed by another thread meanwhile is the same value, and the first one stored stays.
  // References stay valid: unordered_map never moves its elements.
  template <class Map, class Compute>
  const typename Map::mapped_type& memo(Map& cache, int key, Compute compute);

  FileUsage build_usage(int file) const;
  void build_popularity();
  void build_module_couse();
  void name_parts_once();
  void build_name_parts();
  void warm_file(int file);

  std::once_flag name_parts_once_;
  std::vector<std::vector<int>> part_ids_;  // by name id
  std::unordered_map<std::string, int> part_vocab_;
  std::vector<NameFacts> name_facts_;
  std::unordered_map<std::string, int> name_vocab_;
  std::once_flag couse_once_;
  ModuleCoUse couse_;
  std::once_flag popularity_once_;
  std::vector<int> popularity_;
  std::once_flag top_level_once_;
  std::vector<int32_t> top_level_file_;
  const Engine& engine_;
  const RepoView& view_;
  const SymbolGraph& graph_;
  std::mutex mu_;
  std::unordered_map<int, FileUsage> usage_;
  std::unordered_map<int, std::vector<int>> refs_;
  std::unordered_map<int, std::vector<int>> members_;
  std::unordered_map<int, std::vector<int>> member_uses_;
  std::unordered_map<int, std::vector<ImportBinding>> bindings_;
};

}  // namespace repoctx::structural
