// The pieces evaluate's test runs are made of: the scratch copy (new inode for the target, hard links only for
// what the test cannot write, copies keep mode and mtime, the index folder left out), the limits of
// run_limited (file size, timeout, environment), the bubblewrap argv and a real run in it, the pids cgroup
// (root), and the shard a Slurm array or a Kubernetes Indexed Job names. The hostile cases end to end:
// tests/integration/sandbox_e2e.py.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <thread>

#include "eval/runner.h"
#include "eval/scratch_tree.h"
#include "util/error.h"
#include "util/sandbox.h"
#include "util/subprocess.h"
#include "util/temp_dir.h"

using namespace repoctx;
namespace fs = std::filesystem;

namespace {

struct stat stat_of(const fs::path& p) {
  struct stat st {};
  EXPECT_EQ(::lstat(p.c_str(), &st), 0) << p;
  return st;
}

// A small repository: two files, a folder, a symlink, an index folder.
void make_repo(const TempDir& d) {
  d.write("repo/pkg/core.py", "def f():\n    return 1\n");
  d.write("repo/pkg/util.py", "X = 2\n");
  d.write("repo/.repoctx/index.db", "not copied");
  fs::create_symlink("pkg/util.py", d / "repo/link.py");
  fs::permissions(d / "repo/pkg/util.py", fs::perms::owner_read | fs::perms::owner_write | fs::perms::group_read);
  timespec ts[2] = {{1000000000, 0}, {1000000000, 0}};
  ::utimensat(AT_FDCWD, (d / "repo/pkg/util.py").c_str(), ts, 0);
}

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

bool has_arg_pair(const std::vector<std::string>& v, const std::string& a, const std::string& b) {
  for (size_t i = 0; i + 1 < v.size(); ++i)
    if (v[i] == a && v[i + 1] == b) return true;
  return false;
}

}  // namespace

TEST(ScratchTree, TargetIsANewFileOthersAreCopiesWithModeAndTimeIndexLeftOut) {
  TempDir d;
  make_repo(d);
  std::string dst = (d / "scratch/t1").string();
  {
    ScratchTree t((d / "repo").string(), dst, {{"pkg/core.py", "def f():\n    return 2\n"}}, ScratchPolicy{});
    EXPECT_EQ(slurp(dst + "/pkg/core.py"), "def f():\n    return 2\n");
    EXPECT_EQ(slurp(d / "repo/pkg/core.py"), "def f():\n    return 1\n") << "the user's file is untouched";
    EXPECT_NE(stat_of(dst + "/pkg/core.py").st_ino, stat_of(d / "repo/pkg/core.py").st_ino);
    auto copy = stat_of(dst + "/pkg/util.py"), orig = stat_of(d / "repo/pkg/util.py");
    EXPECT_NE(copy.st_ino, orig.st_ino) << "no link without the sandbox";
    EXPECT_EQ(copy.st_mode, orig.st_mode);
    EXPECT_EQ(copy.st_mtim.tv_sec, 1000000000) << "mtime kept: bytecode caches stay valid";
    EXPECT_TRUE(fs::is_symlink(dst + "/link.py"));
    EXPECT_EQ(fs::read_symlink(dst + "/link.py"), "pkg/util.py");
    EXPECT_FALSE(fs::exists(dst + "/.repoctx")) << "the index is not part of the copy";
    EXPECT_EQ(t.stats().linked, 0);
    EXPECT_EQ(t.stats().copied, 2);
    EXPECT_EQ(t.stats().symlinks, 1);
  }
  EXPECT_FALSE(fs::exists(dst)) << "the copy is removed with the object";
}

