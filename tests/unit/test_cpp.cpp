// C++: extraction over tree-sitter-cpp by the C extractor (namespaces, classes with bases and members, member
// functions in and out of their class, constructors, templates, aliases, scoped enums, friend functions,
// export macros, function-pointer members), which .h headers read as C++, and resolution across files (an
// included header's class, `this->`, a member named bare inside a member function, a namespace-qualified
// call, an out-of-class definition reaching its class).
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <set>

#include "helpers.h"
#include "index/index.h"
#include "indexed_repo.h"
#include "repo/c/compile_commands.h"
#include "repo/c/includes.h"
#include "repo/parser.h"
#include "retrieve/engine.h"

using namespace repoctx;
using repoctx::testing::chains_in;
using repoctx::testing::find_entity;
using repoctx::testing::IndexedRepo;
using repoctx::testing::TempDir;

namespace {

const char* kShapeHpp = R"(#pragma once
#include <vector>

namespace geo {

/// A shape with an area.
class GEO_API Shape : public Base, private Counted<Shape> {
 public:
  explicit Shape(int sides);
  virtual double area() const = 0;
  int sides() const { return sides_; }
  enum class Kind { round, angular };
  void (*on_change)(Shape& s) = nullptr;
  friend bool operator==(const Shape& a, const Shape& b) { return a.sides_ == b.sides_; }

 private:
  int sides_ = 0;
};

template <typename T>
struct Box {
  T value;
  T get() const { return value; }
};

using ShapeList = std::vector<Shape*>;
GEO_API double total_area(const ShapeList& shapes);

}  // namespace geo
)";

TEST(CppParser, NamespacesClassesMembersAndLines) {
  SourceParser p;
  ParsedFile pf = p.parse("shape.hpp", "shape.hpp", kShapeHpp, Language::cpp);
  EXPECT_TRUE(pf.errors.empty()) << pf.errors[0].message << " at " << pf.errors[0].start_line;
  const Entity* shape = find_entity(pf, "geo.Shape");  // the export macro blanked: not a class named GEO_API
  ASSERT_NE(shape, nullptr);
  EXPECT_EQ(shape->kind, EntityKind::klass);
  EXPECT_EQ(shape->start_line, 7);
  EXPECT_EQ(shape->end_line, 18);
  EXPECT_EQ(shape->docstring, "A shape with an area.");
  EXPECT_EQ(shape->bases, (std::vector<std::string>{"Base", "Counted"}));
  ASSERT_NE(find_entity(pf, "geo.Shape.Shape"), nullptr);
  EXPECT_EQ(find_entity(pf, "geo.Shape.Shape")->kind, EntityKind::constructor);
  const Entity* sides = find_entity(pf, "geo.Shape.sides");
  ASSERT_NE(sides, nullptr);
  EXPECT_EQ(sides->kind, EntityKind::method);
  EXPECT_EQ(pf.entities[sides->parent].qualname, "geo.Shape");
  EXPECT_EQ(chains_in(pf, "geo.Shape.sides"), (std::set<std::string>{"sides_"}));
  const Entity* area = find_entity(pf, "geo.Shape.area");  // a declaration inside the class
  ASSERT_NE(area, nullptr);
  EXPECT_EQ(area->decorators, (std::vector<std::string>{"declaration"}));
  ASSERT_NE(find_entity(pf, "geo.Shape.Kind.angular"), nullptr);  // a scoped enum's enumerator
  ASSERT_NE(find_entity(pf, "geo.Shape.on_change"), nullptr);     // a pointer to a function is a member
  EXPECT_EQ(find_entity(pf, "geo.Shape.on_change")->kind, EntityKind::field);
  ASSERT_NE(find_entity(pf, "geo.operator=="), nullptr);  // a friend defined inside: the namespace's function
  EXPECT_EQ(find_entity(pf, "geo.Shape.sides_")->kind, EntityKind::field);
  const Entity* box = find_entity(pf, "geo.Box");
  ASSERT_NE(box, nullptr);
  EXPECT_EQ(box->start_line, 21);            // `struct`, as ctags counts
  EXPECT_EQ(box->decorated_start_line, 20);  // with its `template <...>` line
  ASSERT_NE(find_entity(pf, "geo.Box.get"), nullptr);
  ASSERT_NE(find_entity(pf, "geo.ShapeList"), nullptr);
  const Entity* total = find_entity(pf, "geo.total_area");
  ASSERT_NE(total, nullptr);
  EXPECT_EQ(total->kind, EntityKind::function);
  EXPECT_EQ(total->decorators, (std::vector<std::string>{"declaration"}));
}

