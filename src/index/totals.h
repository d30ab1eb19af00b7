// What an index holds in all (not what the last run parsed): the figures a summary line reports.
#pragma once

#include <cstdint>
#include <string>

namespace repoctx {

struct IndexTotals {
  int64_t files = 0, entities = 0, references = 0, snippets = 0;
};

// One read transaction over the database at `db_path`; throws Error like RepoView::open on a bad file.
IndexTotals index_totals(const std::string& db_path);

}  // namespace repoctx
