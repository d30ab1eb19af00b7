#include <gtest/gtest.h>

#include "repo/documents.h"
#include "repo/model.h"
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
  EXPECT_EQ(clean_docstring("Summary.\n\n    Details here.\n      indented\n    "), "Summary.\n\nDetails here.\n  indented");
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
  EXPECT_EQ(sn[0].start_line, 1);   // 3 + 4 = 7 <= 10, + 9 > 10
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
