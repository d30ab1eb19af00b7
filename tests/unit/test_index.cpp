#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <random>
#include <set>

#include "helpers.h"
#include "index/index.h"
#include "index/repo_view.h"
#include "index/schema.h"
#include "index/store.h"
#include "repoctx/repoctx.h"
#include "util/error.h"
#include "util/sqlite.h"

using namespace repoctx;
using repoctx::testing::TempDir;

namespace {
IndexOptions options_for(const std::string& db) {
  IndexOptions o;
  o.db_path = db;
  o.progress = false;
  o.threads = 2;
  return o;
}
IndexStats index(const TempDir& repo, const std::string& db) {
  return build_index(repo.str(), options_for(db));
}
}  // namespace

TEST(Index, IncrementalReparsesOnlyChangedFilesAndRemovesDeletedOnes) {
  TempDir repo, tmp;
  std::string db = tmp.str() + "/index.db";
  repo.write("pkg/__init__.py", "from .a import f\n");
  repo.write("pkg/a.py", "def f():\n    return 1\n");
  repo.write("pkg/b.py", "def g():\n    return 2\n");
  repo.write("pkg/c.py", "def h():\n    return 3\n");
  auto s1 = index(repo, db);
  EXPECT_EQ(s1.parsed, 4u);
  EXPECT_TRUE(s1.complete);

  auto s2 = index(repo, db);
  EXPECT_EQ(s2.parsed, 0u);
  EXPECT_EQ(s2.unchanged, 4u);

  repo.write("pkg/b.py", "def g2():\n    return 22\n");
  std::filesystem::remove(repo.path() / "pkg/c.py");
  // Same content, new mtime: re-hashed but not re-parsed.
  std::filesystem::last_write_time(repo.path() / "pkg/a.py", std::filesystem::file_time_type::clock::now());
  auto s3 = index(repo, db);
  EXPECT_EQ(s3.parsed, 1u);
  EXPECT_EQ(s3.removed, 1u);
  EXPECT_EQ(s3.touched, 1u);

  auto v = RepoView::open(db);
  EXPECT_TRUE(v->complete());
  std::vector<std::string> quals;
  for (const auto& e : v->entities()) quals.push_back(e.qualname);
  std::sort(quals.begin(), quals.end());
  EXPECT_EQ(quals, (std::vector<std::string>{"f", "g2"}));
  EXPECT_EQ(v->files().size(), 3u);
  ASSERT_TRUE(v->file_by_module("pkg.b"));
  EXPECT_EQ(v->content(*v->file_by_module("pkg.b")), "def g2():\n    return 22\n");
}

// An automatic refresh (a query's) keeps the settings the index was built with; an explicit run applies
// its own.
TEST(Index, AnAutomaticRefreshKeepsTheIndexsSettings) {
  TempDir repo, tmp;
  std::string db = tmp.str() + "/index.db";
  repo.write("pkg/__init__.py", "");
  repo.write("pkg/a.py", "def f():\n    return 1\n");
  repo.write("vendor/lib.py", "def v():\n    return 2\n");
  const IndexOptions o = options_for(db);
  IndexOptions built = o;
  built.walk.skip_vendored = false;
  built.snippet_lines = 20;
  EXPECT_EQ(build_index(repo.str(), built).files_seen, 3u);

  IndexOptions refresh = o;  // defaults: vendored trees skipped, L = 15
  refresh.keep_stored_settings = true;
  IndexStats kept = build_index(repo.str(), refresh);
  EXPECT_EQ(kept.files_seen, 3u);  // vendor/lib.py stays
  EXPECT_EQ(kept.removed, 0u);
  EXPECT_EQ(kept.parsed, 0u);  // the snippet length too: no re-index of every file
  {
    sql::Db d(db, true);
    EXPECT_EQ(meta_get(d, "snippet_lines"), "20");
  }

  // The public API's refreshes (serve, mcp, Python) with default parameters are automatic ones.
  api::OpenParams defaults;
  defaults.index.db = db;
  api::Index opened(repo.str(), defaults);
  EXPECT_EQ(opened.info().files, 3);
  EXPECT_EQ(opened.refresh(false).removed, 0);
  EXPECT_EQ(opened.info().files, 3);

  IndexStats applied = build_index(repo.str(), o);  // explicit: the given settings
  EXPECT_EQ(applied.files_seen, 2u);
  EXPECT_EQ(applied.removed, 1u);
  EXPECT_EQ(applied.parsed, 2u);  // L changed to 15: every file again
  {
    sql::Db d(db, true);
    EXPECT_EQ(meta_get(d, "snippet_lines"), "15");
  }
}

