// Module co-use: evidence for a candidate from what the repository does with the other members of its
// defining file ("module"): its share of the module's users, its rank among the module's members by use,
// how many other members the target's file uses, and how often the functions that use those members also
// use it. The target's own function (whose body is hidden) is removed from every count.
#include <algorithm>
#include <cmath>
#include <functional>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "retrieve/structural/candidates.h"
#include "retrieve/structural/features.h"

namespace repoctx::structural {

namespace {

// One request's module co-use counts. The counts are of the whole repository; the target's function (its
// outermost callable) counts only with what it references outside the hidden body, as in a copy of the
// repository without the body. Candidates are visited file by file: the per-file facts (members' use,
// co-use counts per user) are made once per file, the counts in the scratch's dense per-user array.
class ModuleCoUseCounts {
 public:
  explicit ModuleCoUseCounts(CandidatePool& pool);
  // Makes the per-file facts of `module`, the defining file of the candidates that follow.
  void enter_file(int module);
  // The co-use features of the candidate in row `row` (defined in the file entered last).
  void set_features(size_t row);

 private:
  // Whether the target's function references `entity` outside the hidden body.
  bool target_unit_uses(int entity) const { return scratch_.visible_ref_stamp[entity] == pool_.stamp; }
  // How many functions reference `entity`, the target's function counted with its visible references only.
  int uses_without_target(int entity) const {
    return static_cast<int>(couse_.users_of[entity].size()) - (scratch_.full_ref_stamp[entity] == pool_.stamp ? 1 : 0) +
           (target_unit_uses(entity) ? 1 : 0);
  }
  void mark_target_references();
  void collect_file_facts();
  void own_member_uses(int module);
  void count_users_of_used_members();

