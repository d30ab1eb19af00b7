// Rust: extraction over tree-sitter-rust (items, impl methods as "T.m", members, inline modules, use trees,
// references without locals), module paths from Cargo.toml, and resolution through `use`, `crate::`,
// `super::`, receivers, impl blocks in other files and re-exports.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>
#include <set>

#include "helpers.h"
#include "index/index.h"
#include "repo/parser.h"
#include "repo/rust/crates.h"
#include "retrieve/aligncoder_snippets.h"
#include "retrieve/engine.h"

using namespace repoctx;
using repoctx::testing::chains_in;
using repoctx::testing::find_entity;
using repoctx::testing::TempDir;

namespace {

int index_of(const ParsedFile& pf, const std::string& qualname) {
  for (size_t i = 0; i < pf.entities.size(); ++i)
    if (pf.entities[i].qualname == qualname) return static_cast<int>(i);
  return -1;
}

const char* kShapesRs = R"(use std::fmt;
use crate::util::{self, square as sq, consts::*};
use super::geometry::Point;
extern crate serde as ser;

/// A circle.
/// Round.
#[derive(Debug, Clone)]
pub struct Circle {
    /// Radius.
    pub r: f64,
    center: Point,
}

pub enum Shape {
    Round(Circle),
    Square { side: f64 },
    Empty = 3,
}

pub trait Area: fmt::Debug + Clone {
    fn area(&self) -> f64;
    fn double(&self) -> f64 {
        self.area() * 2.0
    }
}

impl Circle {
    pub fn new(r: f64) -> Self {
        Self { r, center: Point::origin() }
    }

    pub fn scaled(&self, k: f64) -> Circle {
        let factor = k * 2.0;
        match self.center {
            Point { x, y } => Circle::new(sq(self.r) * factor + x + y),
        }
    }
}

impl Area for Circle {
    fn area(&self) -> f64 {
        let f = |t: f64| t * PI;
        f(util::square(self.r)) + self::helper(1) + crate::util::cube(2.0)
    }
}

pub const LIMIT: usize = 10;
pub type Shapes = Vec<Shape>;

macro_rules! circle {
    ($r:expr) => { Circle::new($r) };
}

fn helper(n: i32) -> i32 {
    println!("{}", n);
    let v: Vec<Shape> = Vec::new();
    n + LIMIT as i32
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn makes_a_circle() {
        assert_eq!(Circle::new(1.0).r, 1.0);
    }
}
)";

