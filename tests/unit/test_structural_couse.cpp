// The structural strategy's module co-use features (issue 19, s5): which members of a module the repository
// uses, and uses together with the members the target's file already uses. Counted from the index, with the
// target's hidden body removed from every count.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "helpers.h"
#include "index/derived_file.h"
#include "index/index.h"
#include "index/symbol_graph.h"
#include "indexed_repo.h"
#include "retrieve/retriever.h"
#include "retrieve/structural/structural.h"
#include "retrieve/structural/unit_refs_store.h"
#include "util/file_io.h"

using namespace repoctx;
using repoctx::testing::TempDir;

namespace {

// m.a and m.b are used together by two functions, m.c alone by one; the target's file uses m.a outside the
// target, and the target's body (hidden) uses m.b and m.c.
const char* kTargetFile =
    "from pkg import m\n"
    "\n"
    "def other():\n"
    "    return m.a()\n"
    "\n"
    "def target(x):\n"
    "    \"\"\"Combine x.\"\"\"\n"
    "    return m.b() + m.c() + x\n";
const char* kTargetFileWithoutBody =
    "from pkg import m\n"
    "\n"
    "def other():\n"
    "    return m.a()\n"
    "\n"
    "def target(x):\n"
    "    \"\"\"Combine x.\"\"\"\n"
    "    ...\n";

void write_repo(TempDir& d, const char* target_file) {
  d.write("pkg/__init__.py", "");
  d.write("pkg/m.py", "def a():\n    return 1\n\ndef b():\n    return 2\n\ndef c():\n    return 3\n");
  d.write("pkg/u1.py", "from pkg import m\n\ndef f1():\n    return m.a() + m.b()\n");
  d.write("pkg/u2.py", "from pkg import m\n\ndef f2():\n    return m.a() * m.b()\n");
  d.write("pkg/u3.py", "from pkg import m\n\ndef f3():\n    return m.c()\n");
  d.write("pkg/t.py", target_file);
}

// Feature name -> value for each candidate (by qualified name) of `target`, for the features whose name
// starts with one of `prefixes`.
std::map<std::string, std::map<std::string, double>> features_of(const TempDir& repo, const TempDir& tmp,
                                                                 const std::string& target,
                                                                 const std::vector<std::string>& prefixes) {
  IndexOptions o;
  o.db_path = tmp.str() + "/i.db";
  o.progress = false;
  build_index(repo.str(), o);
  auto e = Engine::open(o.db_path);
  RetrievalQuery q;
  q.target = e->resolve_target(target);
  auto ctx = context_of(*e, q);
  StructuralFeatures fb(*e);
  auto cand = fb.build(*ctx, query_text(*e, q, ctx.get()), StructuralParams{});
  const auto& names = structural_feature_names();
  std::map<std::string, std::map<std::string, double>> out;
  for (size_t k = 0; k < cand.entities.size(); ++k) {
    const auto& ent = e->view().entities()[cand.entities[k]];
    std::string key = e->view().files()[ent.file].path + "::" + ent.qualname;
    for (size_t f = 0; f < names.size(); ++f)
      for (const auto& prefix : prefixes)
        if (names[f].rfind(prefix, 0) == 0) out[key][names[f]] = cand.features[k][f];
  }
  return out;
}

std::map<std::string, std::map<std::string, double>> couse_features(const TempDir& repo, const TempDir& tmp) {
  return features_of(repo, tmp, "pkg/t.py::target", {"module_", "file_imported"});
}

// Same-file neighbour votes (issue 19, s7): read_config_file is the file's function most like load_config
// (signature and docstring), draw shares only `path`; what the hidden body uses (secret) gets no vote.
const char* kVotesFile =
    "def helper():\n    return 1\n\n"
    "def helper2():\n    return 2\n\n"
    "def helper3():\n    return 3\n\n"
    "def secret():\n    return 4\n\n"
    "def read_config_file(path):\n    \"\"\"Read the config file at path.\"\"\"\n    return helper() + helper2()\n\n"
    "def draw(path):\n    \"\"\"Paint a canvas.\"\"\"\n    return helper3()\n\n"
    "def load_config(path):\n    \"\"\"Read the config.\"\"\"\n";

}  // namespace

