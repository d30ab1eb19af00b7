#include <gtest/gtest.h>

#include <algorithm>
#include <random>

#include "repo/documents.h"
#include "repo/model.h"
#include "repo/parser.h"
#include "util/text.h"

using namespace repoctx;

TEST(Tokenizer, SplitsSnakeAndCamelCaseAndKeepsCompounds) {
  EXPECT_EQ(tokenize_code("get_item"), (std::vector<std::string>{"get", "item", "get_item"}));
  EXPECT_EQ(tokenize_code("HTTPServer"), (std::vector<std::string>{"http", "server", "httpserver"}));
  EXPECT_EQ(tokenize_code("HTTP2Server"), (std::vector<std::string>{"http", "server", "http2server"}));
  EXPECT_EQ(tokenize_code("parseJSON"), (std::vector<std::string>{"parse", "json", "parsejson"}));
  EXPECT_EQ(tokenize_code("x = 1"), std::vector<std::string>{});
  EXPECT_EQ(tokenize_code("utf8"), std::vector<std::string>{"utf"});
  EXPECT_EQ(tokenize_code("__init__"), std::vector<std::string>{"init"});
  EXPECT_EQ(tokenize_code("self.fooBar(baz)"), (std::vector<std::string>{"self", "foo", "bar", "foobar", "baz"}));
  // Non-ASCII bytes separate words and never produce tokens.
  EXPECT_EQ(tokenize_code("caf\xc3\xa9 ok"), (std::vector<std::string>{"caf", "ok"}));
}

TEST(Tokenizer, HashesMatchStrings) {
  std::vector<uint64_t> h;
  tokenize_hashes("readLines from_file", h);
  auto toks = tokenize_code("readLines from_file");
  ASSERT_EQ(h.size(), toks.size());
}

TEST(Text, NormalizeForStepValidation) {
  EXPECT_EQ(normalize_text("  Check the\nINPUT, then raise!  "), "check the input then raise");
}

TEST(Text, CleanDocstringLikeInspect) {
  EXPECT_EQ(clean_docstring("Summary.\n\n    Details here.\n      indented\n    "),
            "Summary.\n\nDetails here.\n  indented");
  EXPECT_EQ(clean_docstring("\n    Only body.\n"), "Only body.");
}

TEST(Text, Utf8) {
  EXPECT_TRUE(is_valid_utf8("abc \xc3\xa9"));
  EXPECT_FALSE(is_valid_utf8("abc \xe9 x"));
  EXPECT_EQ(sanitize_utf8("a\xe9z"), "a\xEF\xBF\xBDz");
}

TEST(Snippets, SplitAggregateFollowsEquations14To16) {
  // blocks of 3, 4, 9 and 20 lines with L = 10
  std::string src;
  auto block = [&](int n) {
    for (int i = 0; i < n; ++i) src += "x" + std::to_string(i) + " = 1\n";
    src += "\n";
  };
  block(3);
  block(4);
  block(9);
  block(20);
  auto sn = split_aggregate(src, 10);
  ASSERT_EQ(sn.size(), 4u);
  EXPECT_EQ(sn[0].start_line, 1);  // 3 + 4 = 7 <= 10, + 9 > 10
  EXPECT_EQ(sn[0].end_line, 8);
  EXPECT_EQ(sn[0].code_lines, 7);
  EXPECT_EQ(sn[1].code_lines, 9);   // 9 alone (9 + 10 > 10)
  EXPECT_EQ(sn[2].code_lines, 10);  // the 20-line block cut into two chunks of 10
  EXPECT_EQ(sn[3].code_lines, 10);
}

TEST(MaskBody, KeepsLinesBlankStructureAndEndLine) {
  std::string src =
      "def f(a):\n"
      "    \"\"\"Doc.\"\"\"\n"
      "    x = a + 1\n"
      "\n"
      "    return helper(x)\n"
      "y = 2\n";
  Entity e;
  e.start_line = 1;
  e.end_line = 5;
  e.header_end_line = 1;
  e.body_start_line = 3;
  e.body_end_line = 5;
  e.body_start_byte = static_cast<uint32_t>(src.find("x = a"));
  std::string m = mask_body(src, e);
  EXPECT_EQ(m,
            "def f(a):\n"
            "    \"\"\"Doc.\"\"\"\n"
            "    #\n"
            "\n"
            "    ...\n"
            "y = 2\n");
  EXPECT_TRUE(tokenize_code(m.substr(m.find("#"), m.find("y =") - m.find("#"))).empty());
}

TEST(MaskBody, OneLineBody) {
  std::string src = "def f(): return g()\nz = 1\n";
  Entity e;
  e.start_line = e.end_line = e.header_end_line = e.body_start_line = e.body_end_line = 1;
  e.body_start_byte = static_cast<uint32_t>(src.find("return"));
  EXPECT_EQ(mask_body(src, e), "def f(): ...\nz = 1\n");
}

