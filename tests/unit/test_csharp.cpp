// C#: extraction over tree-sitter-c-sharp (the namespace as the file's module, using directives, types and
// their members with lines, attributes and XML doc comments, operators, properties, indexers, local functions,
// references) and resolution across files: a namespace's own types, a using directive's namespace, an alias,
// `using static`, the enclosing namespaces, `this.` and bare members, and members of another part of a
// partial class.
#include <gtest/gtest.h>

#include <set>

#include "helpers.h"
#include "indexed_repo.h"
#include "repo/parser.h"
#include "retrieve/aligncoder_snippets.h"
#include "retrieve/engine.h"

using namespace repoctx;
using repoctx::testing::chains_in;
using repoctx::testing::find_entity;
using repoctx::testing::IndexedRepo;
using repoctx::testing::TempDir;

namespace {

const char* kShapesCs = R"(using System;
using static System.Math;
using Geo = Acme.Geometry;

namespace Acme.Shapes
{
    /// <summary>A shape.</summary>
    /// <remarks>Abstract.</remarks>
    [Serializable]
    public abstract partial class Shape<T> : Base, IComparable<Shape<T>>
    {
        private int sides = 0, corners;
        public string Name { get; set; }
        public int this[int i] => sides + i;
        public event EventHandler Changed;

        protected Shape(int sides) : base(sides) { this.sides = sides; }
        ~Shape() { }

        public static Shape<T> operator +(Shape<T> a, Shape<T> b) => a;
        public static implicit operator int(Shape<T> s) => s.sides;

        public double Scaled(double k, params int[] rest)
        {
            double Twice(double x) => x * 2;
            Log.Write(Name.Trim());
            return Twice(k) * Abs(sides) * new Geo.Unit(1).Value;
        }

        public enum Kind { Round, Angular = 2 }
        public delegate void Handler(int code);
    }
}
)";

TEST(CsharpParser, NamespaceTypesMembersAndLines) {
  SourceParser p;
  ParsedFile pf = p.parse("Shapes/Shape.cs", "Shapes.Shape", kShapesCs, Language::csharp);
  EXPECT_TRUE(pf.errors.empty()) << pf.errors[0].message << " at " << pf.errors[0].start_line;
  EXPECT_EQ(pf.module, "Acme.Shapes");  // the namespace, not the path
  const Entity* shape = find_entity(pf, "Shape");
  ASSERT_NE(shape, nullptr);
  EXPECT_EQ(shape->kind, EntityKind::klass);
  EXPECT_EQ(shape->decorated_start_line, 9);  // the attribute
  EXPECT_EQ(shape->start_line, 10);
  EXPECT_EQ(shape->end_line, 32);
  EXPECT_EQ(shape->docstring, "<summary>A shape.</summary>\n<remarks>Abstract.</remarks>");
  EXPECT_EQ(shape->decorators, (std::vector<std::string>{"[Serializable]"}));
  EXPECT_EQ(shape->bases, (std::vector<std::string>{"Base", "IComparable"}));
  EXPECT_EQ(shape->signature, "public abstract partial class Shape<T> : Base, IComparable<Shape<T>>");
  for (const char* f : {"Shape.sides", "Shape.corners", "Shape.Name", "Shape.this", "Shape.Changed"}) {
    const Entity* e = find_entity(pf, f, EntityKind::field);
    ASSERT_NE(e, nullptr) << f;
    EXPECT_EQ(e->parent, 0) << f;
  }
  EXPECT_EQ(find_entity(pf, "Shape.sides")->signature, "private int sides = 0, corners;");
  ASSERT_NE(find_entity(pf, "Shape.Shape", EntityKind::constructor), nullptr);
  EXPECT_EQ(find_entity(pf, "Shape.Shape", EntityKind::constructor)->params[0].name, "sides");
  EXPECT_NE(find_entity(pf, "Shape.~Shape", EntityKind::method), nullptr);
  EXPECT_NE(find_entity(pf, "Shape.operator +", EntityKind::method), nullptr);
  EXPECT_NE(find_entity(pf, "Shape.operator int", EntityKind::method), nullptr);
  const Entity* scaled = find_entity(pf, "Shape.Scaled", EntityKind::method);
  ASSERT_NE(scaled, nullptr);
  EXPECT_EQ(scaled->start_line, 23);
  EXPECT_EQ(scaled->end_line, 28);
  EXPECT_EQ(scaled->body_start_line, 25);
  ASSERT_EQ(scaled->params.size(), 2u);
  EXPECT_EQ(scaled->params[0].annotation, "double");
  EXPECT_EQ(scaled->params[1].name, "rest");
  EXPECT_EQ(scaled->params[1].kind, Parameter::var_positional);
  const Entity* twice = find_entity(pf, "Shape.Scaled.Twice", EntityKind::function);  // a local function
  ASSERT_NE(twice, nullptr);
  EXPECT_EQ(pf.entities[static_cast<size_t>(twice->parent)].qualname, "Shape.Scaled");
  EXPECT_EQ(chains_in(pf, "Shape.Scaled"),
            (std::set<std::string>{"Log.Write", "Name.Trim", "Twice", "Abs", "Geo.Unit"}));
  EXPECT_EQ(chains_in(pf, "Shape.Shape"), (std::set<std::string>{"this.sides"}));
  EXPECT_NE(find_entity(pf, "Shape.Kind", EntityKind::klass), nullptr);
  EXPECT_NE(find_entity(pf, "Shape.Kind.Angular", EntityKind::field), nullptr);
  EXPECT_NE(find_entity(pf, "Shape.Handler", EntityKind::klass), nullptr);
  ASSERT_EQ(pf.imports.size(), 3u);
  EXPECT_TRUE(pf.imports[0].star);  // using System;
  EXPECT_EQ(pf.imports[0].module, "System");
  EXPECT_TRUE(pf.imports[1].star);  // using static System.Math: the members of one type
  EXPECT_EQ(pf.imports[1].module, "System");
  EXPECT_EQ(pf.imports[1].name, "Math");
  EXPECT_FALSE(pf.imports[2].star);  // using Geo = Acme.Geometry;
  EXPECT_EQ(pf.imports[2].bound_name(), "Geo");
  EXPECT_EQ(pf.imports[2].module, "Acme");
  EXPECT_EQ(pf.imports[2].name, "Geometry");
}

