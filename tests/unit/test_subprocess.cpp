// Subprocesses without a shell (issue 21, item 5): command lines split like a shell would quote them, but
// no shell ever runs, so a path holding `;touch x;` is an argument and nothing else.
#include <gtest/gtest.h>

#include <atomic>
#include <filesystem>
#include <fstream>

#include "helpers.h"
#include "util/error.h"
#include "util/subprocess.h"

using namespace repoctx;
using repoctx::testing::TempDir;

TEST(Subprocess, SplitCommandQuotesLikeAShellWithoutOne) {
  using V = std::vector<std::string>;
  EXPECT_EQ(split_command("python3 -m pytest -q"), (V{"python3", "-m", "pytest", "-q"}));
  EXPECT_EQ(split_command("a 'b c' \"d 'e'\" f\\ g  ''"), (V{"a", "b c", "d 'e'", "f g", ""}));
  EXPECT_EQ(split_command("x \"a\\\"b\\\\\" 'it'\\''s'"), (V{"x", "a\"b\\", "it's"}));
  EXPECT_EQ(split_command("PYTHONPATH=. pytest 'k;touch x'"), (V{"PYTHONPATH=.", "pytest", "k;touch x"}));
  for (const char* bad : {"a; b", "a && b", "a | b", "a > out", "a $(b)", "a `b`", "echo $HOME", "a *.py", "cd ~",
                          "x \"$y\"", "a 'unterminated", "a \"unterminated"}) {
    try {
      split_command(bad);
      ADD_FAILURE() << bad;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input) << bad;
    }
  }
}

TEST(Subprocess, JoinCommandRoundTrips) {
  std::vector<std::vector<std::string>> cases = {
      {"python3", "-m", "pytest", "tests/test_a.py"},
      {"python3", "run.py", "tests/test_a;touch PWNED;.py", "tests/test it's.py", "a\"b", "$HOME", "", "*"},
  };
  for (const auto& argv : cases) EXPECT_EQ(split_command(join_command(argv)), argv) << join_command(argv);
}

TEST(Subprocess, ExpandTestsGivesOneArgumentPerPath) {
  using V = std::vector<std::string>;
  V tests = {"tests/test_a;touch x;.py", "tests/test b.py"};
  EXPECT_EQ(expand_tests("python3 -m pytest -q {tests}", tests, false),
            (V{"python3", "-m", "pytest", "-q", tests[0], tests[1]}));
  EXPECT_EQ(expand_tests("python3 -m pytest", tests, true), (V{"python3", "-m", "pytest", tests[0], tests[1]}));
  EXPECT_EQ(expand_tests("python3 -m pytest", tests, false), (V{"python3", "-m", "pytest"}));
  EXPECT_EQ(expand_tests("run --files={tests}", tests, false), (V{"run", "--files=" + tests[0] + " " + tests[1]}));
}

TEST(Subprocess, RunCommandRunsArgvAndNoShell) {
  TempDir dir;
  std::string marker = dir.str() + "/PWNED";
  std::atomic<bool> stop{false};
  CommandLimits lim;
  lim.timeout_s = 30;
  std::string log = dir.str() + "/log.txt";
  // The whole `;touch` text is one argument of echo.
  auto r = run_command({"echo", "a';touch " + marker + ";'b"}, dir.str(), {}, log, lim, &stop);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(marker));
  std::ifstream in(log);
  std::string out((std::istreambuf_iterator<char>(in)), {});
  EXPECT_EQ(out, "a';touch " + marker + ";'b\n");
  // Leading NAME=value words set the environment; PATH lookup finds the program.
  r = run_command({"GREETING=hi there", "sh", "-c", "test \"$GREETING\" = 'hi there'"}, dir.str(), {}, log, lim, &stop);
  EXPECT_EQ(r.exit_code, 0);
  r = run_command({"no-such-program-repoctx"}, dir.str(), {}, log, lim, &stop);
  EXPECT_EQ(r.exit_code, 127);
  std::ifstream in2(log);
  std::string why((std::istreambuf_iterator<char>(in2)), {});
  EXPECT_NE(why.find("command not found"), std::string::npos) << why;
  std::string captured;
  EXPECT_EQ(run_capture({"printf", "%s", "x';touch " + marker + ";'y"}, captured), 0);
  EXPECT_EQ(captured, "x';touch " + marker + ";'y");
  EXPECT_FALSE(std::filesystem::exists(marker));
}
