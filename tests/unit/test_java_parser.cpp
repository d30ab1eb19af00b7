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