TEST(CppParser, OutOfClassDefinitionsAndQualifiedReferences) {
  SourceParser p;
  ParsedFile pf = p.parse("shape.cpp", "shape.cpp",
                          "#include \"shape.hpp\"\nnamespace geo {\n"
                          "Shape::Shape(int n) : sides_(check(n)) {}\n"
                          "double Shape::scaled(double k) const {\n"
                          "  double local = k;\n  return this->area() * local + util::factor(sides()) + "
                          "std::max(1, 2);\n}\n}  // namespace geo\n",
                          Language::cpp);
  const Entity* ctor = find_entity(pf, "geo.Shape.Shape");
  ASSERT_NE(ctor, nullptr);
  EXPECT_EQ(ctor->kind, EntityKind::constructor);
  EXPECT_EQ(ctor->parent, -1);
  EXPECT_EQ(chains_in(pf, "geo.Shape.Shape"), (std::set<std::string>{"check", "sides_"}));
  const Entity* scaled = find_entity(pf, "geo.Shape.scaled");
  ASSERT_NE(scaled, nullptr);
  EXPECT_EQ(scaled->kind, EntityKind::method);
  EXPECT_EQ(chains_in(pf, "geo.Shape.scaled"),
            (std::set<std::string>{"this.area", "util.factor", "sides", "std.max"}));  // `local` is no reference
  ASSERT_EQ(pf.imports.size(), 1u);
  EXPECT_EQ(pf.imports[0].module, "shape.hpp");
}

TEST(CppHeaders, AHeaderIsCppByWhatItUses) {
  EXPECT_TRUE(looks_like_cpp("namespace a {\n}\n"));
  EXPECT_TRUE(looks_like_cpp("#include <vector>\nint f();\n"));
  EXPECT_TRUE(looks_like_cpp("struct s { std::string name; };\n"));
  EXPECT_TRUE(looks_like_cpp("template <typename T>\nT id(T x);\n"));
  EXPECT_FALSE(
      looks_like_cpp("#include <stdio.h>\n#ifdef __cplusplus\nextern \"C\" {\n#endif\nint f(void);\n"
                     "#ifdef __cplusplus\n}\n#endif\n"));
  EXPECT_FALSE(looks_like_cpp("struct list { struct list *next; };\n/* the class of lists */\n"));
  EXPECT_TRUE(is_c_header_path("a/b.hpp"));
  EXPECT_TRUE(is_c_header_path("a/b.h"));
  EXPECT_FALSE(is_c_header_path("a/b.cc"));
  EXPECT_EQ(language_from_path("x.cc"), Language::cpp);
  EXPECT_EQ(language_from_path("x.h"), Language::c);  // until its text says C++
  SourceParser p;
  EXPECT_EQ(p.parse("x.h", "x.h", "namespace n { class A {}; }\n", Language::c).language, Language::cpp);
  EXPECT_EQ(p.parse("y.h", "y.h", "struct s { int a; };\n", Language::c).language, Language::c);
}

// Classes in member functions of classes in functions: each level is defined once (not once per enclosing
// function's scan), what the inner members use is used by every enclosing function too, and past the nesting
// bound the file is partly indexed, not a crash.
TEST(CppParser, TypesNestedInFunctionsAreBoundedAndVisitedOnce) {
  std::string src = "namespace n {\n";
  for (int i = 0; i < 40; ++i) src += "struct A { void f() {\n";
  for (int i = 0; i < 40; ++i) src += "}};\n";
  src += "}\n";
  SourceParser p;
  ParsedFile pf = p.parse("deep.cc", "deep.cc", src, Language::cpp);
  EXPECT_EQ(pf.entities.size(), 80u);  // 40 classes and 40 member functions, each once
  EXPECT_TRUE(pf.partial_reason().empty());
  ParsedFile used =
      p.parse("use.cc", "use.cc", "void outer() {\n  struct L { int f() { return helper(); } };\n}\n", Language::cpp);
  EXPECT_EQ(chains_in(used, "outer"), (std::set<std::string>{"helper"}));
  EXPECT_EQ(chains_in(used, "outer.L.f"), (std::set<std::string>{"helper"}));
  std::string deeper = "namespace n {\n";
  for (int i = 0; i < 250; ++i) deeper += "struct A { void f() {\n";
  for (int i = 0; i < 250; ++i) deeper += "}};\n";
  deeper += "}\n";
  ParsedFile pd = p.parse("deep.cc", "deep.cc", deeper, Language::cpp);
  EXPECT_NE(pd.partial_reason().find("nested deeper than"), std::string::npos) << pd.partial_reason();
}