TEST(RustParser, ItemsMembersAndLines) {
  SourceParser p;
  ParsedFile pf = p.parse("src/shapes.rs", "shop.shapes", kShapesRs, Language::rust);
  EXPECT_TRUE(pf.errors.empty()) << pf.errors[0].message;
  const Entity* circle = find_entity(pf, "Circle");
  ASSERT_NE(circle, nullptr);
  EXPECT_EQ(circle->kind, EntityKind::klass);
  EXPECT_EQ(circle->start_line, 9);  // the item starts at its visibility, after doc comments and attributes
  EXPECT_EQ(circle->decorated_start_line, 6);
  EXPECT_EQ(circle->end_line, 13);
  EXPECT_EQ(circle->docstring, "A circle.\nRound.");
  EXPECT_EQ(circle->decorators, (std::vector<std::string>{"derive(Debug, Clone)"}));
  const Entity* r = find_entity(pf, "Circle.r");
  ASSERT_NE(r, nullptr);
  EXPECT_EQ(r->kind, EntityKind::field);
  EXPECT_EQ(r->docstring, "Radius.");
  EXPECT_EQ(r->parent, index_of(pf, "Circle"));
  for (const char* v : {"Shape.Round", "Shape.Square", "Shape.Empty"})
    EXPECT_EQ(find_entity(pf, v)->kind, EntityKind::field) << v;
  const Entity* area = find_entity(pf, "Area");
  ASSERT_NE(area, nullptr);
  EXPECT_EQ(area->kind, EntityKind::interface);
  EXPECT_EQ(area->bases, (std::vector<std::string>{"Debug", "Clone"}));
  EXPECT_EQ(find_entity(pf, "Area.area")->parent, index_of(pf, "Area"));  // a required method
  EXPECT_EQ(find_entity(pf, "Area.double")->end_line, 25);                // a provided one
  // Methods of impl blocks are named by the implementing type and belong to no entity (like Go's).
  const Entity* scaled = find_entity(pf, "Circle.scaled");
  ASSERT_NE(scaled, nullptr);
  EXPECT_EQ(scaled->kind, EntityKind::method);
  EXPECT_EQ(scaled->parent, -1);
  EXPECT_EQ(scaled->signature, "pub fn scaled(&self, k: f64) -> Circle");
  EXPECT_EQ(scaled->params.size(), 2u);
  EXPECT_EQ(scaled->params[0].name, "self");
  EXPECT_EQ(scaled->header_end_line, 33);
  EXPECT_EQ(scaled->body_start_line, 34);
  EXPECT_EQ(scaled->body_end_line, 38);
  EXPECT_NE(find_entity(pf, "Circle.area"), nullptr);  // a trait impl's method
  EXPECT_EQ(find_entity(pf, "LIMIT")->kind, EntityKind::variable);
  EXPECT_EQ(find_entity(pf, "Shapes")->kind, EntityKind::klass);
  EXPECT_EQ(find_entity(pf, "circle")->kind, EntityKind::function);  // macro_rules!
  EXPECT_NE(find_entity(pf, "tests.makes_a_circle"), nullptr);       // an inline module's item
}

TEST(RustParser, UseTreesBecomeOneImportPerName) {
  SourceParser p;
  ParsedFile pf = p.parse("src/shapes.rs", "shop.shapes", kShapesRs, Language::rust);
  std::map<std::string, const Import*> by_name;
  std::vector<const Import*> stars;
  for (const auto& im : pf.imports) (im.star ? stars.push_back(&im) : void(by_name[im.bound_name()] = &im));
  ASSERT_TRUE(by_name.count("fmt"));
  EXPECT_EQ(by_name["fmt"]->module, "std");  // kept as written: another crate
  EXPECT_EQ(by_name["fmt"]->name, "fmt");
  ASSERT_TRUE(by_name.count("util"));  // `crate::util::{self}` binds the module itself
  EXPECT_EQ(by_name["util"]->module, "shop.util");
  EXPECT_EQ(by_name["util"]->name, "");
  ASSERT_TRUE(by_name.count("sq"));
  EXPECT_EQ(by_name["sq"]->module, "shop.util");
  EXPECT_EQ(by_name["sq"]->name, "square");
  ASSERT_TRUE(by_name.count("Point"));  // `super::` climbs from this file's module
  EXPECT_EQ(by_name["Point"]->module, "shop.geometry");
  ASSERT_TRUE(by_name.count("ser"));  // extern crate ... as
  EXPECT_EQ(by_name["ser"]->module, "serde");
  ASSERT_EQ(stars.size(), 2u);
  EXPECT_EQ(stars[0]->module, "shop.util.consts");
  EXPECT_EQ(stars[1]->module, "shop.shapes");  // `use super::*` in an inline module: the file's own module
}