TEST(Index, ModuleNamesFollowNewPackages) {
  TempDir repo, tmp;
  std::string db = tmp.str() + "/index.db";
  repo.write("lib/util.py", "def u(): pass\n");
  index(repo, db);
  EXPECT_TRUE(RepoView::open(db)->file_by_module("lib.util"));
  repo.write("__init__.py", "");  // the root becomes a package: every module name changes, no file re-parsed
  auto s = index(repo, db);
  EXPECT_EQ(s.parsed, 1u);
  auto v = RepoView::open(db);
  std::string root = repo.path().filename().string();
  EXPECT_TRUE(v->file_by_module(root + ".lib.util"));
}

TEST(Index, BadInputIsReportedAndTheRestIndexed) {
  TempDir repo, tmp;
  std::string db = tmp.str() + "/index.db";
  repo.write("empty.py", "");
  repo.write("latin1.py", "# -*- coding: latin-1 -*-\nname = 'caf\xe9'\ndef ok():\n    return name\n");
  repo.write("broken.py", "def fine():\n    return 1\n\ndef bad(:\n    pass\n");
  repo.write("gen.py", "# generated\n" + std::string(50u << 20, 'x'));  // 50 MB
  repo.write("good.py", "class A:\n    pass\n");
  auto s = index(repo, db);
  EXPECT_TRUE(s.complete);
  EXPECT_EQ(s.parsed, 4u);
  EXPECT_EQ(s.files_with_errors, 1u);
  EXPECT_GE(s.skipped, 1u);  // the 50 MB file, above the size limit
  auto v = RepoView::open(db);
  std::set<std::string> quals;
  for (const auto& e : v->entities()) quals.insert(e.qualname);
  for (auto q : {"A", "fine", "name", "ok"}) EXPECT_TRUE(quals.count(q)) << q;
  EXPECT_FALSE(v->file_by_path("gen.py"));
  EXPECT_EQ(v->files()[*v->file_by_path("broken.py")].n_errors > 0, true);
}

TEST(Index, MissingIndexAndForeignIndexGiveClearErrors) {
  TempDir a, b, tmp;
  try {
    RepoView::open(tmp.str() + "/none.db");
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::not_found);
    EXPECT_NE(std::string(e.what()).find("repoctx index"), std::string::npos);
  }
  a.write("x.py", "x = 1\n");
  b.write("y.py", "y = 1\n");
  std::string db = tmp.str() + "/index.db";
  index(a, db);
  try {
    index(b, db);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("belongs to"), std::string::npos);
  }
}

TEST(Index, InterruptedRunLeavesAConsistentIndexThatTheNextRunCompletes) {
  TempDir repo, tmp;
  std::string db = tmp.str() + "/index.db";
  for (int i = 0; i < 40; ++i) repo.write("m" + std::to_string(i) + ".py", "def f" + std::to_string(i) + "(): pass\n");
  g_interrupted = false;
  IndexOptions o;
  o.db_path = db;
  o.progress = false;
  o.batch_files = 5;
  o.threads = 1;
  o.interrupt_after_files = 10;  // as if Ctrl-C arrived after two batches
  auto s1 = build_index(repo.str(), o);
  o.interrupt_after_files = 0;
  EXPECT_FALSE(interrupted()) << "the run stops itself; the process-wide flag is the signal handlers' own";
  EXPECT_FALSE(s1.complete);
  auto v1 = RepoView::open(db);
  EXPECT_FALSE(v1->complete());
  EXPECT_GE(v1->files().size(), 10u);
  EXPECT_LT(v1->files().size(), 40u);
  for (const auto& f : v1->files()) EXPECT_EQ(f.n_entities, 1);  // every committed file is whole
  auto s2 = build_index(repo.str(), o);
  EXPECT_TRUE(s2.complete);
  EXPECT_EQ(s2.parsed + s2.unchanged, 40u);
  EXPECT_EQ(RepoView::open(db)->entities().size(), 40u);
}