// A library: a header declaring a class, its out-of-class definitions, a free function in a namespace and a
// caller in another file.
class CppResolution : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_.write("include/geo/shape.h",
                "#pragma once\n#include <vector>\nnamespace geo {\nclass Shape {\n public:\n"
                "  int sides() const;\n  double scaled(double k) const;\n  static Shape make(int n);\n"
                " private:\n  int sides_ = 0;\n};\ndouble unit();\n}  // namespace geo\n");
    repo_.write("src/shape.cpp",
                "#include \"geo/shape.h\"\nnamespace geo {\nint Shape::sides() const { return sides_; }\n"
                "double Shape::scaled(double k) const { return this->sides() * k * unit(); }\n"
                "double unit() { return 1.0; }\n}  // namespace geo\n");
    repo_.write("src/main.cc",
                "#include <geo/shape.h>\nint main() {\n  geo::Shape s = geo::Shape::make(3);\n"
                "  return static_cast<int>(geo::unit());\n}\n");
    idx_ = std::make_unique<IndexedRepo>(repo_.str());
    shape_cpp_ = idx_->file("src/shape.cpp");
    main_ = idx_->file("src/main.cc");
    scaled_ = idx_->entity("src/shape.cpp::geo.Shape.scaled");
    sides_ = idx_->entity("src/shape.cpp::geo.Shape.sides");
    main_fn_ = idx_->entity("src/main.cc::main");
    ASSERT_GE(scaled_, 0);
    ASSERT_GE(sides_, 0);
    ASSERT_GE(main_fn_, 0);
  }
  std::string resolve(int file, const std::string& chain, int scope) { return idx_->resolve(file, chain, scope); }
  TempDir repo_;
  std::unique_ptr<IndexedRepo> idx_;
  int shape_cpp_ = -1, main_ = -1, scaled_ = -1, sides_ = -1, main_fn_ = -1;
};

TEST_F(CppResolution, MembersThisAndNamespacesResolveThroughTheHeader) {
  EXPECT_EQ(idx_->engine->view().files()[*idx_->engine->view().file_by_path("include/geo/shape.h")].language,
            Language::cpp);
  EXPECT_EQ(resolve(shape_cpp_, "this.sides", scaled_), "include/geo/shape.h::geo.Shape.sides");
  EXPECT_EQ(resolve(shape_cpp_, "sides_", sides_), "include/geo/shape.h::geo.Shape.sides_");  // a bare member
  EXPECT_EQ(resolve(shape_cpp_, "unit", scaled_), "src/shape.cpp::geo.unit");  // the file's own definition
  EXPECT_EQ(resolve(main_, "geo.Shape.make", main_fn_), "include/geo/shape.h::geo.Shape.make");
  EXPECT_EQ(resolve(main_, "geo.unit", main_fn_), "include/geo/shape.h::geo.unit");
  EXPECT_EQ(resolve(main_, "std.max", main_fn_), "");  // the standard library's, not the repository's
  std::vector<int> inc = idx_->engine->graph().imported_files(main_);
  ASSERT_EQ(inc.size(), 1u);
  EXPECT_EQ(idx_->engine->view().files()[inc[0]].path, "include/geo/shape.h");
}

