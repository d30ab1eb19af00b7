#include "retrieve/structural/file_facts.h"

#include <algorithm>
#include <cctype>
#include <optional>

#include "retrieve/structural/unit_refs_store.h"
#include "util/text.h"

namespace repoctx::structural {

namespace {

// Subword tokens of a name, without the compound form.
std::vector<std::string> name_parts(const std::string& name) {
  std::vector<std::string> tokens = tokenize_code(name), out;
  for (auto& token : tokens)
    if (token.find('_') == std::string::npos && token != [&] {
          std::string lower;
          for (char ch : name) lower.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(ch))));
          return lower;
        }())
      out.push_back(token);
  if (out.empty() && !tokens.empty()) out.push_back(tokens.front());
  return out;
}

// The distinct values of `values`, ascending, and how often each occurs.
template <class T>
void count_distinct(std::vector<T>& values, std::vector<T>& distinct, std::vector<int>& counts) {
  std::sort(values.begin(), values.end());
  for (size_t i = 0; i < values.size(); ++i) {
    if (i == 0 || values[i] != values[i - 1]) {
      distinct.push_back(values[i]);
      counts.push_back(0);
    }
    ++counts.back();
  }
}

}  // namespace

int unit_of(const RepoView& view, int entity) {
  const auto& entities = view.entities();
  int unit = -1;
  for (int cur = entity; cur >= 0; cur = entities[cur].parent_index)
    if (is_callable(entities[cur].kind)) unit = cur;
  return unit;
}

bool is_unit(const RepoView& view, int entity) {
  return is_callable(view.entities()[entity].kind) && unit_of(view, entity) == entity;
}

void FileUsage::summarise() {
  std::vector<std::pair<int, int>> all_pairs;
  std::vector<int> all_units;
  root_uses.assign(root_id.size(), 0);
  for (const auto& use : uses) {
    ++root_uses[static_cast<size_t>(use.root)];
    if (use.unit >= 0) all_units.push_back(use.unit);
    for (int entity : use.along) all_pairs.emplace_back(entity, use.unit);
  }
  count_distinct(all_pairs, pairs, pair_uses);
  count_distinct(all_units, units, unit_uses);
}

