#include <gtest/gtest.h>

#include <algorithm>

#include "repo/parser.h"
#include "util/cancel.h"

using namespace repoctx;

namespace {

ParsedFile parse(const std::string& src) {
  SourceParser p;
  return p.parse("m.py", "pkg.m", src, Language::python);
}

const Entity* find(const ParsedFile& pf, const std::string& qual) {
  for (const auto& e : pf.entities)
    if (e.qualname == qual) return &e;
  return nullptr;
}

std::vector<std::string> chains_in(const ParsedFile& pf, const std::string& qual) {
  std::vector<std::string> out;
  int idx = -1;
  for (size_t i = 0; i < pf.entities.size(); ++i)
    if (pf.entities[i].qualname == qual) idx = static_cast<int>(i);
  for (const auto& r : pf.references)
    if (r.scope == idx) out.push_back(r.chain);
  std::sort(out.begin(), out.end());
  return out;
}

}  // namespace

TEST(PythonParser, DefinitionsWithAstLineConventions) {
  auto pf = parse(
      "import os\n"                                             // 1
      "X: int = 3\n"                                            // 2
      "a, (b, *c) = 1, (2, 3)\n"                                // 3
      "\n"                                                      // 4
      "@decorator(1)\n"                                         // 5
      "class Foo(Base, metaclass=M):\n"                         // 6
      "    '''Foo doc.'''\n"                                    // 7
      "    attr = 1\n"                                          // 8
      "    @property\n"                                         // 9
      "    def bar(self, x, /, y=2, *args, z, **kw) -> int:\n"  // 10
      "        def inner():\n"                                  // 11
      "            return 1\n"                                  // 12
      "        return inner()\n"                                // 13
      "        # trailing comment\n"                            // 14
      "\n"                                                      // 15
      "async def top(a: int = 1):\n"                            // 16
      "    pass\n");                                            // 17
  ASSERT_TRUE(pf.errors.empty());
  const Entity* foo = find(pf, "Foo");
  ASSERT_NE(foo, nullptr);
  EXPECT_EQ(foo->kind, EntityKind::klass);
  EXPECT_EQ(foo->start_line, 6);
  EXPECT_EQ(foo->decorated_start_line, 5);
  EXPECT_EQ(foo->end_line, 13);  // ast's end_lineno: the trailing comment is not part of it
  EXPECT_EQ(foo->docstring, "Foo doc.");
  EXPECT_EQ(foo->bases, (std::vector<std::string>{"Base"}));
  EXPECT_EQ(foo->decorators, (std::vector<std::string>{"decorator(1)"}));
  const Entity* bar = find(pf, "Foo.bar");
  ASSERT_NE(bar, nullptr);
  EXPECT_EQ(bar->kind, EntityKind::method);
  EXPECT_EQ(bar->start_line, 10);
  EXPECT_EQ(bar->decorated_start_line, 9);
  EXPECT_EQ(bar->end_line, 13);
  EXPECT_EQ(bar->body_start_line, 11);
  EXPECT_EQ(bar->signature, "def bar(self, x, /, y=2, *args, z, **kw) -> int:");
  ASSERT_EQ(bar->params.size(), 6u);
  EXPECT_EQ(bar->params[0].kind, Parameter::positional_only);
  EXPECT_EQ(bar->params[1].kind, Parameter::positional_only);
  EXPECT_EQ(bar->params[2].kind, Parameter::positional);
  EXPECT_TRUE(bar->params[2].has_default);
  EXPECT_EQ(bar->params[3].kind, Parameter::var_positional);
  EXPECT_EQ(bar->params[4].kind, Parameter::keyword_only);
  EXPECT_EQ(bar->params[5].kind, Parameter::var_keyword);
  const Entity* inner = find(pf, "Foo.bar.<locals>.inner");
  ASSERT_NE(inner, nullptr);
  EXPECT_EQ(inner->kind, EntityKind::function);
  EXPECT_NE(find(pf, "Foo.attr"), nullptr);
  EXPECT_EQ(find(pf, "Foo.attr")->kind, EntityKind::attribute);
  for (auto name : {"X", "a", "b", "c"}) {
    ASSERT_NE(find(pf, name), nullptr) << name;
    EXPECT_EQ(find(pf, name)->kind, EntityKind::variable);
  }
  const Entity* top = find(pf, "top");
  ASSERT_NE(top, nullptr);
  EXPECT_TRUE(top->is_async);
  EXPECT_EQ(top->params[0].annotation, "int");
}

