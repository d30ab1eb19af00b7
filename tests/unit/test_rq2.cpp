#include <gtest/gtest.h>

#include "eval/rq2.h"
#include "helpers.h"
#include "util/error.h"

using namespace repoctx;
using repoctx::testing::TempDir;

namespace {

Rq2Pair pair(const std::string& t, const std::string& c, std::vector<double> sims) {
  Rq2Pair p;
  p.target_step = t;
  p.context_step = c;
  p.target_description = "validate the input";
  p.context_description = "check " + c;
  p.context_snippet = "if x is None:\n    raise ValueError(\"x\")";
  p.seed_similarities = std::move(sims);
  return p;
}

// Ten labelled pairs (4 similar, 6 not), one pair without a label, one label without a pair. Every
// metric below is counted by hand from this table ("> tau" is strict: 0.65 does not exceed 0.65).
//   pair  similarities          label    > 0.60  > 0.65  > 0.70  > 0.80
//   p1    0.90 0.80 0.75        similar    3       3       3       1
//   p2    0.70 0.66 0.10        similar    2       2       0       0
//   p3    0.66 0.10 0.20        similar    1       1       0       0
//   p4    0.95 0.96             not        2       2       2       2
//   p5    0.68 0.30             not        1       1       0       0
//   p6    0.20 0.30             not        0       0       0       0
//   p7    (no seed)             not        0       0       0       0
//   p8    0.65 0.65 0.65        not        3       0       0       0
//   p9    0.61 0.62             not        2       0       0       0
//   p10   0.71 0.72 0.73        similar    3       3       3       0
std::vector<Rq2Pair> pairs() {
  return {pair("t1", "p1", {0.90, 0.80, 0.75}),
          pair("t1", "p2", {0.70, 0.66, 0.10}),
          pair("t1", "p3", {0.66, 0.10, 0.20}),
          pair("t2", "p4", {0.95, 0.96}),
          pair("t2", "p5", {0.68, 0.30}),
          pair("t2", "p6", {0.20, 0.30}),
          pair("t2", "p7", {}),
          pair("t3", "p8", {0.65, 0.65, 0.65}),
          pair("t3", "p9", {0.61, 0.62}),
          pair("t3", "p10", {0.71, 0.72, 0.73}),
          pair("t3", "unlabelled", {0.9, 0.9})};
}

Rq2Labels labels() {
  Rq2Labels l;
  for (const char* c : {"p1", "p2", "p3"}) l[{"t1", c}] = true;
  for (const char* c : {"p4", "p5", "p6", "p7"}) l[{"t2", c}] = false;
  l[{"t3", "p8"}] = false;
  l[{"t3", "p9"}] = false;
  l[{"t3", "p10"}] = true;
  l[{"t9", "no-such-pair"}] = true;
  return l;
}

void expect_group(const Rq2Group& g, int pairs, double p, double r, double f1) {
  EXPECT_EQ(g.pairs, pairs);
  EXPECT_NEAR(g.precision, p, 1e-12);
  EXPECT_NEAR(g.recall, r, 1e-12);
  EXPECT_NEAR(g.f1, f1, 1e-12);
}

}  // namespace

TEST(Rq2, PaperConfigurations) {
  auto c = rq2_paper_configs();
  ASSERT_EQ(c.size(), 6u);
  std::vector<std::pair<double, int>> want = {{0.60, 2}, {0.65, 2}, {0.65, 3}, {0.70, 2}, {0.70, 3}, {0.80, 2}};
  for (size_t i = 0; i < c.size(); ++i) {
    EXPECT_EQ(c[i].name, std::string(1, static_cast<char>('A' + i)));
    EXPECT_DOUBLE_EQ(c[i].tau, want[i].first);
    EXPECT_EQ(c[i].k, want[i].second);
  }
}