// ------------------------------------------------------------------------------------ issue 21, item 3
// A view reads one snapshot for its whole life: an indexer replacing every file's rows (new ids) while the
// view is open changes nothing it reads later (before: the lazily read references and contents of the
// replaced ids were gone, and a view loaded while rows moved saw entities of files it did not know).
TEST(Index, AViewKeepsItsSnapshotWhileTheIndexIsRewritten) {
  TempDir repo, tmp;
  std::string db = tmp.str() + "/index.db";
  repo.write("a.py", "import os\n\n\ndef f():\n    return os.path.join('a', 'b')\n");
  repo.write("b.py", "def g():\n    return f()\n");
  index(repo, db);
  auto v = RepoView::open(db);
  int a = *v->file_by_path("a.py");
  repo.write("a.py", "def changed():\n    return 2\n");
  IndexOptions o;
  o.db_path = db;
  o.progress = false;
  o.force = true;  // every file's rows deleted and inserted again, under new ids
  build_index(repo.str(), o);
  EXPECT_EQ(v->content(a), "import os\n\n\ndef f():\n    return os.path.join('a', 'b')\n");
  bool saw = false;
  for (const auto& r : v->references(a)) saw = saw || r.chain == "os.path.join";
  EXPECT_TRUE(saw) << "the references of the snapshot's a.py";
  v->load_all_terms();
  EXPECT_GT(v->entity_terms(v->files()[a].first_entity).length, 0u);
  auto fresh = RepoView::open(db);
  EXPECT_EQ(fresh->content(*fresh->file_by_path("a.py")), "def changed():\n    return 2\n");
}

// ------------------------------------------------------------------------------------ issue 21, item 4
namespace {

void expect_bad_index(const std::function<void()>& f, const std::string& what, const std::string& needle) {
  try {
    f();
    ADD_FAILURE() << what << ": no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input) << what << ": " << e.what();
    EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << what << ": " << e.what();
  }
}

std::string file_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(in)), {});
}

void run_sql(const std::string& db, const char* statement) {
  sql::Db d(db);
  d.exec(statement);
}

}  // namespace

TEST(Index, DamagedIndexesAreReportedWithTheFixAndNeverDeleted) {
  TempDir repo, tmp;
  for (int i = 0; i < 30; ++i)
    repo.write("m" + std::to_string(i) + ".py",
               "def f" + std::to_string(i) + "(x):\n    return x + " + std::string(2000, '1') + "\n");
  std::string clean = tmp.str() + "/clean.db";
  index(repo, clean);
  IndexOptions write;
  write.progress = false;
  auto cases = std::vector<std::pair<std::string, std::function<void(const std::string&)>>>{
      {"zero bytes", [](const std::string& p) { std::ofstream(p, std::ios::trunc); }},
      {"dropped table", [](const std::string& p) { run_sql(p, "DROP TABLE entities"); }},
      {"newer schema",
       [](const std::string& p) { run_sql(p, "UPDATE meta SET value='999' WHERE key='schema_version'"); }},
      {"damaged pages",
       [](const std::string& p) {
         std::fstream f(p, std::ios::in | std::ios::out | std::ios::binary);
         f.seekp(0, std::ios::end);
         auto size = static_cast<size_t>(f.tellp());
         std::mt19937 rng(21);
         for (size_t page = 1; page * 4096 < size; page += 1) {  // every page but the first (header, schema)
           f.seekp(static_cast<std::streamoff>(page * 4096));
           for (int k = 0; k < 4096; ++k) f.put(static_cast<char>(rng()));
         }
       }},
  };
  for (const auto& [what, damage] : cases) {
    std::string db = tmp.str() + "/" + what + ".db";
    std::filesystem::copy_file(clean, db);
    damage(db);
    std::string bytes = file_bytes(db);
    std::string fix = what == "newer schema" ? "newer repoctx" : "repoctx index --rebuild";
    write.db_path = db;
    expect_bad_index([&] { build_index(repo.str(), write); }, what + " (index)", fix);
    expect_bad_index([&] { RepoView::open(db)->load_all_terms(); }, what + " (view)", "--rebuild");
    EXPECT_EQ(file_bytes(db), bytes) << what << ": the file is left as it was";
    IndexOptions rebuild = write;
    rebuild.rebuild = true;
    auto st = build_index(repo.str(), rebuild);
    EXPECT_EQ(st.parsed, 30u) << what;
    EXPECT_EQ(RepoView::open(db)->entities().size(), 30u) << what;
  }
  // --rebuild never deletes a database that is not a repoctx index.
  std::string foreign = tmp.str() + "/foreign.db";
  run_sql(foreign, "CREATE TABLE users(id INTEGER PRIMARY KEY, name TEXT)");
  IndexOptions rebuild = write;
  rebuild.rebuild = true;
  rebuild.db_path = foreign;
  expect_bad_index([&] { build_index(repo.str(), rebuild); }, "foreign database", "not a repoctx index");
  sql::Db still(foreign, true);
  sql::Stmt s(still, "SELECT count(*) FROM sqlite_master WHERE name='users'");
  ASSERT_TRUE(s.step());
  EXPECT_EQ(s.i64(0), 1);
}