TEST(PythonParser, ConditionalDefinitionsAndDuplicates) {
  auto pf = parse(
      "try:\n    import numpy as np\nexcept ImportError:\n    np = None\n"
      "if True:\n    def f(): pass\nelse:\n    def f(): return 1\n"
      "class C:\n    if X:\n        y = 1\n");
  int fs = 0;
  for (const auto& e : pf.entities) fs += e.qualname == "f";
  EXPECT_EQ(fs, 2);
  EXPECT_NE(find(pf, "np"), nullptr);
  EXPECT_NE(find(pf, "C.y"), nullptr);
  ASSERT_EQ(pf.imports.size(), 1u);
  EXPECT_TRUE(pf.imports[0].conditional);
  EXPECT_EQ(pf.imports[0].bound_name(), "np");
}

TEST(PythonParser, Imports) {
  auto pf = parse(
      "import a.b.c\nimport d as e\nfrom . import sib\nfrom ..pkg.mod import (x, y as z)\nfrom m import *\n"
      "from __future__ import annotations\n"
      "def f():\n    from .local import helper\n    return helper()\n");
  ASSERT_EQ(pf.imports.size(), 7u);
  EXPECT_EQ(pf.imports[0].module, "a.b.c");
  EXPECT_EQ(pf.imports[0].bound_name(), "a");
  EXPECT_EQ(pf.imports[1].bound_name(), "e");
  EXPECT_EQ(pf.imports[2].level, 1);
  EXPECT_EQ(pf.imports[2].name, "sib");
  EXPECT_EQ(pf.imports[3].level, 2);
  EXPECT_EQ(pf.imports[3].module, "pkg.mod");
  EXPECT_EQ(pf.imports[4].bound_name(), "z");
  EXPECT_TRUE(pf.imports[5].star);
  EXPECT_EQ(pf.imports[6].scope, 0);  // inside f
  // A name imported inside a function is resolvable, so its uses are kept.
  EXPECT_EQ(chains_in(pf, "f"), std::vector<std::string>{"helper"});
}

TEST(PythonParser, ReferencesFollowPythonScoping) {
  auto pf = parse(
      "import np\n"
      "G = 1\n"
      "class K(Base):\n"
      "    def m(self, arg):\n"
      "        local = np.zeros(3)\n"
      "        self.field = arg\n"
      "        for i in range(G):\n"
      "            local += i\n"
      "        total = sum(v for v in local)\n"
      "        helper(arg, *rest, key=1)\n"
      "        super().m(arg)\n"
      "        return self.other(local).attr, [w for w in self.items], lambda q: q + G\n");
  auto chains = chains_in(pf, "K.m");
  std::vector<std::string> expected = {"G",          "G",          "helper",     "np.zeros", "range",    "rest",
                                       "self.field", "self.items", "self.other", "sum",      "super().m"};
  EXPECT_EQ(chains, expected);
  for (const auto& r : pf.references) {
    if (r.chain == "helper") {
      EXPECT_EQ(r.nargs, -1);  // *rest makes the count unknown
      EXPECT_EQ(r.kwargs, std::vector<std::string>{"key"});
      EXPECT_EQ(r.kind, RefKind::call);
    }
    if (r.chain == "self.field") EXPECT_TRUE(r.is_store);
    if (r.chain == "np.zeros") EXPECT_EQ(r.nargs, 1);
  }
  // Base classes are referenced from the module scope.
  bool base = false;
  for (const auto& r : pf.references) base |= r.chain == "Base" && r.scope == -1;
  EXPECT_TRUE(base);
}

TEST(PythonParser, ClosuresAndGlobals) {
  auto pf = parse(
      "def outer(x):\n"
      "    y = 1\n"
      "    def inner():\n"
      "        global Z\n"
      "        return x + y + Z + W\n"
      "    return inner\n");
  EXPECT_EQ(chains_in(pf, "outer.<locals>.inner"), (std::vector<std::string>{"W", "Z"}));
}

TEST(PythonParser, SyntaxErrorsKeepRecoveredDefinitions) {
  auto pf = parse(
      "def good():\n    return 1\n\n"
      "def broken(:\n    pass\n\n"
      "class Later:\n    def m(self):\n        return 2\n");
  EXPECT_FALSE(pf.errors.empty());
  EXPECT_NE(find(pf, "good"), nullptr);
  EXPECT_NE(find(pf, "Later.m"), nullptr);
}

TEST(PythonParser, DocstringVariants) {
  auto pf = parse(
      "def a():\n    r'''Raw \\n doc.'''\n"
      "def b():\n    f'''not {a} doc'''\n"
      "def c():\n    'first' 'second'\n"
      "def d():\n    # comment first\n    \"\"\"Doc after comment.\"\"\"\n    return 1\n");
  EXPECT_EQ(find(pf, "a")->docstring, "Raw \\n doc.");
  EXPECT_EQ(find(pf, "b")->docstring, "");
  EXPECT_EQ(find(pf, "c")->docstring, "firstsecond");
  EXPECT_EQ(find(pf, "d")->docstring, "Doc after comment.");
  EXPECT_EQ(find(pf, "d")->body_start_line, 10);
}