TEST(Rq2, HandCountedMetricsForEveryConfiguration) {
  auto r = evaluate_rq2(pairs(), labels());
  EXPECT_EQ(r.pairs, 11);
  EXPECT_EQ(r.labelled, 10);
  EXPECT_EQ(r.unlabelled, 1);
  EXPECT_EQ(r.labels_without_pair, 1);
  EXPECT_EQ(r.similar, 4);
  EXPECT_EQ(r.not_similar, 6);
  ASSERT_EQ(r.rows.size(), 6u);
  // A (0.60, 2): promoted p1 p2 p4 p8 p9 p10 (3 similar); leftover p3 p5 p6 p7 (3 not similar of 6).
  expect_group(r.rows[0].promoted, 6, 3.0 / 6, 3.0 / 4, 0.6);
  expect_group(r.rows[0].leftover, 4, 3.0 / 4, 3.0 / 6, 0.6);
  // B (0.65, 2): promoted p1 p2 p4 p10 (3 similar); leftover p3 p5 p6 p7 p8 p9 (5 not similar).
  expect_group(r.rows[1].promoted, 4, 0.75, 0.75, 0.75);
  expect_group(r.rows[1].leftover, 6, 5.0 / 6, 5.0 / 6, 5.0 / 6);
  // C (0.65, 3): promoted p1 p10; every not-similar pair is left over.
  expect_group(r.rows[2].promoted, 2, 1.0, 0.5, 2.0 / 3);
  expect_group(r.rows[2].leftover, 8, 0.75, 1.0, 6.0 / 7);
  // D (0.70, 2): promoted p1 p4 p10 (p2's 0.70 does not exceed 0.70).
  expect_group(r.rows[3].promoted, 3, 2.0 / 3, 0.5, 4.0 / 7);
  expect_group(r.rows[3].leftover, 7, 5.0 / 7, 5.0 / 6, 10.0 / 13);
  // E (0.70, 3): promoted p1 p10.
  expect_group(r.rows[4].promoted, 2, 1.0, 0.5, 2.0 / 3);
  expect_group(r.rows[4].leftover, 8, 0.75, 1.0, 6.0 / 7);
  // F (0.80, 2): only p4 (not similar) is promoted: precision, recall and F1 are 0, not NaN.
  expect_group(r.rows[5].promoted, 1, 0.0, 0.0, 0.0);
  expect_group(r.rows[5].leftover, 9, 5.0 / 9, 5.0 / 6, 2.0 / 3);
  EXPECT_EQ(r.rows[5].promoted.true_positives, 0);
  EXPECT_EQ(r.rows[5].promoted.class_total, 4);
  EXPECT_EQ(r.rows[5].leftover.class_total, 6);
  EXPECT_EQ(r.best_row, 1);  // B, as in the paper
}