// The damage check is skipped only while the file is exactly as a complete run left it: any later write
// to it (here: pages overwritten in place, a SQL edit, a pending write-ahead log) or an interrupted run
// brings it back, and damage written into the stamped file itself is still found.
TEST(Index, TheDamageCheckIsSkippedOnlyForAFileAsTheLastCompleteRunLeftIt) {
  TempDir repo, tmp;
  for (int i = 0; i < 30; ++i)
    repo.write("m" + std::to_string(i) + ".py",
               "def f" + std::to_string(i) + "(x):\n    return x + " + std::string(2000, '1') + "\n");
  const std::string db = tmp.str() + "/index.db";
  index(repo, db);
  EXPECT_TRUE(std::filesystem::exists(db + "-verified"));
  EXPECT_TRUE(index_unchanged_since_verified(db)) << "a complete run stamps the file it closed";
  index(repo, db);  // nothing to re-index: still stamped afterwards
  EXPECT_TRUE(index_unchanged_since_verified(db));

  // A copy (another inode) has no stamp of its own.
  const std::string copy = tmp.str() + "/copy.db";
  std::filesystem::copy_file(db, copy);
  EXPECT_FALSE(index_unchanged_since_verified(copy));

  // A SQL edit by another process.
  run_sql(db, "INSERT OR REPLACE INTO meta(key, value) VALUES('edited', 'by hand')");
  EXPECT_FALSE(index_unchanged_since_verified(db));
  index(repo, db);
  EXPECT_TRUE(index_unchanged_since_verified(db));

  // A write-ahead log with changes the file does not show yet.
  {
    std::ofstream(db + "-wal", std::ios::binary) << std::string(4096, 'x');
    EXPECT_FALSE(index_unchanged_since_verified(db));
    std::filesystem::remove(db + "-wal");
  }
  EXPECT_TRUE(index_unchanged_since_verified(db));

  // An interrupted run leaves no valid stamp.
  repo.write("m0.py", "def g(x):\n    return x\n");
  repo.write("m1.py", "def h(x):\n    return x\n");
  IndexOptions o;
  o.db_path = db;
  o.progress = false;
  o.batch_files = 1;
  o.threads = 1;
  o.interrupt_after_files = 1;
  EXPECT_FALSE(build_index(repo.str(), o).complete);
  EXPECT_FALSE(index_unchanged_since_verified(db));
  index(repo, db);
  EXPECT_TRUE(index_unchanged_since_verified(db));

  // Pages of the stamped file overwritten in place: the leaf pages of the snippets table, which neither a
  // refresh with nothing to re-index nor a view loaded from the query image reads. Only the damage check
  // finds them.
  std::vector<int64_t> pages;
  int64_t page_size = 0;
  {
    sql::Db d(db, true);
    sql::Stmt ps(d, "PRAGMA page_size");
    ASSERT_TRUE(ps.step());
    page_size = ps.i64(0);
    sql::Stmt s(d, "SELECT pageno FROM dbstat WHERE name='snippets' AND pagetype='leaf'");
    while (s.step()) pages.push_back(s.i64(0));
  }
  ASSERT_FALSE(pages.empty());
  {
    std::fstream f(db, std::ios::in | std::ios::out | std::ios::binary);
    std::mt19937 rng(21);
    for (int64_t page : pages) {
      f.seekp(static_cast<std::streamoff>((page - 1) * page_size));
      for (int64_t k = 0; k < page_size; ++k) f.put(static_cast<char>(rng()));
    }
  }
  EXPECT_FALSE(index_unchanged_since_verified(db));
  // Every writer checks (`index`, and the refresh that `retrieve`, `symbols` and a server run first), and so
  // does every reader: each refuses the file before reading or writing it, and the stamp stays as it was.
  const std::string stamp_before = file_bytes(db + "-verified"), damaged = file_bytes(db);
  IndexOptions write;
  write.db_path = db;
  write.progress = false;
  for (int run = 0; run < 2; ++run) {
    try {
      build_index(repo.str(), write);
      ADD_FAILURE() << "the damaged index was written into";
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input);
      EXPECT_NE(std::string(e.what()).find("--rebuild"), std::string::npos) << e.what();
    }
    EXPECT_EQ(file_bytes(db + "-verified"), stamp_before) << "a run that failed the check stamped the file";
    EXPECT_FALSE(index_unchanged_since_verified(db));
  }
  try {
    RepoView::open(db);
    ADD_FAILURE() << "the damaged index was opened for reading";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
    EXPECT_NE(std::string(e.what()).find("damaged"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("--rebuild"), std::string::npos) << e.what();
  }
  EXPECT_EQ(file_bytes(db), damaged) << "something was written into the damaged file";
}