TEST(CsharpParser, FileScopedNamespacesAndTypesOfAnotherNamespace) {
  SourceParser p;
  ParsedFile pf = p.parse("A.cs", "A", "namespace Acme.Core;\nclass A { void M() { } }\n", Language::csharp);
  EXPECT_EQ(pf.module, "Acme.Core");
  EXPECT_NE(find_entity(pf, "A.M", EntityKind::method), nullptr);
  // The first type names the module; a type of another namespace keeps its namespace in its name.
  pf = p.parse("B.cs", "B", "namespace X { class B { } }\nnamespace Y.Z { class C { } }\n", Language::csharp);
  EXPECT_EQ(pf.module, "X");
  EXPECT_NE(find_entity(pf, "B"), nullptr);
  EXPECT_NE(find_entity(pf, "Y.Z.C"), nullptr);
}

// Types nested past kMaxBlockNesting levels: indexed down to that depth, the file marked partial, no crash.
TEST(CsharpParser, NestingIsBounded) {
  std::string src = "namespace N {\n";
  for (int i = 0; i < kMaxBlockNesting + 20; ++i) src += "class C" + std::to_string(i) + " {\n";
  for (int i = 0; i < kMaxBlockNesting + 20; ++i) src += "}\n";
  src += "}\n";
  SourceParser p;
  ParsedFile pf = p.parse("Deep.cs", "Deep", src, Language::csharp);
  EXPECT_FALSE(pf.partial_reason().empty());
  EXPECT_GE(pf.entities.size(), static_cast<size_t>(kMaxBlockNesting) - 2);
  EXPECT_LE(pf.entities.size(), static_cast<size_t>(kMaxBlockNesting));
}

