// REPOCOD's task semantics (Liang et al., 2025; the dataset lt-asset/REPOCOD and its evaluation scripts):
//
// - function_name is "name" or "Class.name": only the last two components of a qualified name, so a method of
//   a nested class, or a function defined twice (if/else variants), names several definitions; the task's
//   full_function (the reference definition's text) tells them apart.
// - relavent_test_path (spelled so in the dataset; relevant_test_path in its documentation) names a text file
//   inside REPOCOD's Docker image (/usr/src/app/target_test_cases/failed_tests_<function>.txt) that lists the
//   pytest node ids of the task's relevant tests, one per line; pytest runs exactly those, with
//   --continue-on-collection-errors. REPOCOD's evaluate.py adds -x by default (early_stop); a verdict does not
//   depend on it (it only stops sooner), so repoctx leaves it out unless asked (--early-stop).
#pragma once

#include <string>
#include <vector>

#include "retrieve/engine.h"

namespace repoctx {

// The definition a task names in `file`: the exact qualified name first (the last definition when it is
// defined twice); else every callable whose qualified name ends with ".<function>". Several candidates are
// told apart by `full_function` (the one whose lines match it best, ignoring indentation, blank lines and
// decorators). `how` (optional) gets "qualname", "full_function" or "unique suffix". Throws Error(not_found)
// when nothing matches, Error(bad_input) listing the candidates when they cannot be told apart.
TargetRef resolve_repocod_target(const Engine& eng, const std::string& file, const std::string& function,
                                 const std::string& full_function, std::string* how = nullptr);

// How alike two definitions read: the share of `reference`'s non-blank, non-decorator lines (whitespace
// trimmed) found in `candidate`, as a multiset; 1 when they are the same text up to indentation.
double definition_match(const std::string& reference, const std::string& candidate);

// The node ids of a REPOCOD relevant-tests file (one per line; blank lines and '#' comments skipped).
// `path` is used as given when it exists, else its file name under `cases_dir` (the image's
// target_test_cases folder, copied out). Throws Error(not_found) saying what to pass when neither exists.
std::vector<std::string> read_repocod_test_ids(const std::string& path, const std::string& cases_dir,
                                               const std::string& where);

}  // namespace repoctx