TEST(Rq2, MarkdownIsShapedLikeTable3) {
  auto md = rq2_markdown(evaluate_rq2(pairs(), labels()));
  EXPECT_NE(md.find("| Cfg | (τ, k) | Promoted #Pairs | Prec. | Recall | F1 | "
                    "Leftover #Pairs | Prec. | Recall | F1 |"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| A | (0.60, 2) | 6 | 50.0% | 75.0% | 0.600 | 4 | 75.0% | 50.0% | 0.600 |\n"), std::string::npos)
      << md;
  EXPECT_NE(md.find("| **B** | **(0.65, 2)** | **4** | **75.0%** | **75.0%** | **0.750** | **6** | **83.3%** | "
                    "**83.3%** | **0.833** |\n"),
            std::string::npos)
      << md;
  EXPECT_NE(md.find("| F | (0.80, 2) | 1 | 0.0% | 0.0% | 0.000 | 9 | 55.6% | 83.3% | 0.667 |\n"), std::string::npos)
      << md;
  EXPECT_NE(md.find("10 labelled pairs (4 similar, 6 not similar); 1 pairs without a label and 1 labels"),
            std::string::npos)
      << md;

  // Thousands separators as in the paper ("2,036").
  Rq2Report big;
  Rq2Row row;
  row.config = {"A", 0.60, 2};
  row.promoted.pairs = 2036;
  row.leftover.pairs = 7562;
  big.rows.push_back(row);
  big.labelled = 9598;
  md = rq2_markdown(big);
  EXPECT_NE(md.find("| A | (0.60, 2) | 2,036 | 0.0% | 0.0% | 0.000 | 7,562 |"), std::string::npos) << md;
  EXPECT_NE(md.find("9,598 labelled pairs"), std::string::npos) << md;
  EXPECT_EQ(md.find("**"), std::string::npos);  // nothing is bold when every promoted F1 is 0
}

TEST(Rq2, CustomConfigurationsAndBadOnes) {
  auto r = evaluate_rq2(pairs(), labels(), {{"loose", 0.0, 1}});
  ASSERT_EQ(r.rows.size(), 1u);
  // Every labelled pair with a seed is promoted; only p7 (no seed) is left over.
  expect_group(r.rows[0].promoted, 9, 4.0 / 9, 1.0, 2 * (4.0 / 9) / (4.0 / 9 + 1));
  expect_group(r.rows[0].leftover, 1, 1.0, 1.0 / 6, 2 * (1.0 / 6) / (1 + 1.0 / 6));
  EXPECT_THROW(evaluate_rq2(pairs(), labels(), {{"bad", 0.65, 0}}), Error);
  EXPECT_THROW(evaluate_rq2(pairs(), labels(), {{"bad", 1.5, 2}}), Error);
  // No labels at all: every group is empty and every metric 0.
  auto none = evaluate_rq2(pairs(), {});
  EXPECT_EQ(none.labelled, 0);
  EXPECT_EQ(none.unlabelled, 11);
  expect_group(none.rows[0].promoted, 0, 0, 0, 0);
  expect_group(none.rows[0].leftover, 0, 0, 0, 0);
}

TEST(Rq2, FilesRoundTripAndBadLinesAreNamed) {
  TempDir d;
  std::string pf = d.str() + "/pairs.jsonl", lf = d.str() + "/labels.jsonl";
  std::string text;
  for (const auto& p : pairs()) text += p.to_jsonl() + "\n";
  text += "\n";  // blank lines are skipped
  d.write("pairs.jsonl", text);
  std::string ltext;
  for (const auto& [k, v] : labels())
    ltext += "{\"target_step\": \"" + k.first + "\", \"context_step\": \"" + k.second +
             "\", \"similar\": " + (v ? "true" : "false") + "}\n";
  ltext += "{\"target_step\": \"t1\", \"context_step\": \"p1\", \"similar\": true}\n";  // same label twice: fine
  d.write("labels.jsonl", ltext);

  auto ps = read_rq2_pairs(pf);
  ASSERT_EQ(ps.size(), 11u);
  EXPECT_EQ(ps[0].context_description, "check p1");
  EXPECT_EQ(ps[0].context_snippet, "if x is None:\n    raise ValueError(\"x\")");
  EXPECT_EQ(ps[8].seed_similarities, (std::vector<double>{0.61, 0.62}));
  auto r = evaluate_rq2(ps, read_rq2_labels(lf));
  EXPECT_EQ(r.best_row, 1);
  EXPECT_NEAR(r.rows[1].promoted.f1, 0.75, 1e-12);

  auto error_of = [&](const std::string& file, const std::string& content, bool labels_file) {
    d.write(file, content);
    try {
      if (labels_file)
        read_rq2_labels(d.str() + "/" + file);
      else
        read_rq2_pairs(d.str() + "/" + file);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  std::string one = "{\"target_step\": \"t\", \"context_step\": \"c\", \"seed_similarities\": [0.7]}\n";
  EXPECT_NE(error_of("dup.jsonl", one + one, false).find("dup.jsonl:2: pair (t, c) already appears on line 1"),
            std::string::npos);
  EXPECT_NE(error_of("bad.jsonl", one + "{not json\n", false).find("bad.jsonl:2: not a JSON object"),
            std::string::npos);
  EXPECT_NE(
      error_of("nosims.jsonl", "{\"target_step\": \"t\", \"context_step\": \"c\"}\n", false).find("seed_similarities"),
      std::string::npos);
  EXPECT_NE(error_of("strsim.jsonl",
                     "{\"target_step\": \"t\", \"context_step\": \"c\", \"seed_similarities\": [\"0.7\"]}\n", false)
                .find("non-number"),
            std::string::npos);
  EXPECT_NE(error_of("noid.jsonl", "{\"context_step\": \"c\", \"seed_similarities\": []}\n", false)
                .find("missing \"target_step\""),
            std::string::npos);
  EXPECT_NE(error_of("l1.jsonl", "{\"target_step\": \"t\", \"context_step\": \"c\", \"similar\": \"yes\"}\n", true)
                .find("\"similar\" must be true or false"),
            std::string::npos);
  EXPECT_NE(error_of("l2.jsonl",
                     "{\"target_step\": \"t\", \"context_step\": \"c\", \"similar\": true}\n"
                     "{\"target_step\": \"t\", \"context_step\": \"c\", \"similar\": false}\n",
                     true)
                .find("labelled both similar and not similar"),
            std::string::npos);
  try {
    read_rq2_pairs(d.str() + "/missing.jsonl");
    FAIL() << "no error for a missing file";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::not_found);
  }
}
