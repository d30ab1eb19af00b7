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
};

// The damage check: PRAGMA quick_check (every page's b-tree structure; ~0.15 s for sympy's 90 MB index) on
// every existing index that is opened, by writers and readers alike, unless the file is exactly as a
// complete run left it after passing the check (mark_index_verified). A damaged index is Error(bad_input)
// naming the file and `repoctx index --rebuild`, before anything reads or writes it.

// For the indexer (`index`, and every command that refreshes the index first). Creates the parent folder
// and, for a new index, the schema. An index of an older schema version is rebuilt (with a warning).
std::unique_ptr<sql::Db> open_index_for_writing(const std::string& path, const IndexOpenOptions& o);

// For readers (read-only). Throws Error(not_found) when there is no file.
std::unique_ptr<sql::Db> open_index_for_reading(const std::string& path);

// After a complete run has closed the index it opened through open_index_for_writing (so the file passed
// the damage check or was new): records the file's identity (inode, size, modification and change times)
// in <path>-verified. While the file keeps it (nothing has written to it since, and no write-ahead log is
// pending), the damage check is skipped: it reads every page and was most of a run with nothing or one file
// to re-index. Best effort: a stamp that cannot be written only means the next check runs.
void mark_index_verified(const std::string& path);
// Whether the file still has the identity its stamp records and no write-ahead log is pending (the
// damage check is then skipped).
bool index_unchanged_since_verified(const std::string& path);

// The fix every damage message names.
std::string rebuild_hint(const std::string& path);
// What to do when the disk holding the index is full (util/error.h DiskFull).
std::string disk_full_hint(const std::string& path);

}  // namespace repoctx
