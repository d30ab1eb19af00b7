#include <gtest/gtest.h>

#include "repo/parser.h"

using namespace repoctx;

TEST(JavaParser, PackagesTypesMembersImports) {
  SourceParser p;
  auto pf = p.parse("src/com/x/Foo.java", "", R"(package com.x;
import java.util.List;
import com.x.util.*;
/** A foo. */
public class Foo extends Base implements Runnable {
  private int count = 0;
  public Foo(int c) { this.count = c; }
  /** Runs. */
  public void run() { helper.go(count); new Bar(1, 2); }
  interface Inner { void call(); }
  enum Color { RED, GREEN }
}
)",
                    Language::java);
  EXPECT_EQ(pf.package, "com.x");
  EXPECT_EQ(pf.module, "com.x");
  ASSERT_EQ(pf.imports.size(), 2u);
  EXPECT_EQ(pf.imports[0].module, "java.util");
  EXPECT_EQ(pf.imports[0].name, "List");
  EXPECT_TRUE(pf.imports[1].star);
  auto has = [&](const std::string& q, EntityKind k) {
    for (const auto& e : pf.entities)
      if (e.qualname == q && e.kind == k) return true;
    return false;
  };
  EXPECT_TRUE(has("Foo", EntityKind::klass));
  EXPECT_TRUE(has("Foo.count", EntityKind::field));
  EXPECT_TRUE(has("Foo.Foo", EntityKind::constructor));
  EXPECT_TRUE(has("Foo.run", EntityKind::method));
  EXPECT_TRUE(has("Foo.Inner", EntityKind::interface));
  EXPECT_TRUE(has("Foo.Inner.call", EntityKind::method));
  EXPECT_TRUE(has("Foo.Color.RED", EntityKind::field));
  for (const auto& e : pf.entities) {
    if (e.qualname == "Foo") {
      EXPECT_EQ(e.bases, (std::vector<std::string>{"Base", "Runnable"}));
      EXPECT_EQ(e.docstring, "A foo.");
    }
    if (e.qualname == "Foo.run") EXPECT_EQ(e.docstring, "Runs.");
  }
  bool call = false, ctor = false;
  for (const auto& r : pf.references) {
    call |= r.chain == "helper.go" && r.nargs == 1;
    ctor |= r.chain == "Bar" && r.nargs == 2;
  }
  EXPECT_TRUE(call);
  EXPECT_TRUE(ctor);
}

// Deep nesting (issue 21): the Java scan and the member walk used to recurse once per tree level and
// overflowed the native stack below ~20,000 levels (every command indexing the file crashed).
TEST(JavaParser, DeepNestingIsIndexedUpToTheLimitAndReported) {
  SourceParser p;
  auto sum = [](int n) {
    std::string s;
    for (int i = 0; i < n; ++i) s += i ? "+1" : "1";
    return s;
  };
  std::string calls = "a";
  for (int i = 0; i < 50000; ++i) calls += ".b()";
  std::string classes;
  for (int i = 0; i < 20000; ++i) classes += "class C" + std::to_string(i) + " { ";
  classes += std::string(20000, '}');
  for (const std::string& src : {"class Deep { int f() { return " + sum(20000) + "; } void g() { helper.go(); } }",
                                 "class Deep { int f() { return " + sum(50000) + "; } void g() { helper.go(); } }",
                                 "class Deep { void f() { " + calls + "; } void g() { helper.go(); } }", classes}) {
    auto pf = p.parse("Deep.java", "", src, Language::java);
    ASSERT_FALSE(pf.entities.empty());
    std::string why = pf.partial_reason();
    EXPECT_NE(why.find("nested deeper than"), std::string::npos) << src.substr(0, 40);
    if (src == classes) {
      EXPECT_EQ(pf.entities.size(), 200u);  // kMaxBlockNesting levels of types
    } else {
      bool saw = false;
      for (const auto& r : pf.references) saw = saw || r.chain == "helper.go";
      EXPECT_TRUE(saw) << "the method after the deep one is analysed";
    }
  }
  // Below the limit nothing is cut: every call of a 2,000-term sum is a reference.
  std::string terms;
  for (int i = 0; i < 2000; ++i) terms += i ? " + g(x)" : "g(x)";
  auto pf = p.parse("Ok.java", "", "class Ok { int f() { return " + terms + "; } }", Language::java);
  EXPECT_TRUE(pf.partial_reason().empty()) << pf.partial_reason();
  EXPECT_EQ(pf.references.size(), 2000u);
}
