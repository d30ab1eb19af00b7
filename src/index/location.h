// Where an index lives on disk, and what its folder needs.
#pragma once

#include <string>
#include <system_error>

namespace repoctx {

// Creates the folder of the index database. A `.repoctx` folder (the one inside a repository) gets a
// `.gitignore` holding `*`, so that the index never shows in `git status` of the repository it indexes.
void ensure_index_dir(const std::string& db_path, std::error_code& ec);

}  // namespace repoctx