// ROUGE-L F1 against hand-computed LCS values (rouge-score's rougeL fmeasure: 2PR/(P+R)).
// line_starts finds newlines with memchr: every line start equals the byte-by-byte definition, including
// an empty text, a missing or doubled final newline, CRLF, NUL bytes and a line ending at a 16-byte edge.
TEST(Text, LineStartsAreTheBytesAfterEachNewline) {
  auto naive = [](std::string_view t) {
    std::vector<uint32_t> s{0};
    for (size_t i = 0; i < t.size(); ++i)
      if (t[i] == '\n') s.push_back(static_cast<uint32_t>(i + 1));
    return s;
  };
  std::vector<std::string> texts = {"",
                                    "\n",
                                    "\n\n",
                                    "a",
                                    "a\n",
                                    "a\nb",
                                    "a\r\nb\r\n",
                                    std::string("x\0\ny\0", 5),
                                    std::string(15, 'a') + "\n" + std::string(16, 'b') + "\n"};
  std::mt19937 rng(3);
  for (int i = 0; i < 200; ++i) {
    std::string t(rng() % 300, 'a');
    for (auto& c : t)
      if (rng() % 7 == 0) c = '\n';
    texts.push_back(t);
  }
  for (const auto& t : texts) EXPECT_EQ(line_starts(t), naive(t)) << t;
  EXPECT_EQ(line_starts("a\nbc\n"), (std::vector<uint32_t>{0, 2, 5}));
}

TEST(RougeL, HandComputedValues) {
  // LCS "the cat on mat" = 4 of 6 and 6 tokens: P = R = 2/3.
  EXPECT_NEAR(rouge_l_f1("the cat sat on the mat", "the cat lay on a mat"), 2.0 / 3.0, 1e-12);
  // LCS "a c" = 2; P = 2/3 (of b), R = 2/4 (of a); F = 2 * (2/3) * (1/2) / (7/6) = 4/7.
  EXPECT_NEAR(rouge_l_f1("a b c d", "a c e"), 4.0 / 7.0, 1e-12);
  EXPECT_NEAR(rouge_l_f1("a c e", "a b c d"), 4.0 / 7.0, 1e-12);  // symmetric
  // A subsequence, not a substring: order matters, gaps do not.
  EXPECT_NEAR(rouge_l_f1("a b c", "c b a"), 1.0 / 3.0, 1e-12);
  EXPECT_NEAR(rouge_l_f1("x a y b z c", "a b c"), 2 * 0.5 * 1.0 / 1.5, 1e-12);
  // Repeated tokens match once each: LCS 1, P = 1, R = 1/3, F = 1/2.
  EXPECT_NEAR(rouge_l_f1("a a a", "a"), 0.5, 1e-12);
  // Step validation example: 7 and 9 tokens ("arrays" is not "array"), LCS 6; F = 2L/(|a|+|b|) = 0.75,
  // above ProjAgent's 0.7: accepted.
  EXPECT_NEAR(rouge_l_f1(normalize_text("Validate the input array's shape, then raise."),
                         normalize_text("validate the input array shape then raise an error")),
              0.75, 1e-12);
}

TEST(RougeL, IdenticalDisjointAndEmpty) {
  EXPECT_DOUBLE_EQ(rouge_l_f1("compute the mean of rows", "compute the mean of rows"), 1.0);
  EXPECT_DOUBLE_EQ(rouge_l_f1("  a\tb\n c ", "a b c"), 1.0);  // tokens are whitespace separated
  EXPECT_DOUBLE_EQ(rouge_l_f1("alpha beta", "gamma delta"), 0.0);
  EXPECT_DOUBLE_EQ(rouge_l_f1("", "a b"), 0.0);
  EXPECT_DOUBLE_EQ(rouge_l_f1("a b", ""), 0.0);
  EXPECT_DOUBLE_EQ(rouge_l_f1("", ""), 0.0);
  EXPECT_DOUBLE_EQ(rouge_l_f1(" \n\t", "a"), 0.0);
  // Tokens compare exactly: normalisation (case, punctuation) is the caller's.
  EXPECT_DOUBLE_EQ(rouge_l_f1("Mean", "mean"), 0.0);
}

TEST(RougeL, LongInputsStayExact) {
  // 3000 tokens against 4000 that end with the same 3000: the two-row table stays exact at this size.
  std::string a, b;
  for (int i = 0; i < 3000; ++i) a += "x ";
  for (int i = 0; i < 1000; ++i) b += "y ";
  b += a;
  // P = 3000/4000, R = 1: F = 2 * 0.75 / 1.75 = 6/7.
  EXPECT_NEAR(rouge_l_f1(a, b), 6.0 / 7.0, 1e-12);
}

