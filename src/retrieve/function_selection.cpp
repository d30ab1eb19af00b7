#include "retrieve/function_selection.h"

#include <algorithm>
#include <unordered_set>

namespace repoctx {

FunctionSelection select_functions(const Engine& e, const std::vector<int>& targets, int top_files) {
  const auto& v = e.view();
  const auto& ents = v.entities();
  std::unordered_set<int> target_set(targets.begin(), targets.end());
  FunctionSelection out;
  for (size_t f = 0; f < v.files().size(); ++f) {
    const FileRec& fr = v.files()[f];
    if (fr.language != Language::python) continue;
    FileRank r;
    r.file = static_cast<int>(f);
    for (int i = fr.first_entity; i < fr.first_entity + fr.n_entities; ++i) {
      if (!is_callable(ents[i].kind)) continue;
      ++r.n_functions;
      if (target_set.count(i)) ++r.n_target;
    }
    out.ranked_files.push_back(r);
  }
  // Path as the last key: the paper leaves further ties open; this keeps runs reproducible.
  std::stable_sort(out.ranked_files.begin(), out.ranked_files.end(), [&](const FileRank& a, const FileRank& b) {
    if (a.n_target != b.n_target) return a.n_target > b.n_target;
    if (a.n_functions != b.n_functions) return a.n_functions > b.n_functions;
    return v.files()[a.file].path < v.files()[b.file].path;
  });
  for (int i = 0; i < std::min<int>(top_files, static_cast<int>(out.ranked_files.size())); ++i) {
    int f = out.ranked_files[static_cast<size_t>(i)].file;
    out.selected_files.push_back(f);
    const FileRec& fr = v.files()[f];
    for (int k = fr.first_entity; k < fr.first_entity + fr.n_entities; ++k)
      if (is_callable(ents[k].kind) && !target_set.count(k)) out.context_functions.push_back(k);
  }
  return out;
}

}  // namespace repoctx