class CsharpResolution : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_.write("src/Geometry/Unit.cs",
                "namespace Acme.Geometry {\n  public class Unit {\n    public Unit(int n) { }\n"
                "    public double Value => 1.0;\n    public static Unit One() => new Unit(1);\n  }\n}\n");
    repo_.write("src/Common/Log.cs",
                "namespace Acme {\n  public static class Log {\n    public static void Write(string s) { }\n  }\n}\n");
    repo_.write("src/Shapes/Shape.cs",
                "using Acme.Geometry;\nusing static Acme.Geometry.Unit;\nusing U = Acme.Geometry.Unit;\n"
                "namespace Acme.Shapes {\n  public partial class Shape {\n    private int sides;\n"
                "    public double Area() {\n      Log.Write(\"a\");\n      var u = new Unit(2);\n"
                "      return this.Sides() * One().Value * Scale() + U.One().Value;\n    }\n  }\n}\n");
    repo_.write("src/Shapes/Shape.Sides.cs",
                "namespace Acme.Shapes {\n  public partial class Shape {\n    public int Sides() => sides;\n"
                "    public double Scale() => Circle.Pi;\n  }\n  class Circle { public const double Pi = 3.14; }\n}\n");
    idx_ = std::make_unique<IndexedRepo>(repo_.str());
    shape_ = idx_->file("src/Shapes/Shape.cs");
    sides_file_ = idx_->file("src/Shapes/Shape.Sides.cs");
    area_ = idx_->entity("src/Shapes/Shape.cs::Shape.Area");
    scale_ = idx_->entity("src/Shapes/Shape.Sides.cs::Shape.Scale");
    sides_fn_ = idx_->entity("src/Shapes/Shape.Sides.cs::Shape.Sides");
    ASSERT_GE(area_, 0);
    ASSERT_GE(scale_, 0);
    ASSERT_GE(sides_fn_, 0);
  }
  std::string resolve(int file, const std::string& chain, int scope) { return idx_->resolve(file, chain, scope); }
  TempDir repo_;
  std::unique_ptr<IndexedRepo> idx_;
  int shape_ = -1, sides_file_ = -1, area_ = -1, scale_ = -1, sides_fn_ = -1;
};

TEST_F(CsharpResolution, NamespacesUsingsMembersAndPartialTypes) {
  EXPECT_EQ(idx_->engine->view().files()[static_cast<size_t>(shape_)].module, "Acme.Shapes");
  EXPECT_EQ(resolve(shape_, "Log.Write", area_), "src/Common/Log.cs::Log.Write");  // an enclosing namespace's type
  EXPECT_EQ(resolve(shape_, "Unit", area_), "src/Geometry/Unit.cs::Unit");         // through `using Acme.Geometry;`
  EXPECT_EQ(resolve(shape_, "One", area_), "src/Geometry/Unit.cs::Unit.One");      // through `using static`
  EXPECT_EQ(resolve(shape_, "U.One", area_), "src/Geometry/Unit.cs::Unit.One");    // through an alias
  // `this.Sides()` and a bare `Scale()`: members the other part of the partial class declares.
  EXPECT_EQ(resolve(shape_, "this.Sides", area_), "src/Shapes/Shape.Sides.cs::Shape.Sides");
  EXPECT_EQ(resolve(shape_, "Scale", area_), "src/Shapes/Shape.Sides.cs::Shape.Scale");
  EXPECT_EQ(resolve(sides_file_, "sides", sides_fn_), "src/Shapes/Shape.cs::Shape.sides");
  EXPECT_EQ(resolve(sides_file_, "Circle.Pi", scale_), "src/Shapes/Shape.Sides.cs::Circle.Pi");
  EXPECT_EQ(resolve(shape_, "Circle", area_), "src/Shapes/Shape.Sides.cs::Circle");  // the namespace's own type
  EXPECT_EQ(resolve(shape_, "Console.WriteLine", area_), "");  // the framework's, not the repository's
  // A using directive loads every file of its namespace; `using static` the file of its type.
  std::vector<int> loaded = idx_->engine->graph().imported_files(shape_);
  std::set<std::string> paths;
  for (int f : loaded) paths.insert(idx_->engine->view().files()[static_cast<size_t>(f)].path);
  EXPECT_EQ(paths, (std::set<std::string>{"src/Geometry/Unit.cs"}));
  // AlignCoder's dependency snippets: the other files' types the file names.
  std::set<std::string> labels;
  for (const auto& s : dependency_snippets(*idx_->engine, shape_, nullptr, 0)) labels.insert(s.label);
  EXPECT_TRUE(labels.count("class Acme.Geometry.Unit")) << labels.size();
  EXPECT_TRUE(labels.count("class Acme.Log")) << labels.size();
}

}  // namespace
