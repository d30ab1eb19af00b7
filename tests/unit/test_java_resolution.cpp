// Cross-file resolution on a multi-package Java code base (issue 15 item 6): every class of a package is a
// member of it, whichever file of the package defines it, so that imports of several classes of one
// package, same-package references without an import, and static imports resolve, and the dependency
// snippets of a Java file (AlignCoder III-A2) list every imported class.
#include <gtest/gtest.h>

#include <set>

#include "helpers.h"
#include "index/index.h"
#include "retrieve/aligncoder_snippets.h"
#include "retrieve/engine.h"

using namespace repoctx;
using repoctx::testing::TempDir;

namespace {

// A small shop: model (three classes, three files), util (two classes), service (uses all of them).
void write_shop(const TempDir& repo) {
  repo.write("src/main/java/com/acme/model/User.java",
             "package com.acme.model;\n\n"
             "/** A customer. */\n"
             "public class User {\n"
             "  private final String name;\n"
             "  public User(String name) { this.name = name; }\n"
             "  public String getName() { return name; }\n"
             "}\n");
  repo.write("src/main/java/com/acme/model/Item.java",
             "package com.acme.model;\n\n"
             "public class Item {\n"
             "  private final long priceCents;\n"
             "  public Item(long priceCents) { this.priceCents = priceCents; }\n"
             "  public long getPriceCents() { return priceCents; }\n"
             "}\n");
  repo.write("src/main/java/com/acme/model/Order.java",
             "package com.acme.model;\n\n"
             "import java.util.ArrayList;\n"
             "import java.util.List;\n\n"
             "public class Order {\n"
             "  private final User owner;\n"
             "  private final List<Item> items = new ArrayList<>();\n"
             "  public Order(User owner) { this.owner = owner; }\n"
             "  public void add(Item item) { items.add(item); }\n"
             "  public List<Item> getItems() { return items; }\n"
             "  public static class Line {\n"
             "    public int quantity() { return 1; }\n"
             "  }\n"
             "}\n");
  repo.write("src/main/java/com/acme/util/Money.java",
             "package com.acme.util;\n\n"
             "public final class Money {\n"
             "  private Money() {}\n"
             "  public static String format(long cents) { return cents / 100 + \".\" + cents % 100; }\n"
             "}\n");
  repo.write("src/main/java/com/acme/util/Strings.java",
             "package com.acme.util;\n\n"
             "public final class Strings {\n"
             "  public static String pad(String s, int n) { return s; }\n"
             "}\n");
  repo.write("src/main/java/com/acme/ship/Parcel.java",
             "package com.acme.ship;\n\n"
             "public class Parcel {\n"
             "  public static Parcel of(Order order) { return new Parcel(); }\n"
             "}\n");
  repo.write("src/main/java/com/acme/service/Totals.java",
             "package com.acme.service;\n\n"
             "class Totals {\n"
             "  static long sum(long a, long b) { return a + b; }\n"
             "}\n");
  repo.write("src/main/java/com/acme/service/OrderService.java",
             "package com.acme.service;\n\n"
             "import com.acme.model.Item;\n"
             "import com.acme.model.Order;\n"
             "import com.acme.model.User;\n"
             "import com.acme.util.Strings;\n"
             "import static com.acme.util.Money.format;\n"
             "import com.acme.ship.*;\n\n"
             "public class OrderService {\n"
             "  public String receipt(User user, Order order) {\n"
             "    long total = 0;\n"
             "    for (Item item : order.getItems()) total = Totals.sum(total, item.getPriceCents());\n"
             "    return Strings.pad(user.getName(), 10) + format(total);\n"
             "  }\n"
             "}\n");
}

class JavaResolution : public ::testing::Test {
 protected:
  void SetUp() override {
    write_shop(repo_);
    IndexOptions o;
    o.db_path = tmp_.str() + "/i.db";
    o.progress = false;
    build_index(repo_.str(), o);
    eng_ = Engine::open(o.db_path);
    service_ = *eng_->view().file_by_path("src/main/java/com/acme/service/OrderService.java");
  }
  // "path::qualname" of what `chain` resolves to at module level of OrderService.java, or "".
  std::string resolve(const std::string& chain) {
    Resolution r = eng_->graph().resolve(service_, -1, chain);
    if (r.kind != Resolution::Kind::entity) return "";
    return eng_->target_name(r.entity);
  }
  TempDir repo_, tmp_;
  std::unique_ptr<Engine> eng_;
  int service_ = -1;
};

TEST_F(JavaResolution, EveryImportedClassOfAPackageResolvesToItsOwnFile) {
  EXPECT_EQ(resolve("User"), "src/main/java/com/acme/model/User.java::User");
  EXPECT_EQ(resolve("Item"), "src/main/java/com/acme/model/Item.java::Item");
  EXPECT_EQ(resolve("Order"), "src/main/java/com/acme/model/Order.java::Order");
  EXPECT_EQ(resolve("Order.Line"), "src/main/java/com/acme/model/Order.java::Order.Line");
  EXPECT_EQ(resolve("Strings"), "src/main/java/com/acme/util/Strings.java::Strings");
  EXPECT_EQ(resolve("Item.getPriceCents"), "src/main/java/com/acme/model/Item.java::Item.getPriceCents");
}

TEST_F(JavaResolution, SamePackageClassesAndStaticImportsResolve) {
  EXPECT_EQ(resolve("Totals"), "src/main/java/com/acme/service/Totals.java::Totals");
  EXPECT_EQ(resolve("Totals.sum"), "src/main/java/com/acme/service/Totals.java::Totals.sum");
  EXPECT_EQ(resolve("format"), "src/main/java/com/acme/util/Money.java::Money.format");
  // A name no file of the package defines stays unresolved.
  EXPECT_EQ(resolve("Missing"), "");
}

TEST_F(JavaResolution, WildcardImportsResolveTheirPackagesTypes) {
  EXPECT_EQ(resolve("Parcel"), "src/main/java/com/acme/ship/Parcel.java::Parcel");
  EXPECT_EQ(resolve("Parcel.of"), "src/main/java/com/acme/ship/Parcel.java::Parcel.of");
}

// A refresh that finds every file unchanged keeps each Java file's package as its module (a Python file's
// module follows its path; a Java file's does not).
TEST_F(JavaResolution, RefreshKeepsThePackages) {
  IndexOptions o;
  o.db_path = tmp_.str() + "/i.db";
  o.progress = false;
  build_index(repo_.str(), o);
  eng_ = Engine::open(o.db_path);
  service_ = *eng_->view().file_by_path("src/main/java/com/acme/service/OrderService.java");
  EXPECT_EQ(eng_->view().files()[service_].module, "com.acme.service");
  EXPECT_EQ(resolve("Totals"), "src/main/java/com/acme/service/Totals.java::Totals");
  EXPECT_EQ(resolve("Parcel"), "src/main/java/com/acme/ship/Parcel.java::Parcel");
}

TEST_F(JavaResolution, DependencySnippetsListEveryImportedClass) {
  std::set<std::string> classes;
  std::string functions;
  for (const auto& d : dependency_snippets(*eng_, service_)) {
    if (d.label == "functions")
      functions = d.text;
    else
      classes.insert(d.label);
  }
  EXPECT_EQ(classes, (std::set<std::string>{"class com.acme.model.Item", "class com.acme.model.Order",
                                            "class com.acme.model.User", "class com.acme.util.Strings"}));
  EXPECT_NE(functions.find("format(long cents)"), std::string::npos) << functions;
}

TEST_F(JavaResolution, ImportedFilesFollowEveryClassOfAPackage) {
  std::set<std::string> paths;
  for (int f : eng_->graph().imported_files(service_)) paths.insert(eng_->view().files()[f].path);
  EXPECT_TRUE(paths.count("src/main/java/com/acme/model/Item.java"));
  EXPECT_TRUE(paths.count("src/main/java/com/acme/model/Order.java"));
  EXPECT_TRUE(paths.count("src/main/java/com/acme/model/User.java"));
  EXPECT_TRUE(paths.count("src/main/java/com/acme/util/Money.java"));
}

}  // namespace
