// The structural strategy's candidate features: the enum that indexes a candidate's row, and each
// feature's name (the names model files and hits carry). The order is the rows' column order, so it is
// fixed: the shipped models were trained on it.
#pragma once

#include <cstddef>
#include <iterator>
#include <string_view>

namespace repoctx::structural {

// Columns of a candidate's feature row (StructuralCandidates::features).
enum Feature : int {
  f_class_direct,
  f_class_inherited,
  f_module,
  f_import,
  f_modattr,
  f_visible_member,
  f_accessible,
  f_global_bm25,
  f_neighbour,
  f_kind_function,
  f_kind_method,
  f_kind_class,
  f_kind_variable,
  f_kind_attribute,
  f_private,
  f_dunder,
  f_upper,
  f_bm25_rel,
  f_bm25_log,
  f_bm25_rank,
  f_name_in_query,
  f_name_overlap,
  f_vote,
  f_vote_count,
  f_vote_top5,
  f_file_usage,
  f_file_usage_frac,
  f_class_usage,
  f_import_unused,
  f_import_uses,
  f_proximity,
  f_param_match,
  f_method_of_own_class_private,
  // Per-target normalised evidence and interactions (raw counts differ between repositories).
  f_vote_rel,
  f_vote_rank,
  f_vote_file,
  f_vote_class,
  f_usage_rank,
  f_target_name_overlap,
  f_name_stem,
  f_direct_method,
  f_direct_attribute,
  f_module_function,
  f_module_class,
  f_import_class,
  f_import_function,
  f_popularity,
  f_popularity_rank,
  f_exception_class,
  // Module co-use: which members of a module the repository uses, and uses together.
  f_module_share,
  f_module_member_rank,
  f_module_file_uses,
  f_module_couse,
  f_module_couse_log,
  f_file_imported,
  // Same-file neighbours: the functions of the target's file most like it vote for what
  // they use (the global neighbours rarely include the target's own file's functions).
  f_local_vote,
  f_local_vote_rank,
  f_local_vote_rel,
  f_count
};

struct FeatureName {
  Feature feature;
  std::string_view name;
};

// Every feature's name, in column order; each entry names the enum value it belongs to, so that the
// compile-time checks below catch a name added, dropped or moved on one side only.
inline constexpr FeatureName kFeatureNames[] = {
    {f_class_direct, "class_direct"},
    {f_class_inherited, "class_inherited"},
    {f_module, "module"},
    {f_import, "import"},
    {f_modattr, "modattr"},
    {f_visible_member, "visible_member"},
    {f_accessible, "accessible"},
    {f_global_bm25, "global_bm25"},
    {f_neighbour, "neighbour"},
    {f_kind_function, "kind_function"},
    {f_kind_method, "kind_method"},
    {f_kind_class, "kind_class"},
    {f_kind_variable, "kind_variable"},
    {f_kind_attribute, "kind_attribute"},
    {f_private, "private"},
    {f_dunder, "dunder"},
    {f_upper, "upper"},
    {f_bm25_rel, "bm25_rel"},
    {f_bm25_log, "bm25_log"},
    {f_bm25_rank, "bm25_rank"},
    {f_name_in_query, "name_in_query"},
    {f_name_overlap, "name_overlap"},
    {f_vote, "vote"},
    {f_vote_count, "vote_count"},
    {f_vote_top5, "vote_top5"},
    {f_file_usage, "file_usage"},
    {f_file_usage_frac, "file_usage_frac"},
    {f_class_usage, "class_usage"},
    {f_import_unused, "import_unused"},
    {f_import_uses, "import_uses"},
    {f_proximity, "proximity"},
    {f_param_match, "param_match"},
    {f_method_of_own_class_private, "own_class_private_method"},
    {f_vote_rel, "vote_rel"},
    {f_vote_rank, "vote_rank"},
    {f_vote_file, "vote_file"},
    {f_vote_class, "vote_class"},
    {f_usage_rank, "usage_rank"},
    {f_target_name_overlap, "target_name_overlap"},
    {f_name_stem, "name_stem"},
    {f_direct_method, "direct_method"},
    {f_direct_attribute, "direct_attribute"},
    {f_module_function, "module_function"},
    {f_module_class, "module_class"},
    {f_import_class, "import_class"},
    {f_import_function, "import_function"},
    {f_popularity, "popularity"},
    {f_popularity_rank, "popularity_rank"},
    {f_exception_class, "exception_class"},
    {f_module_share, "module_share"},
    {f_module_member_rank, "module_member_rank"},
    {f_module_file_uses, "module_file_uses"},
    {f_module_couse, "module_couse"},
    {f_module_couse_log, "module_couse_log"},
    {f_file_imported, "file_imported"},
    {f_local_vote, "local_vote"},
    {f_local_vote_rank, "local_vote_rank"},
    {f_local_vote_rel, "local_vote_rel"},
};

static_assert(std::size(kFeatureNames) == f_count, "one name per feature: kFeatureNames and Feature differ in length");

// Entry i names feature i, and every name is set and distinct.
constexpr bool feature_names_match_enum() {
  for (size_t i = 0; i < std::size(kFeatureNames); ++i) {
    if (kFeatureNames[i].feature != static_cast<Feature>(i) || kFeatureNames[i].name.empty()) return false;
    for (size_t j = 0; j < i; ++j)
      if (kFeatureNames[j].name == kFeatureNames[i].name) return false;
  }
  return true;
}
static_assert(feature_names_match_enum(), "kFeatureNames must list Feature's values in order, with distinct names");

// The name of a feature column.
constexpr std::string_view feature_name(size_t column) {
  return kFeatureNames[column].name;
}

}  // namespace repoctx::structural
