// cl100k_base against token ids computed with tiktoken's own implementation (its Rust core compiled to
// WebAssembly, npm `tiktoken` 1.0.22, encode_ordinary). The strings probe each branch of the pre-tokenizer
// pattern: contractions, letter runs with a leading character, digit triples, punctuation runs with newlines,
// and the three white-space rules. tests/integration/tokenizer_reference.py compares whole files.
#include <gtest/gtest.h>

#include <random>
#include <string>
#include <vector>

#include "util/error.h"
#include "util/token_count.h"
#include "util/tokenizer_cl100k.h"

using namespace repoctx;

namespace {

struct Case {
  std::string text;
  int count;
  std::vector<uint32_t> first_ids;  // the reference's first (up to) six ids
};

const std::vector<Case>& cases() {
  static const std::vector<Case> c = {
      {"", 0, {}},
      {"hello world", 2, {15339, 1917}},
      {"x = 1234\n", 6, {87, 284, 220, 4513, 19, 198}},
      {"RecursiveCharacterTextSplitter", 5, {79642, 12686, 1199, 20805, 466}},
      {"    def __init__(self, x: int) -> None:\n        self._x = x\n\n\n", 21, {262, 711, 1328, 2381, 3889, 726}},
      {"don't  I'LL we've 'sand", 10, {15357, 956, 220, 358, 6, 4178}},
      {"\t\tindent\n\t\n  \n", 5, {197, 197, 33940, 18108, 2355}},
      {"a   \n\n  b", 4, {64, 35033, 220, 293}},
      {"été 123456 中文 ١٢٣٤", 15, {39883, 220, 4513, 10961, 73958, 17161}},
      {"emoji 🎉🎉 done", 8, {38623, 11410, 236, 231, 9468, 236}},
      {"<|endoftext|> is text", 9, {27, 91, 8862, 728, 428, 91}},
      {"  trailing   ", 3, {220, 28848, 262}},
      {"x\r\n\r\ny", 3, {87, 881, 88}},
      {"====================================", 2, {3134, 608}},
      {"naïve café\u00a0nbsp\u2003em", 9, {3458, 38672, 588, 53050, 4194, 5792}},
      {"\v\fvt ff", 4, {199, 200, 9907, 26620}},
      {"'S'T'Re'VE'M'LL'D", 9, {13575, 17773, 50527, 6, 4592, 28703}},
      {"ſ 'ſ", 5, {129, 123, 364, 129, 123}},
      {"3.14159e-10 + 0x1F", 13, {18, 13, 9335, 2946, 68, 12}},
      {"#!/usr/bin/env python3\n# -*- coding: utf-8 -*-\n", 15, {8872, 7208, 8923, 14695, 10344, 18}},
      {"x'ſ", 4, {87, 6, 129, 123}},
      {"a'sa", 3, {64, 596, 64}},
  };
  return c;
}

}  // namespace

TEST(Cl100k, IdsAndCountsMatchTheReferenceImplementation) {
  EXPECT_EQ(cl100k::vocabulary_size(), 100256u);
  for (const Case& c : cases()) {
    std::vector<uint32_t> ids = cl100k::encode(c.text);
    EXPECT_EQ(static_cast<int>(ids.size()), c.count) << c.text;
    EXPECT_EQ(cl100k::count(c.text), c.count) << c.text;
    ids.resize(std::min(ids.size(), c.first_ids.size()));
    EXPECT_EQ(ids, c.first_ids) << c.text;
  }
}

TEST(Cl100k, InvalidUtf8IsCountedNotRejected) {
  // Lone continuation bytes, a truncated sequence and an encoded surrogate: each byte is a piece of its own.
  std::string bad = "ok\x80\xbf x\xe2\x82 \xed\xa0\x80";
  EXPECT_GT(cl100k::count(bad), 4);
  EXPECT_EQ(cl100k::count(bad), static_cast<int>(cl100k::encode(bad).size()));
}

TEST(Cl100k, TruncationCutsBetweenPiecesWithinTheBudget) {
  std::string text = "def run(self):\n    return self.value + 1\n";
  int total = cl100k::count(text);
  for (int budget = 0; budget <= total + 1; ++budget) {
    std::string_view cut = cl100k::truncate(text, budget);
    EXPECT_LE(cl100k::count(cut), budget);
    EXPECT_EQ(text.substr(0, cut.size()), cut);
  }
  EXPECT_EQ(cl100k::truncate(text, total).size(), text.size());
  EXPECT_EQ(cl100k::truncate("hello world again", 2), "hello world");
}

TEST(Cl100k, CounterIsChosenByName) {
  EXPECT_EQ(token_counter_named("cl100k"), TokenCounter::cl100k);
  EXPECT_EQ(token_counter_named("estimate"), TokenCounter::estimate);
  EXPECT_THROW(token_counter_named("gpt2"), Error);
  // The estimate differs from the real count on a long identifier (30 letters: 5 real tokens, 5 estimated)
  // and on digits inside words; both count the same simple text alike.
  EXPECT_EQ(count_tokens("hello world", TokenCounter::cl100k), count_tokens("hello world", TokenCounter::estimate));
  EXPECT_EQ(count_tokens("====================================", TokenCounter::cl100k), 2);
  EXPECT_EQ(count_tokens("====================================", TokenCounter::estimate), 1);
}

TEST(Cl100k, RandomBytesKeepCountsAndCutsConsistent) {
  // Bytes drawn mostly from the classes the pre-tokenizer tells apart, with invalid UTF-8 among them: the
  // count is the ids' number and every cut between pieces holds at most its budget (fuzz/tokenizer.cpp runs
  // the same checks under libFuzzer).
  const std::vector<std::string> parts = {
      "a",      "Z",  "é",   "中", "7",  "١", " ", "  ",   "\t",       "\n",   "\r\n",
      "\u00a0", "'s", "'LL", "=",  "==", "(", "🎉", "\x80", "\xe2\x82", "\xff", "_x"};
  std::mt19937 rng(11);
  for (int round = 0; round < 300; ++round) {
    std::string text;
    int n = static_cast<int>(rng() % 120);
    for (int i = 0; i < n; ++i) text += parts[rng() % parts.size()];
    auto ids = cl100k::encode(text);
    ASSERT_EQ(static_cast<size_t>(cl100k::count(text)), ids.size()) << text;
    for (int budget = 0; budget <= static_cast<int>(ids.size()); ++budget) {
      std::string_view cut = cl100k::truncate(text, budget);
      ASSERT_LE(cl100k::count(cut), budget) << text;
    }
    ASSERT_EQ(cl100k::truncate(text, static_cast<int>(ids.size())).size(), text.size()) << text;
  }
}