TEST(PythonParser, EmptyAndBinaryLikeInput) {
  EXPECT_TRUE(parse("").entities.empty());
  auto pf = parse(std::string("x = 1\n\xff\xfe garbage \x01\n"));
  EXPECT_NE(find(pf, "x"), nullptr);
}

// ------------------------------------------------------------------------------- deep nesting (issue 21)
namespace {

std::string repeat_join(const std::string& part, const std::string& sep, int n) {
  std::string out;
  out.reserve(static_cast<size_t>(n) * (part.size() + sep.size()));
  for (int i = 0; i < n; ++i) out += (i ? sep : "") + part;
  return out;
}

std::string partial_of(const ParsedFile& pf) {
  return pf.partial_reason();
}

}  // namespace

TEST(PythonParserDepth, DeepExpressionsAreIndexedUpToTheLimitAndReported) {
  // 11,000 and 50,000 terms (CPython: RecursionError), 50,000 nested parentheses and lists (CPython: "too
  // many nested parentheses"): each used to overflow the native stack in the extractor's recursive scan.
  const std::string good = "\n\ndef after(x):\n    return helper(x)\n";
  for (const std::string& deep :
       {"w = " + repeat_join("1", "+", 11000), "w = " + repeat_join("1", "+", 50000),
        "w = " + std::string(50000, '(') + "1" + std::string(50000, ')'),
        "w = " + std::string(50000, '[') + "1" + std::string(50000, ']'), "w = a" + repeat_join(".b()", "", 50000)}) {
    auto pf = parse(deep + good);
    ASSERT_NE(find(pf, "w"), nullptr) << deep.substr(0, 20);
    ASSERT_NE(find(pf, "after"), nullptr) << deep.substr(0, 20);
    EXPECT_EQ(chains_in(pf, "after"), (std::vector<std::string>{"helper"}));
    std::string why = partial_of(pf);
    EXPECT_NE(why.find("nested deeper than 3000 levels at line 1"), std::string::npos) << why;
  }
}

TEST(PythonParserDepth, WhatCPythonCompilesIsAnalysedWhole) {
  // A 2,000-term sum compiles in CPython 3.11 (3,000 does not): below the limit, nothing is cut and the
  // references deep in the tree are all there.
  auto pf = parse("def f():\n    return " + repeat_join("g(x)", " + ", 2000) + "\n");
  EXPECT_TRUE(partial_of(pf).empty()) << partial_of(pf);
  size_t calls = 0;
  for (const auto& r : pf.references) calls += r.chain == "g" && r.kind == RefKind::call;
  EXPECT_EQ(calls, 2000u);
  // A 10,000-long attribute chain rooted at a name is one reference, whatever its length.
  pf = parse("def f(a):\n    return mod" + repeat_join(".b", "", 10000) + "\n");
  ASSERT_EQ(pf.references.size(), 1u);
  EXPECT_EQ(pf.references[0].chain.size(), 3u + 2u * 10000u);
}

TEST(PythonParserDepth, DeepBlocksStopAtTheBlockLimit) {
  // 1,000 nested functions (CPython allows 100 levels of indentation): the outer ones are indexed, the
  // rest is reported.
  std::string src;
  for (int i = 0; i < 1000; ++i)
    src += std::string(static_cast<size_t>(i), ' ') + "def f" + std::to_string(i) + "():\n";
  src += std::string(1000, ' ') + "pass\n";
  auto pf = parse(src);
  EXPECT_GE(pf.entities.size(), 150u);
  EXPECT_LE(pf.entities.size(), 201u);
  EXPECT_NE(partial_of(pf).find("blocks nested deeper than 200 levels"), std::string::npos) << partial_of(pf);
  // Chained assignments and nested targets are loops, not recursion.
  pf = parse(repeat_join("a", " = ", 50000) + " = 1\n" + "(" + std::string(20000, '(') + "x" + std::string(20000, ')') +
             ", y) = 1, 2\n");
  EXPECT_NE(find(pf, "a"), nullptr);
  EXPECT_NE(find(pf, "x"), nullptr);
  EXPECT_NE(find(pf, "y"), nullptr);
}

TEST(PythonParserDepth, AnInterruptStopsTheParseOfAHugeFile) {
  std::string huge = repeat_join("value = compute(arg)", ";", 400000) + "\n";
  g_interrupted = true;
  auto pf = parse(huge);
  g_interrupted = false;
  EXPECT_TRUE(pf.entities.empty());
  ASSERT_FALSE(pf.errors.empty());
  EXPECT_NE(pf.errors[0].message.find("cancelled"), std::string::npos);
  // The parser is usable again afterwards.
  EXPECT_NE(find(parse("def ok():\n    pass\n"), "ok"), nullptr);
}