TEST(Index, ANewIndexIsNeverAnEmptyFile) {
  // The index appears whole (schema included) or not at all: a zero-byte file at the index path can
  // only come from outside, and is reported as damage rather than silently rebuilt.
  TempDir repo, tmp;
  repo.write("x.py", "x = 1\n");
  std::string db = tmp.str() + "/sub/index.db";
  index(repo, db);
  EXPECT_GT(std::filesystem::file_size(db), 0u);
  for (const auto& e : std::filesystem::directory_iterator(tmp.path() / "sub"))
    EXPECT_EQ(e.path().filename().string().find(".new-"), std::string::npos) << e.path();
}

// A write that fails in the middle of a run (here: a trigger that refuses every snippet row, as a full disk
// or an I/O error would refuse a page) ends that run with an Error to its caller, stops the parser threads,
// and leaves the process-wide interrupt flag alone: a server whose forced refresh fails keeps serving the
// snapshot it had instead of reading the flag as "shut down".
TEST(Index, AFailedWriteThrowsToTheCallerAndNeverSetsTheInterruptFlag) {
  TempDir repo, tmp;
  for (int i = 0; i < 60; ++i)
    repo.write("m" + std::to_string(i) + ".py",
               "def f" + std::to_string(i) + "(x):\n    return x + " + std::to_string(i) + "\n");
  const std::string db = tmp.str() + "/index.db";
  api::OpenParams params;
  params.index.db = db;
  params.index.threads = 2;
  api::Index idx(repo.str(), params);
  ASSERT_EQ(idx.symbols().size(), 60u);
  run_sql(db,
          "CREATE TRIGGER refuse_snippets BEFORE INSERT ON snippets "
          "BEGIN SELECT RAISE(ABORT, 'simulated write failure'); END");
  g_interrupted = false;
  for (int attempt = 0; attempt < 2; ++attempt) {
    try {
      idx.refresh(true);  // POST /v1/index {"force": true}, MCP refresh
      ADD_FAILURE() << "the forced refresh succeeded although every snippet write fails";
    } catch (const Error& e) {
      EXPECT_NE(std::string(e.what()).find("simulated write failure"), std::string::npos) << e.what();
    }
    EXPECT_FALSE(interrupted()) << "a failed write set the process-wide interrupt flag";
  }
  IndexOptions o;
  o.db_path = db;
  o.progress = false;
  o.threads = 2;
  o.force = true;
  EXPECT_THROW(build_index(repo.str(), o), Error);
  EXPECT_FALSE(interrupted());
  // The snapshot loaded before keeps answering, and the index is whole again once writes succeed.
  EXPECT_EQ(idx.symbols().size(), 60u);
  run_sql(db, "DROP TRIGGER refuse_snippets");
  auto r = idx.refresh(true);
  EXPECT_TRUE(r.complete);
  EXPECT_EQ(r.parsed, 60);
  EXPECT_EQ(idx.symbols().size(), 60u);
}
