#include <gtest/gtest.h>

#include <cmath>

#include <algorithm>
#include <filesystem>

#include "indexed_repo.h"
#include "retrieve/bm25.h"
#include "util/text.h"

using namespace repoctx;

namespace {
// Direct formula, independent of the index implementation.
double bm25(const std::vector<std::vector<std::string>>& docs, const std::vector<std::string>& q, size_t d,
            double k1 = 1.5, double b = 0.75) {
  double N = static_cast<double>(docs.size()), total = 0;
  for (const auto& x : docs) total += static_cast<double>(x.size());
  double avgdl = total / N, s = 0;
  for (const auto& t : q) {
    double df = 0;
    for (const auto& x : docs) df += std::count(x.begin(), x.end(), t) > 0;
    double tf = static_cast<double>(std::count(docs[d].begin(), docs[d].end(), t));
    if (tf == 0) continue;
    double idf = std::log(1 + (N - df + 0.5) / (df + 0.5));
    s += idf * tf * (k1 + 1) / (tf + k1 * (1 - b + b * static_cast<double>(docs[d].size()) / avgdl));
  }
  return s;
}
}  // namespace

TEST(Bm25, MatchesTheFormulaAndHonoursOverrides) {
  std::vector<std::string> texts = {"parse json file", "read the file and parse lines", "write json output json",
                                    "unrelated words here"};
  std::vector<TermVec> tv;
  std::vector<std::vector<std::string>> toks;
  for (const auto& t : texts) {
    tv.push_back(term_vector(t));
    toks.push_back(tokenize_code(t));
  }
  std::vector<const TermVec*> ptrs;
  for (auto& t : tv) ptrs.push_back(&t);
  Bm25Index idx;
  idx.build(ptrs);
  auto q = query_terms("parse json json");
  auto res = idx.score_all(q, {});
  ASSERT_EQ(res.size(), 3u);
  std::vector<std::string> qt = tokenize_code("parse json json");
  for (const auto& r : res) EXPECT_NEAR(r.score, bm25(toks, qt, static_cast<size_t>(r.doc)), 1e-12);

  // Overrides equal an index built from the modified corpus.
  TermVec replacement = term_vector("parse parse");
  Bm25Overrides ov;
  ov.removed = {3};
  ov.replaced = {{1, &replacement}};
  auto res2 = idx.score_all(q, {}, &ov);
  std::vector<std::vector<std::string>> toks2 = {toks[0], tokenize_code("parse parse"), toks[2]};
  ASSERT_EQ(res2.size(), 3u);
  for (const auto& r : res2) EXPECT_NEAR(r.score, bm25(toks2, qt, static_cast<size_t>(r.doc)), 1e-12) << r.doc;
  auto pq = idx.prepare(q, {}, &ov);
  EXPECT_NEAR(Bm25Index::score_prepared(pq, tv[0]), bm25(toks2, qt, 0), 1e-12);

  std::vector<char> allowed = {0, 0, 1, 0};
  auto res3 = idx.score_all(q, {}, nullptr, &allowed);
  ASSERT_EQ(res3.size(), 1u);
  EXPECT_EQ(res3[0].doc, 2);
}

TEST(Bm25, HybridNormalisesToUnitInterval) {
  auto v = hybrid_scores({10, 5, 0}, {0.2, 0.9, 0.5});
  EXPECT_NEAR(v[0], 0.5 * 1 + 0.5 * 0, 1e-12);
  EXPECT_NEAR(v[1], 0.5 * 0.5 + 0.5 * 1, 1e-12);
  EXPECT_NEAR(v[2], 0.5 * 0 + 0.5 * (0.3 / 0.7), 1e-12);
  EXPECT_EQ(normalize_scores({2, 2}), (std::vector<double>{1, 1}));
}

// top_k against the plain definition (every score, filtered, the k-th best score as the cut) on real code:
// flask's signature corpus (short documents, the structural neighbours') and its whole entities (long
// ones), queries from each function's signature and docstring, with and without removed documents and a
// filter. Scores must be equal bit for bit, and the same documents returned, ties at the cut included.
TEST(Bm25, TopKIsTheSelectionOfEveryScoreOnRealCode) {
  if (!std::filesystem::exists("/usr/lib/python3/dist-packages/flask/app.py"))
    GTEST_FAIL() << "python3-flask is not installed (scripts/setup.sh installs it)";
  const Engine& e = *repoctx::testing::flask_index().engine;
  const auto& ents = e.view().entities();
  e.view().load_all_terms();
  std::vector<const TermVec*> whole(ents.size());
  for (size_t i = 0; i < ents.size(); ++i) whole[i] = &e.view().entity_terms(static_cast<int>(i));
  Bm25Index entities;
  entities.build(whole);
  size_t cases = 0, ties = 0, pruned_answers = 0;
  for (const Bm25Index* idx : {&e.visible_bm25(), static_cast<const Bm25Index*>(&entities)})
    for (size_t i = 0; i < ents.size(); i += 4) {
      if (!is_callable(ents[i].kind)) continue;
      const auto q = query_terms(ents[i].signature + "\n" + ents[i].docstring);
      Bm25Overrides ov;
      ov.removed = {static_cast<int>(i)};
      if (i + 1 < ents.size()) ov.removed.push_back(static_cast<int>(i + 1));
      for (const Bm25Overrides* o :
           {static_cast<const Bm25Overrides*>(nullptr), static_cast<const Bm25Overrides*>(&ov)})
        for (int filter = 0; filter < 2; ++filter) {
          auto keep = [&](int d) { return filter == 0 || d % 3 != 0; };
          std::vector<ScoredDoc> all = idx->score_all(q, Bm25Params{}, o);
          std::erase_if(all, [&](const ScoredDoc& d) { return !keep(d.doc); });
          std::sort(all.begin(), all.end(), [](const ScoredDoc& a, const ScoredDoc& b) {
            return a.score != b.score ? a.score > b.score : a.doc < b.doc;
          });
          for (size_t k : {1, 2, 5, 20, 100}) {
            std::vector<ScoredDoc> want = all;
            if (want.size() > k) {
              const double cut = want[k - 1].score;
              if (want[k].score == cut) ++ties;
              std::erase_if(want, [&](const ScoredDoc& d) { return d.score < cut; });
            }
            std::vector<ScoredDoc> got = idx->top_k(q, Bm25Params{}, o, k, keep);
            std::sort(got.begin(), got.end(), [](const ScoredDoc& a, const ScoredDoc& b) {
              return a.score != b.score ? a.score > b.score : a.doc < b.doc;
            });
            ASSERT_EQ(got.size(), want.size()) << "entity " << i << " k " << k;
            for (size_t j = 0; j < got.size(); ++j) {
              ASSERT_EQ(got[j].doc, want[j].doc) << "entity " << i << " k " << k;
              ASSERT_EQ(got[j].score, want[j].score) << "entity " << i << " k " << k;  // bit for bit
            }
            pruned_answers += all.size() > 4 * k;
            ++cases;
          }
        }
    }
  EXPECT_GT(cases, 2000u);
  EXPECT_GT(ties, 10u) << "no tie at a cut: the tie handling went untested";
  EXPECT_GT(pruned_answers, 1000u) << "few answers where most scored documents are left out";
}