TEST(ScratchTree, LinksOnlyWhatTheTestCannotWrite) {
  TempDir d;
  make_repo(d);
  d.write("repo/pkg/shared.py", "Y = 3\n");
  fs::permissions(d / "repo/pkg/shared.py", fs::perms::group_write, fs::perm_options::add);
  ScratchPolicy p;
  p.link_unwritable = true;
  p.test_uid = ::geteuid() + 4242;  // the test runs as someone who does not own these files
  std::string dst = (d / "scratch/t2").string();
  ScratchTree t((d / "repo").string(), dst, {{"pkg/core.py", "x"}}, p);
  EXPECT_EQ(stat_of(dst + "/pkg/util.py").st_ino, stat_of(d / "repo/pkg/util.py").st_ino) << "0640: linked";
  EXPECT_NE(stat_of(dst + "/pkg/shared.py").st_ino, stat_of(d / "repo/pkg/shared.py").st_ino)
      << "group-writable: copied";
  EXPECT_NE(stat_of(dst + "/pkg/core.py").st_ino, stat_of(d / "repo/pkg/core.py").st_ino) << "target: new file";
  EXPECT_EQ(t.stats().linked, 1);
  p.test_uid = ::geteuid();  // the owner could chmod and write anything: nothing is linked
  ScratchTree own((d / "repo").string(), (d / "scratch/t3").string(), {}, p);
  EXPECT_EQ(own.stats().linked, 0);
}

TEST(ScratchTree, MissingTargetOrRepositoryIsNotFoundAndLeavesNothing) {
  TempDir d;
  make_repo(d);
  try {
    ScratchTree t((d / "repo").string(), (d / "s").string(), {{"pkg/nope.py", "x"}}, ScratchPolicy{});
    FAIL() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::not_found);
  }
  EXPECT_THROW(ScratchTree((d / "none").string(), (d / "s").string(), {}, ScratchPolicy{}), Error);
  EXPECT_FALSE(fs::exists(d / "s"));
}

TEST(ScratchTree, StaleTreesOfDeadProcessesAreRemoved) {
  TempDir d;
  std::string name = next_scratch_name();  // <host>-<pid>-<n>
  auto dash = name.find('-');
  std::string host = name.substr(0, dash);
  d.write(host + "-999999999-0/f", "x");    // no such process
  d.write(host + "-1-0/f", "x");            // pid 1 lives
  d.write("otherhost-999999999-0/f", "x");  // another machine's: not ours to judge
  remove_stale_scratch(d.str());
  EXPECT_FALSE(fs::exists(d / (host + "-999999999-0")));
  EXPECT_TRUE(fs::exists(d / (host + "-1-0")));
  EXPECT_TRUE(fs::exists(d / "otherhost-999999999-0"));
}

TEST(RunLimited, FileSizeTimeoutEnvironmentAndDirectory) {
  TempDir d;
  CommandLimits lim;
  lim.timeout_s = 20;
  lim.file_size_mb = 1;
  ProcessSetup s;
  s.log_path = (d / "log").string();
  s.cwd = d.str();
  auto r = run_limited({"/bin/sh", "-c", "head -c 2000000 /dev/zero > big"}, s, lim, nullptr);
  EXPECT_NE(r.exit_code, 0) << "a 2 MB write under a 1 MB limit";
  EXPECT_LE(fs::file_size(d / "big"), 1u << 20);
  s.env_extra = {"REPOCTX_T=new"};
  ::setenv("REPOCTX_T", "old", 1);
  r = run_limited({"/bin/sh", "-c", "echo \"$REPOCTX_T\" > env.txt; pwd >> env.txt"}, s, lim, nullptr);
  EXPECT_EQ(r.exit_code, 0);
  EXPECT_EQ(slurp(d / "env.txt"), "new\n" + fs::canonical(d.path()).string() + "\n");
  lim.timeout_s = 0.3;
  r = run_limited({"/bin/sleep", "30"}, s, lim, nullptr);
  EXPECT_TRUE(r.timed_out);
  EXPECT_LT(r.seconds, 5);
}

TEST(RunLimited, ExitStatusesAndNoInheritedFiles) {
  TempDir d;
  CommandLimits lim;
  lim.timeout_s = 20;
  ProcessSetup s;
  s.log_path = (d / "log").string();
  EXPECT_EQ(run_limited({"/bin/sh", "-c", "exit 3"}, s, lim, nullptr).exit_code, 3);
  EXPECT_EQ(run_limited({"/bin/sh", "-c", "kill -TERM $$"}, s, lim, nullptr).exit_code, 128 + SIGTERM);
  // A file this process holds open without close-on-exec (as an ofstream does) is not the command's.
  int fd = ::open((d / "held").c_str(), O_WRONLY | O_CREAT, 0644);
  ASSERT_GE(fd, 0);
  ASSERT_EQ(::dup2(fd, 100), 100);
  EXPECT_EQ(run_limited({"/bin/sh", "-c", "test -e /proc/self/fd/100"}, s, lim, nullptr).exit_code, 1);
  ::close(100);
  ::close(fd);
}