template <class Map, class Compute>
const typename Map::mapped_type& RepositoryFacts::memo(Map& cache, int key, Compute compute) {
  {
    std::lock_guard lk(mu_);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  auto value = compute();
  std::lock_guard lk(mu_);
  return cache.emplace(key, std::move(value)).first->second;
}

FileUsage RepositoryFacts::build_usage(int file) const {
  FileUsage usage;
  const FileRec& rec = view_.files()[file];
  for (const Reference& ref : view_.references(file)) {
    int scope = ref.scope >= 0 ? rec.first_entity + ref.scope : -1;
    FileUsage::Use use;
    use.scope = scope;
    use.unit = scope >= 0 ? unit_of(view_, scope) : -1;
    use.root =
        usage.root_id.try_emplace(ref.chain.substr(0, ref.chain.find('.')), static_cast<int>(usage.root_id.size()))
            .first->second;
    use.along = graph_.resolve(file, scope, ref.chain).along;
    usage.uses.push_back(std::move(use));
  }
  usage.summarise();
  return usage;
}

const FileUsage& RepositoryFacts::usage(int file) {
  return memo(usage_, file, [&] { return build_usage(file); });
}

const std::vector<int>& RepositoryFacts::refs_of(int entity) {
  return memo(refs_, entity, [&] { return graph_.referenced_entities(entity); });
}

void RepositoryFacts::build_popularity() {
  const auto& entities = view_.entities();
  popularity_.assign(entities.size(), 0);
  std::optional<UnitRefs> stored = read_unit_refs(view_);
  UnitRefs refs = stored ? std::move(*stored) : UnitRefs{};
  if (!stored) {
    for (size_t i = 0; i < entities.size(); ++i)
      if (is_unit(view_, static_cast<int>(i)))
        refs.emplace_back(static_cast<int>(i), graph_.referenced_entities(static_cast<int>(i)));
    write_unit_refs(view_, refs);
  }
  for (const auto& [unit, unit_refs] : refs)
    for (int referenced : unit_refs) ++popularity_[referenced];
  std::lock_guard lk(mu_);
  for (auto& [entity, entity_refs] : refs) refs_.emplace(entity, std::move(entity_refs));
}

const std::vector<int>& RepositoryFacts::popularity() {
  std::call_once(popularity_once_, [&] { build_popularity(); });
  return popularity_;
}

const std::vector<int>& RepositoryFacts::name_part_ids_of(int entity) {
  name_parts_once();
  return part_ids_[static_cast<size_t>(name_facts_[static_cast<size_t>(entity)].name_id)];
}

const NameFacts& RepositoryFacts::name_facts(int entity) {
  name_parts_once();
  return name_facts_[static_cast<size_t>(entity)];
}

int RepositoryFacts::name_id(const std::string& name) {
  name_parts_once();
  auto it = name_vocab_.find(name);
  return it == name_vocab_.end() ? -1 : it->second;
}

int RepositoryFacts::part_id(const std::string& part) {
  name_parts_once();
  auto it = part_vocab_.find(part);
  return it == part_vocab_.end() ? -1 : it->second;
}

size_t RepositoryFacts::n_parts() {
  name_parts_once();
  return part_vocab_.size();
}

const std::vector<int32_t>& RepositoryFacts::top_level_file() {
  std::call_once(top_level_once_, [&] {
    const auto& entities = view_.entities();
    top_level_file_.resize(entities.size());
    for (size_t i = 0; i < entities.size(); ++i)
      top_level_file_[i] = entities[i].parent_index < 0 ? entities[i].file : -1;
  });
  return top_level_file_;
}

const std::vector<ImportBinding>& RepositoryFacts::bindings(int file) {
  return memo(bindings_, file, [&] {
    std::vector<ImportBinding> out;
    for (const Import& im : view_.imports(file)) {
      if (im.scope != -1 || im.star) continue;
      std::string bound = im.bound_name();
      Resolution resolved = graph_.module_member(file, bound);
      out.push_back({std::move(bound), resolved.kind, resolved.entity, resolved.file});
    }
    return out;
  });
}

const std::vector<int>& RepositoryFacts::members_of(int cls) {
  return memo(members_, cls, [&] { return graph_.class_members(cls); });
}

void RepositoryFacts::build_module_couse() {
  popularity();  // caches every function's references
  const auto& entities = view_.entities();
  couse_.users_of.assign(entities.size(), {});
  couse_.module_users.assign(view_.files().size(), 0);
  std::vector<int> files;
  for (size_t i = 0; i < entities.size(); ++i) {
    int user = static_cast<int>(i);
    if (!is_unit(view_, user)) continue;
    files.clear();
    for (int referenced : refs_of(user)) {
      couse_.users_of[referenced].push_back(user);
      files.push_back(entities[referenced].file);
    }
    std::sort(files.begin(), files.end());
    files.erase(std::unique(files.begin(), files.end()), files.end());
    for (int f : files) ++couse_.module_users[f];
  }
}

const ModuleCoUse& RepositoryFacts::module_couse() {
  std::call_once(couse_once_, [&] { build_module_couse(); });
  return couse_;
}

const std::vector<int>& RepositoryFacts::member_uses(int file) {
  return memo(member_uses_, file, [&] {
    const auto& couse = module_couse();
    const FileRec& module = view_.files()[file];
    std::vector<int> uses;
    for (int i = module.first_entity; i < module.first_entity + module.n_entities; ++i)
      uses.push_back(static_cast<int>(couse.users_of[i].size()));
    std::sort(uses.begin(), uses.end(), std::greater<>());
    return uses;
  });
}

void RepositoryFacts::warm_file(int file) {
  const auto& entities = view_.entities();
  usage(file);
  member_uses(file);
  graph_.accessible_files(file);
  bindings(file);  // the scope tier's
  // The target's file is read and its entities' term vectors loaded (make_context, BM25 overrides).
  view_.content(file);
  if (view_.files()[file].n_entities > 0) view_.entity_terms(view_.files()[file].first_entity);
  const FileRec& rec = view_.files()[file];
  for (int i = rec.first_entity; i < rec.first_entity + rec.n_entities; ++i) {
    if (is_type(entities[i].kind)) members_of(i);
    if (is_callable(entities[i].kind)) refs_of(i);  // neighbours' references (nested ones are not in popularity)
  }
}

bool RepositoryFacts::warm(const std::function<bool()>& stop) {
  engine_.visible_bm25();  // the neighbours' corpus, built by the first request otherwise
  popularity();
  module_couse();
  name_parts_once();
  top_level_file();
  for (int f = 0; f < static_cast<int>(view_.files().size()); ++f) {
    if (stop && stop()) return false;
    warm_file(f);
  }
  return true;
}

void RepositoryFacts::build_name_parts() {
  const auto& entities = view_.entities();
  name_facts_.reserve(entities.size());
  for (const auto& entity : entities) {
    const std::string& name = entity.name;
    NameFacts facts;
    // Each distinct name is split once (sympy: 23,800 names for 41,093 entities).
    auto [named, fresh] = name_vocab_.try_emplace(name, static_cast<int>(name_vocab_.size()));
    facts.name_id = named->second;
    if (fresh) {
      std::vector<int> ids;
      for (auto& part : name_parts(name))
        ids.push_back(part_vocab_.try_emplace(std::move(part), static_cast<int>(part_vocab_.size())).first->second);
      part_ids_.push_back(std::move(ids));
    }
    facts.dunder = starts_with(name, "__") && ends_with(name, "__");
    facts.private_ = !facts.dunder && starts_with(name, "_");
    facts.upper = !name.empty() && std::none_of(name.begin(), name.end(),
                                                [](char ch) { return std::islower(static_cast<unsigned char>(ch)); });
    facts.exception_name = ends_with(name, "Error") || ends_with(name, "Exception") || ends_with(name, "Warning");
    name_facts_.push_back(facts);
  }
}

void RepositoryFacts::name_parts_once() {
  std::call_once(name_parts_once_, [&] { build_name_parts(); });
}

}  // namespace repoctx::structural
