#include <gtest/gtest.h>

#include <cmath>

#include <algorithm>

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