TEST(RustParser, ReferencesSkipLocalsAndThePrelude) {
  SourceParser p;
  ParsedFile pf = p.parse("src/shapes.rs", "shop.shapes", kShapesRs, Language::rust);
  std::set<std::string> scaled = chains_in(pf, index_of(pf, "Circle.scaled"));
  // A pattern's type is a reference, the names it binds are locals.
  for (const char* want : {"self.center", "Circle.new", "sq", "self.r", "Circle", "Point"})
    EXPECT_TRUE(scaled.count(want)) << want;
  for (const char* local : {"factor", "k", "x", "y"}) EXPECT_FALSE(scaled.count(local)) << local;
  std::set<std::string> area = chains_in(pf, index_of(pf, "Circle.area"));
  // `self::helper` is this module's helper, `crate::` stays a root the resolver knows; a closure's
  // parameters and the closure's own name are locals.
  for (const char* want : {"util.square", "helper", "crate.util.cube", "PI", "self.r"})
    EXPECT_TRUE(area.count(want)) << want;
  for (const char* local : {"f", "t"}) EXPECT_FALSE(area.count(local)) << local;
  std::set<std::string> made = chains_in(pf, index_of(pf, "Circle.new"));
  EXPECT_TRUE(made.count("Circle")) << "`Self { .. }` names the implementing type";
  EXPECT_TRUE(made.count("Point.origin"));
  std::set<std::string> helper = chains_in(pf, index_of(pf, "helper"));
  EXPECT_TRUE(helper.count("LIMIT"));
  EXPECT_TRUE(helper.count("Shape"));
  for (const char* prelude : {"println", "Vec", "Vec.new", "i32", "v"}) EXPECT_FALSE(helper.count(prelude)) << prelude;
}

TEST(RustCrates, ModulePathsFromCargoToml) {
  EXPECT_EQ(cargo_crate_name("[package]\nname = \"my-crate\"\nversion = \"1\"\n"), "my_crate");
  EXPECT_EQ(cargo_crate_name("[package]\nname = 'pkg'\n[lib]\nname = \"libname\"\n"), "libname");
  EXPECT_EQ(cargo_crate_name("[workspace]\nmembers = [\"a\"]\n[dependencies]\nname = \"x\"\n"), "");
  TempDir root;
  root.write("Cargo.toml", "[workspace]\nmembers = [\"core\"]\n");
  root.write("core/Cargo.toml", "[package]\nname = \"shop-core\"\n");
  for (const char* f : {"core/src/lib.rs", "core/src/main.rs", "core/src/a/mod.rs", "core/src/a/b.rs",
                        "core/tests/it.rs", "core/build.rs", "tools/gen.rs"})
    root.write(f, "\n");
  auto m = rust_module_names({"core/src/lib.rs", "core/src/main.rs", "core/src/a/mod.rs", "core/src/a/b.rs",
                              "core/tests/it.rs", "core/build.rs", "tools/gen.rs", "README.py"},
                             root.str(), "shop-repo");
  EXPECT_EQ(m["core/src/lib.rs"], "shop_core");
  EXPECT_EQ(m["core/src/main.rs"], "shop_core.main");  // a binary beside the library
  EXPECT_EQ(m["core/src/a/mod.rs"], "shop_core.a");
  EXPECT_EQ(m["core/src/a/b.rs"], "shop_core.a.b");
  EXPECT_EQ(m["core/tests/it.rs"], "shop_core.tests.it");
  EXPECT_EQ(m["core/build.rs"], "shop_core.build");
  EXPECT_EQ(m["tools/gen.rs"], "shop_repo.tools.gen");  // the workspace manifest names no crate: the root's name
  EXPECT_FALSE(m.count("README.py"));
  TempDir bin;
  bin.write("src/main.rs", "\n");
  EXPECT_EQ(rust_module_names({"src/main.rs"}, bin.str(), "tool")["src/main.rs"], "tool");  // a binary alone
  TempDir linked, outside;  // a Cargo.toml linking outside the repository is not read
  outside.write("Cargo.toml", "[package]\nname = \"evil\"\n");
  linked.write("src/lib.rs", "\n");
  std::filesystem::create_symlink(outside.str() + "/Cargo.toml", linked.str() + "/Cargo.toml");
  EXPECT_EQ(rust_module_names({"src/lib.rs"}, linked.str(), "proj")["src/lib.rs"], "proj");
}