namespace {
bool process_gone(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/stat");
  std::string stat((std::istreambuf_iterator<char>(in)), {});
  auto paren = stat.rfind(')');
  return !in || paren == std::string::npos || stat.compare(paren + 2, 1, "Z") == 0;
}
}  // namespace

TEST(RunLimited, WhatTheCommandStartedDiesWithAKilledRunner) {
  // The runner dies by SIGKILL while the command has a child of its own in its process group (bubblewrap's
  // inner process is one): that child must not outlive the runner.
  TempDir d;
  std::string pid_file = (d / "pid").string();
  pid_t runner = ::fork();
  ASSERT_GE(runner, 0);
  if (runner == 0) {
    CommandLimits lim;
    lim.timeout_s = 120;
    ProcessSetup s;
    s.log_path = (d / "log").string();
    run_limited({"/bin/sh", "-c",
                 "/bin/sleep 300 & echo $! > " + pid_file + ".tmp; mv " + pid_file + ".tmp " + pid_file + "; wait"},
                s, lim, nullptr);
    ::_exit(0);
  }
  int sleeper = 0;
  for (int i = 0; i < 1000 && !sleeper; ++i) {
    std::ifstream in(pid_file);
    if (!(in >> sleeper)) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  ASSERT_GT(sleeper, 0) << "the command never started";
  ::kill(runner, SIGKILL);
  ::waitpid(runner, nullptr, 0);
  bool gone = false;
  for (int i = 0; i < 500 && !gone; ++i) {
    gone = process_gone(sleeper);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  EXPECT_TRUE(gone) << "the command's child " << sleeper << " outlived the killed runner";
  if (!gone) ::kill(sleeper, SIGKILL);
}

TEST(Sandbox, ArgvConfinesAndARealRunWritesOnlyItsTree) {
  if (find_program("bwrap").empty()) GTEST_FAIL() << "bubblewrap is not installed (scripts/setup.sh installs it)";
  TempDir d;
  d.write("tree/a.txt", "a");
  SandboxConfig c;
  Sandbox sb = Sandbox::create(c);
  SandboxMount m;
  m.tree = (d / "tree").string();
  m.mount_at = {(d / "tree").string()};
  std::string home = home_folder();
  m.hidden = {home, (d / "tree/sub").string(), "/tmp/x"};
  auto argv = sb.wrap({"/bin/sh", "-c", "true"}, m, 64);
  for (const char* flag : {"--unshare-net", "--unshare-pid", "--die-with-parent", "--new-session"})
    EXPECT_NE(std::find(argv.begin(), argv.end(), flag), argv.end()) << flag;
  EXPECT_TRUE(has_arg_pair(argv, "--cap-drop", "ALL"));
  EXPECT_TRUE(has_arg_pair(argv, "--tmpfs", "/tmp"));
  if (!home.empty() && fs::is_directory(home)) EXPECT_TRUE(has_arg_pair(argv, "--tmpfs", home));
  EXPECT_FALSE(has_arg_pair(argv, "--tmpfs", (d / "tree/sub").string())) << "inside the tree: not hidden";
  EXPECT_FALSE(has_arg_pair(argv, "--tmpfs", "/tmp/x")) << "under the private /tmp already";
  EXPECT_TRUE(has_arg_pair(argv, "--bind", m.tree));
  EXPECT_EQ(::geteuid() != 0, std::find(argv.begin(), argv.end(), "--nproc=64:64") != argv.end())
      << "RLIMIT_NPROC inside the user namespace for unprivileged users only";
  // A real run: the tree is writable, the system is not.
  auto run = sb.wrap(
      {"/bin/sh", "-c", "echo b > b.txt; touch /usr/repoctx-sandbox-probe 2>/dev/null && exit 9; exit 0"}, m, 64);
  ProcessSetup s;
  s.log_path = (d / "log").string();
  auto r = run_limited(run, s, CommandLimits{}, nullptr);
  EXPECT_EQ(r.exit_code, 0) << slurp(d / "log");
  EXPECT_EQ(slurp(d / "tree/b.txt"), "b\n");
  EXPECT_FALSE(fs::exists("/usr/repoctx-sandbox-probe"));
}

TEST(Sandbox, PidsCgroupBoundsProcessesForRoot) {
  if (::geteuid() != 0) GTEST_SKIP() << "pids cgroups are used for root only";
  auto cg = PidsCgroup::create(5);
  if (!cg) GTEST_SKIP() << "no writable pids cgroup here";
  TempDir d;
  ProcessSetup s;
  s.log_path = (d / "log").string();
  s.cgroup_procs_fd = cg->procs_fd();
  CommandLimits lim;
  lim.timeout_s = 20;
  s.cwd = d.str();
  // Forks until refused: with pids.max 5, python itself and 4 children.
  auto r = run_limited({"/usr/bin/python3", "-c",
                        "import os, time\nn = 0\nfor i in range(20):\n    try:\n        if os.fork() == 0:\n"
                        "            time.sleep(5)\n            os._exit(0)\n        n += 1\n    except OSError:\n"
                        "        break\nopen('n.txt', 'w').write(str(n))\n"},
                       s, lim, nullptr);
  EXPECT_EQ(r.exit_code, 0) << slurp(d / "log");
  EXPECT_EQ(slurp(d / "n.txt"), "4");
  std::string p = cg->path();
  cg.reset();
  EXPECT_FALSE(fs::exists(p)) << "removed with the object";
}

TEST(Shard, SlurmArraysAndKubernetesIndexedJobs) {
  auto env_of = [](std::map<std::string, std::string> m) {
    return [m](const char* k) {
      auto it = m.find(k);
      return it == m.end() ? std::string() : it->second;
    };
  };
  auto c = shard_from_environment(env_of({}));
  EXPECT_EQ(c.count, 0) << "no scheduler: no shard";
  c = shard_from_environment(env_of({{"SLURM_ARRAY_TASK_ID", "2"}, {"SLURM_ARRAY_TASK_COUNT", "3"}}));
  EXPECT_EQ(c.index, 2);
  EXPECT_EQ(c.count, 3);
  c = shard_from_environment(env_of({{"SLURM_ARRAY_TASK_ID", "5"},
                                     {"SLURM_ARRAY_TASK_COUNT", "3"},
                                     {"SLURM_ARRAY_TASK_MIN", "1"},
                                     {"SLURM_ARRAY_TASK_STEP", "2"}}));
  EXPECT_EQ(c.index, 2) << "--array=1-5:2: task 5 is the third";
  EXPECT_THROW(shard_from_environment(env_of(
                   {{"SLURM_ARRAY_TASK_ID", "9"}, {"SLURM_ARRAY_TASK_COUNT", "3"}, {"SLURM_ARRAY_TASK_MIN", "1"}})),
               Error)
      << "--array=1,5,9: no shard for 9";
  EXPECT_THROW(shard_from_environment(env_of({{"SLURM_ARRAY_TASK_ID", "x"}, {"SLURM_ARRAY_TASK_COUNT", "3"}})), Error);
  c = shard_from_environment(env_of({{"JOB_COMPLETION_INDEX", "1"}}), 4);
  EXPECT_EQ(c.index, 1);
  EXPECT_EQ(c.count, 4);
  c = shard_from_environment(env_of({{"JOB_COMPLETION_INDEX", "3"}, {"REPOCTX_SHARD_COUNT", "4"}}));
  EXPECT_EQ(c.index, 3);
  try {
    shard_from_environment(env_of({{"JOB_COMPLETION_INDEX", "1"}}));
    FAIL() << "no count";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::usage);
    EXPECT_NE(std::string(e.what()).find("REPOCTX_SHARD_COUNT"), std::string::npos);
  }
  EXPECT_THROW(shard_from_environment(env_of({{"JOB_COMPLETION_INDEX", "4"}}), 4), Error) << "index >= count";
  EXPECT_THROW(shard_from_environment(env_of({}), 4), Error) << "--shard-count without an Indexed Job";
}
