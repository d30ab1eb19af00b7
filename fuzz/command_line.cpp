// Test-command templates split into argv without a shell: whatever splits, joins back to the same argv;
// what needs a shell is refused with Error.
#include <cstdint>
#include <string>

#include "util/error.h"
#include "util/subprocess.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace repoctx;
  std::string cmd(reinterpret_cast<const char*>(data), size);
  std::vector<std::string> argv;
  try {
    argv = split_command(cmd);
  } catch (const Error&) {
    return 0;
  }
  if (split_command(join_command(argv)) != argv) __builtin_trap();
  auto expanded = expand_tests(cmd, {"tests/a b.py", "t;x.py"}, true);
  if (expanded.size() < argv.size()) __builtin_trap();
  return 0;
}