// A crate of four modules: lib.rs re-exports a type, an impl block of it sits in another module, one module
// uses a Rust 2015 crate-relative path, and an integration test reaches the crate by its name.
class RustResolution : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_.write("Cargo.toml", "[package]\nname = \"shop\"\nversion = \"0.1.0\"\n");
    repo_.write("src/lib.rs", "pub mod shapes;\nmod util;\npub mod app;\npub use shapes::Circle;\n");
    repo_.write("src/util.rs",
                "/// Squares.\npub fn square(x: f64) -> f64 {\n    x * x\n}\n\npub fn cube(x: f64) -> f64 {\n"
                "    x * x * x\n}\n");
    repo_.write("src/shapes/mod.rs",
                "mod render;\nuse crate::util;\n\npub struct Circle {\n    pub r: f64,\n}\n\n"
                "impl Circle {\n    pub fn new(r: f64) -> Self {\n        Self { r }\n    }\n\n"
                "    pub fn area(&self) -> f64 {\n        self.draw();\n        util::square(self.r) * Self::pi()\n"
                "    }\n\n    fn pi() -> f64 {\n        3.14\n    }\n}\n");
    repo_.write("src/shapes/render.rs",
                "use super::Circle;\n\nimpl Circle {\n    pub fn draw(&self) -> String {\n"
                "        format!(\"{}\", self.r)\n    }\n}\n\n"
                "pub trait Describe {\n    fn name(&self) -> String;\n"
                "    fn describe(&self) -> String {\n        self.name()\n    }\n}\n\n"
                "impl Describe for Circle {\n    fn name(&self) -> String {\n        String::new()\n    }\n}\n");
    repo_.write("src/app.rs",
                "use shapes::Circle;\nuse util::cube;\n\npub fn run() -> f64 {\n"
                "    let c = Circle::new(2.0);\n    cube(c.r) + crate::util::square(1.0) + super::app::helper()\n}\n\n"
                "fn helper() -> f64 {\n    1.0\n}\n");
    repo_.write("tests/it.rs", "use shop::Circle;\n\n#[test]\nfn works() {\n    Circle::new(1.0);\n}\n");
    IndexOptions o;
    o.db_path = tmp_.str() + "/i.db";
    o.progress = false;
    build_index(repo_.str(), o);
    eng_ = Engine::open(o.db_path);
    shapes_ = *eng_->view().file_by_path("src/shapes/mod.rs");
    app_ = *eng_->view().file_by_path("src/app.rs");
    for (size_t i = 0; i < eng_->view().entities().size(); ++i) {
      std::string n = eng_->target_name(static_cast<int>(i));
      if (n == "src/shapes/mod.rs::Circle.area") area_ = static_cast<int>(i);
      if (n == "src/app.rs::run") run_ = static_cast<int>(i);
    }
    ASSERT_GE(area_, 0);
    ASSERT_GE(run_, 0);
  }
  std::string resolve(int file, const std::string& chain, int scope) {
    Resolution r = eng_->graph().resolve(file, scope, chain);
    if (r.kind != Resolution::Kind::entity) return "";
    return eng_->target_name(r.entity);
  }
  std::set<std::string> referenced(int entity) {
    std::set<std::string> names;
    for (int e : eng_->graph().referenced_entities(entity)) names.insert(eng_->target_name(e));
    return names;
  }
  TempDir repo_, tmp_;
  std::unique_ptr<Engine> eng_;
  int shapes_ = -1, app_ = -1, area_ = -1, run_ = -1;
};

TEST_F(RustResolution, FilesAreNamedByTheirCratesModules) {
  EXPECT_EQ(eng_->view().files()[shapes_].module, "shop.shapes");
  EXPECT_EQ(eng_->view().files()[shapes_].language, Language::rust);
  EXPECT_EQ(eng_->view().files()[*eng_->view().file_by_path("tests/it.rs")].module, "shop.tests.it");
}

