// Files repoctx ships beside its binary, found relative to it so that a built or installed repoctx can be
// moved anywhere: the install tree (<prefix>/bin/repoctx) and the build tree (build/bin/repoctx) have the
// same layout around the binary.
//
//   <exe>/../share/repoctx/<rel>      data (the benchmarks' Python reference implementations)
//   <exe>/../libexec/repoctx/<name>   helper programs (llama-server, for bench-llm)
#pragma once

#include <string>

namespace repoctx {

// The folder holding this binary.
std::string exe_dir();
// $REPOCTX_DATA_DIR/<rel> when set, else <exe>/../share/repoctx/<rel>; throws Error(not_found) naming the
// places looked at when the file is in neither.
std::string data_file(const std::string& rel);
// $REPOCTX_LIBEXEC_DIR/<name> when set, else <exe>/../libexec/repoctx/<name>; "" when absent (callers skip
// what needs it, or say so).
std::string helper_program(const std::string& name);

}  // namespace repoctx
