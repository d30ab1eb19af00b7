// Facts a later stage derives from an index (every function's resolved references, the signature corpus's
// term vectors), kept next to it in <db>-<name> so that the next process reads them instead of deriving them
// again: a cold process would otherwise spend most of its time there. A file names the query image it was
// derived from (its token) and the version of the code that derived it, and carries a checksum of its payload;
// a reader gets the payload only when all three match, so a changed index, another build's derivation or a
// damaged file is ignored and the fact derived again. Views loaded without a query image (through SQL) have no
// token: nothing is kept or read for them.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "index/repo_view.h"

namespace repoctx {

std::optional<std::string> read_derived_file(const RepoView& view, const std::string& name, std::string_view version);
// Written atomically (a temporary file renamed over the old one); a failure (read-only folder, full disk) only
// logs at debug level: the next process derives the fact again.
void write_derived_file(const RepoView& view, const std::string& name, std::string_view version,
                        std::string_view payload);

}  // namespace repoctx