namespace {
size_t levenshtein(const std::string& a, const std::string& b) {
  std::vector<std::vector<size_t>> d(a.size() + 1, std::vector<size_t>(b.size() + 1));
  for (size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (size_t i = 1; i <= a.size(); ++i)
    for (size_t j = 1; j <= b.size(); ++j)
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
  return d[a.size()][b.size()];
}
}  // namespace

TEST(EditDistance, BoundedEqualsLevenshteinUpToTheBound) {
  std::mt19937 rng(7);
  for (int t = 0; t < 3000; ++t) {
    auto word = [&] {
      std::string s(std::uniform_int_distribution<size_t>(0, 14)(rng), 'a');
      for (char& c : s) c = static_cast<char>('a' + std::uniform_int_distribution<int>(0, 3)(rng));
      return s;
    };
    std::string a = word(), b = word();
    size_t max = std::uniform_int_distribution<size_t>(0, 16)(rng);
    size_t full = levenshtein(a, b);
    EXPECT_EQ(edit_distance(a, b, max), full <= max ? full : max + 1) << a << " / " << b << " max " << max;
  }
  EXPECT_EQ(edit_distance("kitten", "sitting", 10), 3u);
  EXPECT_EQ(edit_distance("", "abc", 5), 3u);
  EXPECT_EQ(edit_distance("", "abc", 2), 3u);  // over the bound: max + 1
}

TEST(EditDistance, HugeInputsStayWithinTheBand) {
  // 16,000 characters each way: the band of 2*5+1 cells per row, and an early exit when a row is all
  // over the bound (the unbounded version filled 256 million cells).
  std::string a(16000, 'q'), b(16000, 'q');
  EXPECT_EQ(edit_distance(a, b, 5), 0u);
  b[8000] = 'x';
  EXPECT_EQ(edit_distance(a, b, 5), 1u);
  std::string c(16000, 'z');
  EXPECT_EQ(edit_distance(a, c, 5), 6u);
  EXPECT_EQ(edit_distance(a, "short", 5), 6u);  // lengths differ by more than the bound
}

// Issue 21: n statements on one line made every variable's document the whole line (n^2 tokens: 100,000
// statements took 482 s); each now scores its own statement, and a budget bounds what one file can hold.
TEST(EntityDocuments, StatementsSharingALineScoreTheirOwnText) {
  SourceParser p;
  std::string line;
  const int n = 100000;
  for (int i = 0; i < n; ++i) line += (i ? ";" : "") + std::string("value_") + std::to_string(i) + "=compute";
  line += "\n";
  auto pf = p.parse("flat.py", "flat", line, Language::python);
  ASSERT_EQ(pf.entities.size(), static_cast<size_t>(n));
  auto starts = line_starts(line);
  auto et = entity_term_vectors(pf, line, starts);
  ASSERT_EQ(et.terms.size(), static_cast<size_t>(n));
  EXPECT_EQ(et.shortened, 0u);
  uint64_t tokens = 0;
  for (const auto& tv : et.terms) tokens += tv.length;
  EXPECT_EQ(tokens, 2u * n);  // "value" and "compute" per statement
  EXPECT_EQ(et.terms[5].length, 2u);
  // On ordinary lines, documents are the whole lines (trailing comments included), as before.
  std::string src = "x = 1  # the answer\ny = [\n  2,\n]\n";
  pf = p.parse("m.py", "m", src, Language::python);
  starts = line_starts(src);
  std::vector<const Entity*> none;
  EXPECT_EQ(entity_document(pf.entities[0], none, src, starts), "x = 1  # the answer");
  EXPECT_EQ(entity_document(pf.entities[1], none, src, starts), "y = [\n  2,\n]");
  src = "a = 1; b = f(2);  c = 3  # note\n";
  pf = p.parse("m.py", "m", src, Language::python);
  starts = line_starts(src);
  EXPECT_EQ(entity_document(pf.entities[0], none, src, starts), "a = 1");
  EXPECT_EQ(entity_document(pf.entities[1], none, src, starts), " b = f(2)");
  EXPECT_EQ(entity_document(pf.entities[2], none, src, starts), "  c = 3  # note");
}

TEST(EntityDocuments, ABudgetBoundsWhatOneFileHolds) {
  // One statement binding 20,000 names: every name's document would be the whole statement.
  SourceParser p;
  std::string names;
  for (int i = 0; i < 20000; ++i) names += (i ? ", " : "") + std::string("name_") + std::to_string(i);
  std::string src = names + " = " + names + "\n";
  auto pf = p.parse("m.py", "m", src, Language::python);
  ASSERT_EQ(pf.entities.size(), 20000u);
  auto et = entity_term_vectors(pf, src, line_starts(src));
  ASSERT_EQ(et.terms.size(), 20000u);
  uint64_t bytes_budget = kEntityDocumentBudget * src.size() + (1u << 20);
  uint64_t tokens = 0;
  for (const auto& tv : et.terms) tokens += tv.length;
  EXPECT_GT(et.shortened, 19000u);
  EXPECT_LT(tokens, bytes_budget);  // tokens <= bytes of documents
}