// The build's compilation database decides between two headers of one name: `util.h` without it is the
// suffix rule's pick (a/util.h: the shorter, then first path), with it the folder the file's -I names; a header
// (not in the database) searches every folder it names; folders outside the repository are left out.
TEST(CppCompileCommands, IncludeFoldersOfTheBuildComeFirst) {
  TempDir repo, tmp;
  repo.write("a/util.h", "int util_a();\n");
  repo.write("b/util.h", "int util_b();\n");
  repo.write("src/x.cc", "#include \"util.h\"\nint x() { return util_b(); }\n");
  repo.write("src/y.cc", "#include <util.h>\nint y() { return 0; }\n");
  auto index_and_include_of = [&](const std::string& file) {
    IndexOptions o;
    o.db_path = tmp.str() + "/i.db";
    o.progress = false;
    build_index(repo.str(), o);
    auto eng = Engine::open(o.db_path);
    std::vector<int> inc = eng->graph().imported_files(*eng->view().file_by_path(file));
    return inc.size() == 1 ? eng->view().files()[inc[0]].path : std::string("(") + std::to_string(inc.size()) + ")";
  };
  EXPECT_EQ(index_and_include_of("src/x.cc"), "a/util.h");
  repo.write("build/compile_commands.json",
             "[{\"directory\": \"" + repo.str() +
                 "/build\", \"file\": \"../src/x.cc\",\n"
                 "  \"command\": \"c++ -I/usr/include/foo -I'../b' -DNAME=\\\"x y\\\" -c ../src/x.cc\"},\n"
                 " {\"directory\": \"" +
                 repo.str() +
                 "\", \"file\": \"src/y.cc\", \"arguments\": [\"cc\", \"-iquote\", "
                 "\"a\", \"-isystem\", \"b\", \"src/y.cc\"]}]\n");
  CompileIncludes ci = read_compile_commands(repo.str());
  EXPECT_EQ(ci.source, "build/compile_commands.json");
  EXPECT_EQ(ci.dirs, (std::vector<std::string>{"b", "a"}));  // /usr/include/foo: outside the repository
  EXPECT_EQ(ci.dirs_for("src/x.cc", true), (std::vector<std::string>{"b"}));
  EXPECT_EQ(ci.dirs_for("src/y.cc", false), (std::vector<std::string>{"b"}));  // -iquote: quoted includes only
  EXPECT_EQ(ci.dirs_for("src/y.cc", true), (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(ci.dirs_for("a/util.h", true), (std::vector<std::string>{"b", "a"}));
  EXPECT_EQ(CompileIncludes::from_json(ci.to_json()).to_json(), ci.to_json());
  EXPECT_EQ(index_and_include_of("src/x.cc"), "b/util.h");  // the database changed: the import re-resolves
  EXPECT_EQ(index_and_include_of("src/y.cc"), "b/util.h");
}

// A damaged database is not read (a warning), and includes resolve by the path rule as without one; a database
// whose stamp (size, modification time) is unchanged is not read again, a changed one is.
TEST(CppCompileCommands, ADamagedDatabaseFallsBackAndAnUnchangedOneIsNotReadAgain) {
  TempDir repo, tmp;
  repo.write("a/util.h", "int util_a();\n");
  repo.write("b/util.h", "int util_b();\n");
  repo.write("src/x.cc", "#include \"util.h\"\nint x() { return 0; }\n");
  auto include_of_x = [&] {
    IndexOptions o;
    o.db_path = tmp.str() + "/i.db";
    o.progress = false;
    build_index(repo.str(), o);
    auto eng = Engine::open(o.db_path);
    std::vector<int> inc = eng->graph().imported_files(*eng->view().file_by_path("src/x.cc"));
    return inc.size() == 1 ? eng->view().files()[inc[0]].path : std::string("(") + std::to_string(inc.size()) + ")";
  };
  repo.write("compile_commands.json", "[{\"file\": \"src/x.cc\", \"arguments\": [\"cc\", \"-Ib\"");
  EXPECT_TRUE(read_compile_commands(repo.str()).empty());
  EXPECT_EQ(include_of_x(), "a/util.h");  // the path rule
  std::string db = repo.str() + "/compile_commands.json";
  repo.write("compile_commands.json", R"([{"file": "src/x.cc", "arguments": ["cc", "-Ib", "src/x.cc"]}])");
  EXPECT_EQ(include_of_x(), "b/util.h");
  auto mtime = std::filesystem::last_write_time(db);
  std::string stamp = compile_commands_stamp(repo.str());
  // Same size, same modification time: taken as unchanged, so the stored folders stand.
  repo.write("compile_commands.json", R"([{"file": "src/x.cc", "arguments": ["cc", "-Ia", "src/x.cc"]}])");
  std::filesystem::last_write_time(db, mtime);
  EXPECT_EQ(compile_commands_stamp(repo.str()), stamp);
  EXPECT_EQ(include_of_x(), "b/util.h");
  std::filesystem::last_write_time(db, mtime + std::chrono::seconds(2));
  EXPECT_NE(compile_commands_stamp(repo.str()), stamp);
  EXPECT_EQ(include_of_x(), "a/util.h");  // read again
  EXPECT_EQ(compile_commands_stamp(tmp.str()), "");
}

TEST(CppCompileCommands, CommandsSplitAsShellWordsWithoutAShell) {
  EXPECT_EQ(split_command_line("c++  -I inc -DA=\"1 2\" 'x y' a\\ b \"q\\\"r\""),
            (std::vector<std::string>{"c++", "-I", "inc", "-DA=1 2", "x y", "a b", "q\"r"}));
  EXPECT_EQ(split_command_line(""), std::vector<std::string>{});
  EXPECT_EQ(split_command_line("cc 'unterminated"), (std::vector<std::string>{"cc", "unterminated"}));
}

}  // namespace
