// Opening an index database: a new one is created whole (never a zero-byte or half-made file at the
// index path), an existing one is checked before use, and a damaged, foreign or newer one is never
// touched: every problem is Error(bad_input) naming the file, what is wrong and the fix
// (`repoctx index --rebuild`, which deletes a repoctx index, damaged or not, and builds it again).
#pragma once

#include <memory>
#include <string>

#include "util/sqlite.h"

namespace repoctx {

struct IndexOpenOptions {
  bool rebuild = false;  // delete the index at the path first (never a foreign file), then build anew
  // PRAGMA quick_check on an existing index (every page's b-tree structure; ~0.1 s for 90 MB): the
  // `index` command does it before writing into a file; queries rely on SQLite's own corruption errors.
  // Skipped when the file is exactly as a complete run left it (mark_index_verified).
  bool verify = false;
};

// For the indexer. Creates the parent folder and, for a new index, the schema. An index of an older
// schema version is rebuilt (with a warning).
std::unique_ptr<sql::Db> open_index_for_writing(const std::string& path, const IndexOpenOptions& o);

// For readers (read-only). Throws Error(not_found) when there is no file.
std::unique_ptr<sql::Db> open_index_for_reading(const std::string& path);

// After a complete run has closed the index: records the file's identity (inode, size, modification and
// change times) in <path>-verified. While the file keeps it (nothing has written to it since, and no
// write-ahead log is pending), the next writer's damage check is skipped: the check reads every page and
// was most of a run with nothing or one file to re-index. Best effort: a stamp that cannot be written only
// means the next check runs.
void mark_index_verified(const std::string& path);
// Whether the file still has the identity its stamp records and no write-ahead log is pending (the
// writer then skips the damage check).
bool index_unchanged_since_verified(const std::string& path);

// The fix every damage message names.
std::string rebuild_hint(const std::string& path);

}  // namespace repoctx
