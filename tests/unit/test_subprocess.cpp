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

TEST(Subprocess, CommandsRunAsArgvAndNoShell) {
  TempDir dir;
  std::string marker = dir.str() + "/PWNED";
  std::atomic<bool> stop{false};
  CommandLimits lim;
  lim.timeout_s = 30;
  ProcessSetup setup;
  setup.cwd = dir.str();
  setup.log_path = dir.str() + "/log.txt";
  auto run = [&](const std::vector<std::string>& argv) {
    PreparedCommand c = prepare_command(argv);
    ProcessSetup s = setup;
    s.env_extra = c.env;
    return run_limited(c.argv, s, lim, &stop);
  };
  auto log = [&] {
    std::ifstream in(setup.log_path);
    return std::string((std::istreambuf_iterator<char>(in)), {});
  };
  // The whole `;touch` text is one argument of echo.
  auto r = run({"echo", "a';touch " + marker + ";'b"});
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(marker));
  EXPECT_EQ(log(), "a';touch " + marker + ";'b\n");
  // Leading NAME=value words set the environment; PATH lookup finds the program.
  r = run({"GREETING=hi there", "sh", "-c", "test \"$GREETING\" = 'hi there'"});
  EXPECT_EQ(r.exit_code, 0);
  r = run({"no-such-program-repoctx"});
  EXPECT_EQ(r.exit_code, 127);
  EXPECT_NE(log().find("cannot execute 'no-such-program-repoctx'"), std::string::npos) << log();
  EXPECT_THROW(prepare_command({"A=1"}), Error);
  std::string captured;
  EXPECT_EQ(run_capture({"printf", "%s", "x';touch " + marker + ";'y"}, captured), 0);
  EXPECT_EQ(captured, "x';touch " + marker + ";'y");
  EXPECT_FALSE(std::filesystem::exists(marker));
}