TEST_F(RustResolution, TheReceiverAndSelfReachTheTypesMembersInAnyModule) {
  EXPECT_EQ(resolve(shapes_, "self.r", area_), "src/shapes/mod.rs::Circle.r");
  EXPECT_EQ(resolve(shapes_, "self.draw", area_), "src/shapes/render.rs::Circle.draw");  // an impl elsewhere
  EXPECT_EQ(resolve(shapes_, "Circle.pi", area_), "src/shapes/mod.rs::Circle.pi");
  EXPECT_EQ(resolve(shapes_, "util.square", area_), "src/util.rs::square");
  EXPECT_EQ(referenced(area_),  // `Self::pi()` names the type and its function
            (std::set<std::string>{"src/shapes/mod.rs::Circle", "src/shapes/mod.rs::Circle.r",
                                   "src/shapes/render.rs::Circle.draw", "src/shapes/mod.rs::Circle.pi",
                                   "src/util.rs::square"}));
}

// `impl Describe for Circle` makes the trait's provided methods Circle's; its own implementation comes first.
TEST_F(RustResolution, ATraitImplementedForATypeLendsItsProvidedMethods) {
  EXPECT_EQ(resolve(shapes_, "self.describe", area_), "src/shapes/render.rs::Describe.describe");
  EXPECT_EQ(resolve(shapes_, "self.name", area_), "src/shapes/render.rs::Circle.name");
  EXPECT_EQ(resolve(shapes_, "Circle.describe", -1), "src/shapes/render.rs::Describe.describe");
}

TEST_F(RustResolution, PathsThroughUseCrateAndSuper) {
  // `use shapes::Circle` and `use util::cube` in app.rs: Rust 2015's crate-relative paths.
  EXPECT_EQ(resolve(app_, "Circle.new", run_), "src/shapes/mod.rs::Circle.new");
  EXPECT_EQ(resolve(app_, "cube", run_), "src/util.rs::cube");
  EXPECT_EQ(resolve(app_, "crate.util.square", run_), "src/util.rs::square");
  EXPECT_EQ(resolve(app_, "super.app.helper", run_), "src/app.rs::helper");
  EXPECT_EQ(resolve(app_, "std.mem.swap", run_), "");
  EXPECT_EQ(referenced(run_),
            (std::set<std::string>{"src/shapes/mod.rs::Circle", "src/shapes/mod.rs::Circle.new", "src/util.rs::cube",
                                   "src/util.rs::square", "src/app.rs::helper"}));
  // An integration test names the crate: `use shop::Circle` reaches the type through lib.rs's `pub use`.
  int it = *eng_->view().file_by_path("tests/it.rs");
  EXPECT_EQ(resolve(it, "Circle.new", -1), "src/shapes/mod.rs::Circle.new");
  EXPECT_EQ(resolve(it, "shop.Circle", -1), "src/shapes/mod.rs::Circle");
}

TEST_F(RustResolution, AUseLoadsTheModuleItNames) {
  std::set<std::string> paths;
  for (int f : eng_->graph().imported_files(app_)) paths.insert(eng_->view().files()[f].path);
  EXPECT_EQ(paths, (std::set<std::string>{"src/shapes/mod.rs", "src/util.rs"}));
}

TEST_F(RustResolution, DependencySnippetsListTheImportedTypesAndSignatures) {
  std::map<std::string, std::string> by_label;
  for (const auto& d : dependency_snippets(*eng_, app_)) by_label[d.label] = d.text;
  ASSERT_TRUE(by_label.count("class shop.shapes.Circle")) << by_label.size();
  EXPECT_NE(by_label["class shop.shapes.Circle"].find("pub fn area(&self) -> f64"), std::string::npos)
      << by_label["class shop.shapes.Circle"];
  EXPECT_EQ(by_label["functions"], "pub fn cube(x: f64) -> f64\n");
}

}  // namespace
