// ProjAgent 4.1 function selection: which context functions the offline stage decomposes first.
// Files are ranked by N_target (target functions they hold), ties by N_f (functions they hold); the
// functions of the top files, targets removed, are the selected context functions. The rest of the
// ranking feeds Algorithm 1's batches of 5 more files.
#pragma once

#include <string>
#include <vector>

#include "retrieve/engine.h"

namespace repoctx {

struct FileRank {
  int file = -1;
  int n_target = 0;
  int n_functions = 0;
};

struct FunctionSelection {
  std::vector<FileRank> ranked_files;  // every Python file, best first
  std::vector<int> selected_files;     // the top `top_files`
  std::vector<int> context_functions;  // functions and methods of the selected files, targets excluded
};

// `targets`: entity indices of the benchmark's target functions.
FunctionSelection select_functions(const Engine& e, const std::vector<int>& targets, int top_files = 20);

}  // namespace repoctx