TEST(StructuralCoUse, CountsWhatTheRepositoryUsesTogetherWithoutTheHiddenBody) {
  TempDir repo, tmp;
  write_repo(repo, kTargetFile);
  auto f = couse_features(repo, tmp);
  ASSERT_TRUE(f.count("pkg/m.py::a") && f.count("pkg/m.py::b") && f.count("pkg/m.py::c"));
  // Users of m's members without the target: f1, f2, f3, other. b: f1, f2; c: f3 (the hidden body's use of
  // b and c is not counted).
  EXPECT_DOUBLE_EQ(f["pkg/m.py::b"]["module_share"], 2.0 / 4.0);
  EXPECT_DOUBLE_EQ(f["pkg/m.py::c"]["module_share"], 1.0 / 4.0);
  EXPECT_DOUBLE_EQ(f["pkg/m.py::a"]["module_share"], 3.0 / 4.0);
  // Rank among m's members by use: a (3), b (2), c (1).
  EXPECT_DOUBLE_EQ(f["pkg/m.py::a"]["module_member_rank"], 1.0);
  EXPECT_DOUBLE_EQ(f["pkg/m.py::b"]["module_member_rank"], 0.5);
  EXPECT_DOUBLE_EQ(f["pkg/m.py::c"]["module_member_rank"], 1.0 / 3.0);
  // The target's file uses a; the users of a are f1, f2 and other; b is used by two of them, c by none.
  EXPECT_DOUBLE_EQ(f["pkg/m.py::b"]["module_couse"], 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(f["pkg/m.py::b"]["module_couse_log"], std::log1p(2.0));
  EXPECT_DOUBLE_EQ(f["pkg/m.py::c"]["module_couse"], 0.0);
  EXPECT_DOUBLE_EQ(f["pkg/m.py::b"]["module_file_uses"], std::log1p(1.0));
  // a is the only used member: no other member of m is used with it.
  EXPECT_DOUBLE_EQ(f["pkg/m.py::a"]["module_file_uses"], 0.0);
  EXPECT_DOUBLE_EQ(f["pkg/m.py::a"]["module_couse"], 0.0);
  EXPECT_DOUBLE_EQ(f["pkg/m.py::c"]["file_imported"], 1.0);
}

// A popular candidate (b used by 62 functions, 60 of which use nothing else of m): its co-use only counts
// the users of the target file's used member a (f1, f2, other), as in the repository without the 60.
TEST(StructuralCoUse, APopularCandidatesCoUseIsCountedTheSameWay) {
  TempDir repo, tmp;
  write_repo(repo, kTargetFile);
  for (int i = 0; i < 60; ++i)
    repo.write("pkg/p" + std::to_string(i) + ".py", "from pkg import m\n\ndef g():\n    return m.b()\n");
  auto f = couse_features(repo, tmp);
  ASSERT_TRUE(f.count("pkg/m.py::b"));
  // a's users: f1, f2 and other; b is used by f1 and f2 of them.
  EXPECT_DOUBLE_EQ(f["pkg/m.py::b"]["module_couse"], 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(f["pkg/m.py::b"]["module_couse_log"], std::log1p(2.0));
  EXPECT_DOUBLE_EQ(f["pkg/m.py::c"]["module_couse"], 0.0);
}

// The features on the real index with the body hidden equal those on a copy of the repository whose target
// has no body: the hidden body contributes nothing.
TEST(StructuralCoUse, HiddenBodyGivesTheFeaturesOfACopyWithoutTheBody) {
  TempDir orig, copy, t1, t2;
  write_repo(orig, kTargetFile);
  write_repo(copy, kTargetFileWithoutBody);
  auto a = couse_features(orig, t1), b = couse_features(copy, t2);
  ASSERT_GE(a.size(), 3u);
  EXPECT_EQ(a, b);
}

TEST(StructuralLocalVotes, SimilarFunctionsOfTheFileVoteForWhatTheyUseAndTheHiddenBodyForNothing) {
  TempDir repo, copy, t1, t2;
  repo.write("pkg/__init__.py", "");
  repo.write("pkg/t.py", std::string(kVotesFile) + "    return secret() + helper()\n");
  copy.write("pkg/__init__.py", "");
  copy.write("pkg/t.py", std::string(kVotesFile) + "    ...\n");
  auto f = features_of(repo, t1, "pkg/t.py::load_config", {"local_vote"});
  for (const char* c : {"pkg/t.py::helper", "pkg/t.py::helper2", "pkg/t.py::helper3", "pkg/t.py::secret"})
    ASSERT_TRUE(f.count(c)) << c << " is not a candidate";
  // read_config_file is the most similar (weight 1): helper and helper2 get 1, tied at the best rank.
  EXPECT_DOUBLE_EQ(f["pkg/t.py::helper"]["local_vote"], 1.0);
  EXPECT_DOUBLE_EQ(f["pkg/t.py::helper2"]["local_vote"], 1.0);
  EXPECT_DOUBLE_EQ(f["pkg/t.py::helper2"]["local_vote_rel"], 1.0);
  EXPECT_DOUBLE_EQ(f["pkg/t.py::helper2"]["local_vote_rank"], 1.0);
  // draw is less similar: helper3 gets its relative weight, ranked after the two tied ones.
  EXPECT_GT(f["pkg/t.py::helper3"]["local_vote"], 0.0);
  EXPECT_LT(f["pkg/t.py::helper3"]["local_vote"], 1.0);
  EXPECT_DOUBLE_EQ(f["pkg/t.py::helper3"]["local_vote_rank"], 1.0 / 3.0);
  // Only the hidden body uses secret.
  EXPECT_DOUBLE_EQ(f["pkg/t.py::secret"]["local_vote"], 0.0);
  EXPECT_EQ(f, features_of(copy, t2, "pkg/t.py::load_config", {"local_vote"}));
}

// What the target's file uses outside the hidden body is a candidate even when no import names it: in C a
// header's definitions reach the file through includes of includes, and another file's functions through
// the one global namespace. `ping` shares no word with the query
// (no BM25 tier, no vote brings them), so only the file's own use does; `secret` is used only by the hidden
// body and stays out, and the copy without the body has the same pool.
TEST(StructuralTiers, WhatTheFileUsesOutsideTheHiddenBodyJoinsThePool) {
  TempDir repo, copy, t1, t2;
  for (TempDir* d : {&repo, &copy}) {
    d->write("deep.h", "#define WIDGET_LIMIT 4\n");
    d->write("gadget.c", "long gadget_count(void)\n{\n\treturn 1;\n}\n\nlong secret_total(void)\n{\n\treturn 2;\n}\n");
    d->write("mid.h", "#include \"deep.h\"\n");
  }
  const std::string head =
      "#include \"mid.h\"\n\n"
      "static long ping(void)\n{\n\treturn WIDGET_LIMIT + gadget_count();\n}\n\n"
      "/* Combine the parts. */\nint combine_parts(int parts)\n{\n";
  repo.write("t.c", head + "\treturn secret_total() + parts;\n}\n");
  copy.write("t.c", head + "\treturn parts;\n}\n");
  auto f = features_of(repo, t1, "t.c::combine_parts", {"file_usage", "neighbour", "local_vote", "accessible"});
  for (const char* used : {"deep.h::WIDGET_LIMIT", "gadget.c::gadget_count"}) {
    ASSERT_TRUE(f.count(used)) << used << " is not a candidate";
    EXPECT_GT(f[used]["file_usage"], 0.0) << used;
    EXPECT_EQ(f[used]["neighbour"], 0.0) << used;
    EXPECT_EQ(f[used]["local_vote"], 0.0) << used;
    EXPECT_EQ(f[used]["accessible"], 0.0) << used;
  }
  EXPECT_FALSE(f.count("gadget.c::secret_total"));
  EXPECT_EQ(f, features_of(copy, t2, "t.c::combine_parts", {"file_usage", "neighbour", "local_vote", "accessible"}));
}

// Same-file votes add up: `shared` is referenced by both similar functions, so its vote is the sum of their
// relative similarities (the most similar weighs 1, the other less but more than 0).
TEST(StructuralLocalVotes, VotesOfSeveralFunctionsAddUp) {
  TempDir repo, tmp;
  repo.write("pkg/__init__.py", "");
  repo.write("pkg/t.py",
             "def shared():\n    return 1\n\n"
             "def parse_config_text(path):\n    \"\"\"Parse the config text at path.\"\"\"\n    return shared()\n\n"
             "def read_config_file(path):\n    \"\"\"Read the config file at path.\"\"\"\n    return shared()\n\n"
             "def load_config(path):\n    \"\"\"Read the config.\"\"\"\n    return 0\n");
  auto f = features_of(repo, tmp, "pkg/t.py::load_config", {"local_vote"});
  ASSERT_TRUE(f.count("pkg/t.py::shared"));
  EXPECT_GT(f["pkg/t.py::shared"]["local_vote"], 1.0);
  EXPECT_LT(f["pkg/t.py::shared"]["local_vote"], 2.0);
}

// Import features read the uses, outside the hidden body, of the name of the first import that brings a
// candidate in: b by its own import (one use), m's members by `m` (two uses; c too, since `from pkg import m`
// comes before `from pkg.m import c`), z.d by an import only the hidden body uses.
TEST(StructuralImports, ImportUsesCountTheFirstBindingsNameOutsideTheHiddenBody) {
  TempDir repo, tmp;
  repo.write("pkg/__init__.py", "");
  repo.write("pkg/m.py", "def a():\n    return 1\n\ndef b():\n    return 2\n\ndef c():\n    return 3\n");
  repo.write("pkg/z.py", "def d():\n    return 4\n");
  repo.write("pkg/t.py",
             "from pkg.m import b\nfrom pkg import m\nfrom pkg.m import c\nfrom pkg.z import d\n\n"
             "def user1():\n    return m.a() + m.a() + b()\n\n"
             "def target(x):\n    \"\"\"Combine x.\"\"\"\n    return b() + c() + d() + m.a() + m.b()\n");
  auto f = features_of(repo, tmp, "pkg/t.py::target", {"import_"});
  for (const char* c : {"pkg/m.py::a", "pkg/m.py::b", "pkg/m.py::c", "pkg/z.py::d"})
    ASSERT_TRUE(f.count(c)) << c << " is not a candidate";
  EXPECT_DOUBLE_EQ(f["pkg/m.py::b"]["import_uses"], std::log1p(1.0));
  EXPECT_DOUBLE_EQ(f["pkg/m.py::b"]["import_unused"], 0.0);
  EXPECT_DOUBLE_EQ(f["pkg/m.py::a"]["import_uses"], std::log1p(2.0));
  EXPECT_DOUBLE_EQ(f["pkg/m.py::c"]["import_uses"], std::log1p(2.0));
  EXPECT_DOUBLE_EQ(f["pkg/z.py::d"]["import_uses"], 0.0);
  EXPECT_DOUBLE_EQ(f["pkg/z.py::d"]["import_unused"], 1.0);
}

// A structural request keeps its per-entity facts (candidate rows, votes, using units, co-use counts) in a
// per-thread scratch that the next request reuses without clearing (issue 17, s6). Requests for many real
// targets on one thread, interleaved with another repository's (fewer entities, the same ids reused), must
// give every feature exactly as each request alone on a fresh thread does.
TEST(StructuralScratch, ReusedPerThreadScratchGivesTheFeaturesOfAFreshThread) {
  if (!std::filesystem::exists("/usr/lib/python3/dist-packages/flask/app.py"))
    GTEST_FAIL() << "python3-flask is not installed (scripts/setup.sh installs it)";
  const Engine& big = *repoctx::testing::flask_index().engine;
  TempDir small_repo, tmp;
  write_repo(small_repo, kTargetFile);
  IndexOptions o;
  o.db_path = tmp.str() + "/i.db";
  o.progress = false;
  build_index(small_repo.str(), o);
  auto small = Engine::open(o.db_path);
  std::vector<std::string> targets;
  const auto& ents = big.view().entities();
  for (size_t i = 0; i < ents.size() && targets.size() < 24; i += 7)
    if (ents[i].kind == EntityKind::function || ents[i].kind == EntityKind::method)
      targets.push_back(big.view().files()[ents[i].file].path + "::" + ents[i].qualname);
  ASSERT_GE(targets.size(), 12u);
  auto features = [](const Engine& e, const std::string& target) {
    RetrievalQuery q;
    q.target = e.resolve_target(target);
    auto ctx = context_of(e, q);
    StructuralFeatures fb(e);
    return fb.build(*ctx, query_text(e, q, ctx.get()), StructuralParams{});
  };
  // Reused: every target on this thread, each followed by the small repository's target.
  std::vector<StructuralCandidates> reused;
  for (const auto& t : targets) {
    reused.push_back(features(big, t));
    features(*small, "pkg/t.py::target");
  }
  size_t compared = 0;
  for (size_t i = 0; i < targets.size(); ++i) {
    StructuralCandidates fresh;
    std::thread([&] { fresh = features(big, targets[i]); }).join();
    ASSERT_EQ(reused[i].entities, fresh.entities) << targets[i];
    ASSERT_EQ(reused[i].features, fresh.features) << targets[i];
    compared += fresh.entities.size();
  }
  EXPECT_GT(compared, 100u);  // real pools, not empty ones
}

// The BM25 tiers of the structural pool (global top, accessible top) are the first k of every scored
// document in the full order (score, then path, line, name), ties at the k-th score included: the pool
// selects them with a k-number heap before sorting, and a selection that dropped or misplaced a tie would
// change which documents get the flags and the ranks.
TEST(StructuralTiers, Bm25TiersAreTheFirstKOfTheFullOrder) {
  if (!std::filesystem::exists("/usr/lib/python3/dist-packages/flask/app.py"))
    GTEST_FAIL() << "python3-flask is not installed (scripts/setup.sh installs it)";
  const Engine& e = *repoctx::testing::flask_index().engine;
  const auto& names = structural_feature_names();
  auto index_of = [&](const std::string& n) {
    return static_cast<size_t>(std::find(names.begin(), names.end(), n) - names.begin());
  };
  const size_t f_global = index_of("global_bm25"), f_rank = index_of("bm25_rank"), f_acc = index_of("accessible");
  ASSERT_LT(f_acc, names.size());
  const auto& ents = e.view().entities();
  size_t checked = 0, ties_at_the_cut = 0;
  for (size_t i = 0; i < ents.size(); i += 5) {
    if (ents[i].kind != EntityKind::function && ents[i].kind != EntityKind::method) continue;
    RetrievalQuery q;
    q.target = e.resolve_target(e.view().files()[ents[i].file].path + "::" + ents[i].qualname);
    auto ctx = context_of(e, q);
    const std::string query = query_text(e, q, ctx.get());
    // The reference: every scored document, fully sorted.
    const Bm25Overrides ov = ctx->entity_overrides();
    std::vector<ScoredDoc> all = e.entity_bm25().score_all(query_terms(query), StructuralParams{}.bm25, &ov);
    std::erase_if(all, [&](const ScoredDoc& d) { return ctx->is_hidden_entity(d.doc); });
    std::sort(all.begin(), all.end(), [&](const ScoredDoc& a, const ScoredDoc& b) {
      return a.score != b.score ? a.score > b.score : entity_before(e.view(), a.doc, b.doc);
    });
    std::set<int> accessible_files;
    for (int f : e.graph().accessible_files(ents[i].file, &ctx->hidden)) accessible_files.insert(f);
    std::vector<ScoredDoc> acc_all;
    for (const auto& d : all)
      if (ents[d.doc].parent_index < 0 && accessible_files.count(ents[d.doc].file)) acc_all.push_back(d);
    for (int k : {1, 3, 10, 100}) {
      StructuralParams p;
      p.bm25_candidates = k;
      p.accessible_candidates = (k + 1) / 2;
      StructuralFeatures fb(e);
      StructuralCandidates c = fb.build(*ctx, query, p);
      std::map<int, const std::vector<double>*> row;
      for (size_t r = 0; r < c.entities.size(); ++r) row[c.entities[r]] = &c.features[r];
      auto expect_tier = [&](const std::vector<ScoredDoc>& ref, size_t n, size_t flag, bool ranked) {
        const size_t kept = std::min(n, ref.size());
        if (kept < ref.size() && ref[kept - 1].score == ref[kept].score) ++ties_at_the_cut;
        size_t flagged = 0;
        for (const auto& [ent, x] : row) flagged += (*x)[flag] == 1;
        EXPECT_EQ(flagged, kept) << q.target->entity << " k=" << n;
        for (size_t r = 0; r < kept; ++r) {
          auto it = row.find(ref[r].doc);
          ASSERT_NE(it, row.end()) << "document " << ref[r].doc << " at " << r << ", k=" << n;
          EXPECT_EQ((*it->second)[flag], 1.0) << "document " << ref[r].doc << " at " << r << ", k=" << n;
          if (ranked) EXPECT_EQ((*it->second)[f_rank], 1.0 / (1.0 + static_cast<double>(r))) << ref[r].doc;
        }
      };
      expect_tier(all, static_cast<size_t>(p.bm25_candidates), f_global, true);
      expect_tier(acc_all, static_cast<size_t>(p.accessible_candidates), f_acc, false);
      ++checked;
    }
    if (checked >= 160) break;
  }
  EXPECT_GE(checked, 160u);
  EXPECT_GT(ties_at_the_cut, 0u) << "no tie at a tier's cut: the tie handling went untested";
}

// The references of every function (popularity, module co-use) are resolved by the first process that needs
// them and kept next to the index (<db>-unit-refs); a later engine on the same index reads them and computes
// the same features. The file is read, not decorative (a valid one with other contents changes the features),
// names the index's query image (another token: ignored), and a damaged one is ignored and rewritten.
TEST(StructuralFacts, FunctionReferencesAreKeptNextToTheIndexAndReadByTheNextEngine) {
  if (!std::filesystem::exists("/usr/lib/python3/dist-packages/flask/app.py"))
    GTEST_FAIL() << "python3-flask is not installed (scripts/setup.sh installs it)";
  repoctx::testing::IndexedRepo first("/usr/lib/python3/dist-packages/flask");
  const std::string db = first.db.str() + "/index.db", kept = db + "-unit-refs";
  ASSERT_NE(first.engine->view().image(), nullptr) << "the fixture's index has no query image";
  const std::string target = "app.py::Flask.make_response";
  auto features = [&](const Engine& e) {
    RetrievalQuery q;
    q.target = e.resolve_target(target);
    auto ctx = context_of(e, q);
    StructuralFeatures fb(e);
    return fb.build(*ctx, query_text(e, q, ctx.get()), StructuralParams{});
  };
  EXPECT_FALSE(std::filesystem::exists(kept));
  const StructuralCandidates resolved = features(*first.engine);
  ASSERT_TRUE(std::filesystem::exists(kept));
  const auto size = std::filesystem::file_size(kept);
  auto stored = structural::read_unit_refs(Engine::open(db)->view());
  ASSERT_TRUE(stored.has_value());
  EXPECT_GT(stored->size(), 100u);
  // Read by the next engine: the same pool and features.
  const StructuralCandidates read = features(*Engine::open(db));
  EXPECT_EQ(read.entities, resolved.entities);
  EXPECT_EQ(read.features, resolved.features);
  // A valid file saying no function references anything: the popularity features follow it.
  {
    auto empty = *stored;
    for (auto& [unit, refs] : empty) refs.clear();
    auto e = Engine::open(db);
    structural::write_unit_refs(e->view(), empty);
    EXPECT_NE(features(*Engine::open(db)).features, resolved.features);
  }
  // Another image's token: ignored.
  {
    auto e = Engine::open(db);
    structural::write_unit_refs(e->view(), *stored);
    std::string bytes = read_file(kept);
    const size_t token_at = 8 + 4 + std::string(kResolverVersion).size() + 4;  // index/derived_file.cpp's layout
    bytes[token_at] = static_cast<char>(bytes[token_at] ^ 1);
    std::ofstream(kept, std::ios::binary | std::ios::trunc) << bytes;
    EXPECT_FALSE(structural::read_unit_refs(Engine::open(db)->view()).has_value());
  }
  // Damaged (cut in half): ignored, resolved again, and written whole again.
  {
    std::string bytes = read_file(kept);
    std::ofstream(kept, std::ios::binary | std::ios::trunc) << bytes.substr(0, bytes.size() / 2);
    const StructuralCandidates again = features(*Engine::open(db));
    EXPECT_EQ(again.features, resolved.features);
    EXPECT_EQ(std::filesystem::file_size(kept), size);
  }
}

// The signature corpus (neighbour votes) is tokenized by the first engine that needs it and kept next to the
// index (<db>-signature-terms); the next engine reads it (a valid file with other contents is what it then
// serves) and gets the same term vectors and BM25 statistics as tokenizing afresh.
TEST(StructuralFacts, SignatureTermsAreKeptNextToTheIndexAndReadByTheNextEngine) {
  if (!std::filesystem::exists("/usr/lib/python3/dist-packages/flask/app.py"))
    GTEST_FAIL() << "python3-flask is not installed (scripts/setup.sh installs it)";
  repoctx::testing::IndexedRepo first("/usr/lib/python3/dist-packages/flask");
  const std::string db = first.db.str() + "/index.db", kept = db + "-signature-terms";
  const int target = first.engine->resolve_target("app.py::Flask.make_response").entity;
  const TermVec fresh = first.engine->visible_terms(target);
  ASSERT_FALSE(fresh.terms.empty());
  ASSERT_TRUE(std::filesystem::exists(kept));
  auto second = Engine::open(db);
  EXPECT_EQ(second->visible_terms(target).terms, fresh.terms);
  EXPECT_EQ(second->visible_terms(target).length, fresh.length);
  EXPECT_EQ(second->visible_bm25().avgdl(), first.engine->visible_bm25().avgdl());
  // Every callable with no terms, in the file's own layout: the next engine serves exactly that.
  std::string empty;
  for (const auto& e : second->view().entities())
    if (is_callable(e.kind)) empty.append(8, '\0');
  write_derived_file(second->view(), "signature-terms", std::string(kExtractorVersion) + "/signature-terms-v1", empty);
  EXPECT_TRUE(Engine::open(db)->visible_terms(target).terms.empty());
  // Cut short: ignored, and tokenized again.
  std::ofstream(kept, std::ios::binary | std::ios::trunc) << "RCTXDRV1";
  EXPECT_EQ(Engine::open(db)->visible_terms(target).terms, fresh.terms);
}
