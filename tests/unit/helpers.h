// Test helpers: temporary repositories written from inline files.
#pragma once

#include <filesystem>
#include <fstream>
#include <string>

#include "util/temp_dir.h"

namespace repoctx::testing {

// The project's TempDir (util/temp_dir.h): a private folder removed with its contents.
using repoctx::TempDir;

}  // namespace repoctx::testing
