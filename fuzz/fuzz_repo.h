// A small repository for the fuzz targets that serve requests: a package with a class, functions and a
// module-level import, plus a file outside it (holding a marker) that symlinks inside point at. Nothing a
// request can do may ever show the marker.
#pragma once

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <string_view>

namespace repoctx::fuzz {

inline constexpr const char* kOutsideSecret = "OUTSIDE_SECRET_TOKEN_7f3a";

// Whether `answer` shows the marker although `input` could not have put it there: the input holds no
// 8-byte piece of it (the servers echo parts of a request in their error messages, and the fuzzer learns
// the marker from the comparison below; the servers' own words hold no piece of it).
inline bool shows_outside_secret(std::string_view input, std::string_view answer) {
  std::string_view secret(kOutsideSecret);
  if (answer.find(secret) == std::string_view::npos) return false;
  for (size_t i = 0; i + 8 <= secret.size(); ++i)
    if (input.find(secret.substr(i, 8)) != std::string_view::npos) return false;
  return true;
}

// Writes the repository under a fresh folder of the temporary directory and returns its root.
inline std::filesystem::path make_fuzz_repo(const std::string& name) {
  namespace fs = std::filesystem;
  fs::path root = fs::temp_directory_path() / (name + "-" + std::to_string(::getpid()));
  fs::remove_all(root);
  auto write = [](const fs::path& p, const std::string& text) {
    fs::create_directories(p.parent_path());
    std::ofstream(p) << text;
  };
  write(root / "repo/pkg/__init__.py", "from .core import Report\n");
  write(root / "repo/pkg/core.py",
        "import json\n\n\nclass Report:\n    \"\"\"A report.\"\"\"\n    def __init__(self, store):\n"
        "        self.store = store\n\n    def summarize(self, key):\n        rows = load(self.store)\n"
        "        return json.dumps(sorted(rows, key=key))\n\n\ndef load(store):\n    return store.rows()\n");
  write(root / "repo/pkg/sub/deep.py", "def deep_helper(path):\n    with open(path) as f:\n        return f.read()\n");
  write(root / "outside/secret.py", std::string(kOutsideSecret) + " = 1\n");
  fs::create_symlink(root / "outside/secret.py", root / "repo/pkg/evil.py");
  fs::create_symlink(root / "outside", root / "repo/pkg/linked");
  return root;
}

}  // namespace repoctx::fuzz