  CandidatePool& pool_;
  const std::vector<EntityRec>& entities_;
  const ModuleCoUse& couse_;
  EntityScratch& scratch_;
  int target_unit_;
  std::unordered_set<int> full_files_, visible_files_;  // files the target's function references
  // Members of each file that the target's file uses outside the hidden body.
  std::unordered_map<int, std::vector<int>> used_members_;
  // Files the target's file imports at module level (the module, or the file defining the name).
  std::unordered_set<int> imported_;
  // The file entered last.
  int module_ = -1;
  std::vector<int> own_uses_;                      // descending adjusted use of a touched file's members
  const std::vector<int>* member_uses_ = nullptr;  // the current file's: own_uses_ or the facts' member_uses
  const std::vector<int>* members_used_ = nullptr;
  uint32_t count_stamp_ = 0;
  int n_users_ = 0;  // distinct users of the current file's used members
};

ModuleCoUseCounts::ModuleCoUseCounts(CandidatePool& pool)
    : pool_(pool), entities_(pool.entities), couse_(pool.facts.module_couse()), scratch_(*pool.scratch) {
  target_unit_ = unit_of(pool_.view, pool_.target);
  if (target_unit_ < 0) target_unit_ = pool_.target;
  mark_target_references();
}

// What the target's function references, with and without the hidden body, marked by entity: users_of[c]
// holds the target's function exactly when it is a user (an outermost callable, as module_couse() counts
// them) whose references hold c (two binary searches per entity, one in lists of thousands, were a quarter
// of this family's time on sympy). Then the files of both, and the per-file facts of the target's file.
void ModuleCoUseCounts::mark_target_references() {
  const std::vector<int> visible = pool_.graph.referenced_entities(target_unit_, &pool_.context.hidden);  // sorted
  if (is_unit(pool_.view, target_unit_))
    for (int entity : pool_.facts.refs_of(target_unit_)) scratch_.full_ref_stamp[entity] = pool_.stamp;
  for (int entity : visible) scratch_.visible_ref_stamp[entity] = pool_.stamp;
  for (int entity : pool_.facts.refs_of(target_unit_)) full_files_.insert(entities_[entity].file);
  for (int entity : visible) visible_files_.insert(entities_[entity].file);
  collect_file_facts();
}

void ModuleCoUseCounts::collect_file_facts() {
  for (int entity : pool_.used_entities) used_members_[entities_[entity].file].push_back(entity);
  for (const auto& binding : pool_.facts.bindings(pool_.target_file)) {
    if (binding.kind == Resolution::Kind::entity) imported_.insert(entities_[binding.entity].file);
    if (binding.kind == Resolution::Kind::module) imported_.insert(binding.file);
  }
}

// The use of each member of `module` left when the hidden body is taken away, descending.
void ModuleCoUseCounts::own_member_uses(int module) {
  own_uses_.clear();
  const FileRec& file = pool_.view.files()[module];
  for (int i = file.first_entity; i < file.first_entity + file.n_entities; ++i)
    if (!pool_.context.is_hidden_entity(i)) own_uses_.push_back(std::max(0, uses_without_target(i)));
  std::sort(own_uses_.begin(), own_uses_.end(), std::greater<>());
}

// Per user of the current file's used members: how many of them it references.
void ModuleCoUseCounts::count_users_of_used_members() {
  count_stamp_ = scratch_.next_count_stamp();
  auto bump = [&](int user) {
    if (scratch_.count_stamp[user] != count_stamp_) {
      scratch_.count_stamp[user] = count_stamp_;
      scratch_.count[user] = 0;
      ++n_users_;
    }
    ++scratch_.count[user];
  };
  for (int member : *members_used_) {
    for (int user : couse_.users_of[member])
      if (user != target_unit_) bump(user);
    if (target_unit_uses(member)) bump(target_unit_);
  }
}

void ModuleCoUseCounts::enter_file(int module) {
  module_ = module;
  if (module != pool_.target_file && !full_files_.count(module) && !visible_files_.count(module)) {
    // Nothing of this file is hidden or referenced by the target's function: its members' use is the
    // repository's, sorted once per engine.
    member_uses_ = &pool_.facts.member_uses(module);
  } else {
    own_member_uses(module);
    member_uses_ = &own_uses_;
  }
  auto used = used_members_.find(module);
  members_used_ = used == used_members_.end() ? nullptr : &used->second;
  n_users_ = 0;
  if (members_used_) count_users_of_used_members();
}

void ModuleCoUseCounts::set_features(size_t row) {
  const int candidate = pool_.out.entities[row], module = module_;
  auto& x = pool_.out.features[row];
  int uses = std::max(0, uses_without_target(candidate));
  int module_users =
      couse_.module_users[module] - (full_files_.count(module) ? 1 : 0) + (visible_files_.count(module) ? 1 : 0);
  x[f_module_share] = module_users > 0 ? static_cast<double>(uses) / module_users : 0;
  if (uses > 0) {
    // Ties share the best rank.
    auto above = std::lower_bound(member_uses_->begin(), member_uses_->end(), uses, std::greater<>());
    x[f_module_member_rank] = 1.0 / (1.0 + static_cast<double>(above - member_uses_->begin()));
  }
  x[f_file_imported] = imported_.count(module) ? 1 : 0;
  if (!members_used_) return;
  const bool self_used = pool_.used_in_file(candidate);
  int others = static_cast<int>(members_used_->size()) - (self_used ? 1 : 0);
  x[f_module_file_uses] = std::log1p(std::max(0, others));
  // When the candidate is itself used, a function that references no used member but it is no evidence.
  int base = n_users_, both = 0;
  auto count_user = [&](int user) {
    if (scratch_.count_stamp[user] != count_stamp_) return;
    if (self_used && scratch_.count[user] == 1) {
      --base;
      return;
    }
    ++both;
  };
  for (int user : couse_.users_of[candidate])
    if (user != target_unit_) count_user(user);
  if (target_unit_uses(candidate)) count_user(target_unit_);
  if (base <= 0) return;
  x[f_module_couse] = static_cast<double>(both) / static_cast<double>(base);
  x[f_module_couse_log] = std::log1p(both);
}

}  // namespace

void CandidatePool::module_couse_features() {
  ModuleCoUseCounts counts(*this);
  // The candidates' rows ordered by defining file (stable: rows of one file stay in pool order).
  std::vector<size_t> order(out.entities.size());
  for (size_t k = 0; k < order.size(); ++k) order[k] = k;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return entities[out.entities[a]].file < entities[out.entities[b]].file; });
  for (size_t i = 0; i < order.size(); ++i) {
    const int module = entities[out.entities[order[i]]].file;
    if (i == 0 || entities[out.entities[order[i - 1]]].file != module) counts.enter_file(module);
    counts.set_features(order[i]);
  }
}

}  // namespace repoctx::structural
