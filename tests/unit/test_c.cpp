// C: extraction over tree-sitter-c (functions, macros, tagged types and typedefs, members, enumerators,
// file-scope variables, definitions inside #if branches, macro-written function headers), #include lookup,
// and resolution across files (a header's types and macros, another file's external function, a static
// definition kept to its own file, the nearest of several definitions).
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "helpers.h"
#include "index/index.h"
#include "repo/c/includes.h"
#include "repo/parser.h"
#include "retrieve/aligncoder_snippets.h"
#include "retrieve/engine.h"

using namespace repoctx;
using repoctx::testing::chains_in;
using repoctx::testing::find_entity;
using repoctx::testing::TempDir;

namespace {

const char* kListC = R"(#include <stdio.h>
#include "list.h"
#define LIMIT 10
#define SQUARE(x) \
	((x) * (x))

/* Adds a node.
 * Returns the new length. */
static int
list_add(struct list *l, struct node *n)
{
	int count = l->len + 1;
	n->next = l->head;
	l->head = n;
	return SQUARE(count) + LIMIT + helper(count) + global_total;
}

struct node {
	int value;
	struct node *next;
	union {
		int tag;
		long wide;
	};
	struct meta { int owner; } meta;
};

typedef struct {
	int x, y;
} point_t;
typedef int (*visit_fn)(struct node *);

enum color { RED, GREEN = 2,
	BLUE };

int global_total = 0, *global_ptr;
extern int elsewhere;
int prototype_only(int);

#ifdef CONFIG_FAST
int speed(void) { return 1; }
#else
static inline int speed(void) { return 0; }
#endif

SYSCALL_DEFINE1(reset, int, how)
{
	return list_add(0, 0);
}
)";

}  // namespace

TEST(CParser, DefinitionsMembersAndLines) {
  SourceParser p;
  ParsedFile pf = p.parse("list.c", "list.c", kListC, Language::c);
  ASSERT_EQ(pf.errors.size(), 1u);  // only the macro-written header reads as a syntax error
  EXPECT_EQ(pf.errors[0].start_line, 46);
  const Entity* add = find_entity(pf, "list_add", EntityKind::function);
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->start_line, 10);           // the name's line (ctags' line)
  EXPECT_EQ(add->decorated_start_line, 7);  // the comment and `static int` above it
  EXPECT_EQ(add->end_line, 16);
  EXPECT_EQ(add->header_end_line, 11);
  EXPECT_EQ(add->body_start_line, 12);
  EXPECT_EQ(add->docstring, "Adds a node.\nReturns the new length.");
  EXPECT_EQ(add->decorators, std::vector<std::string>{"static"});
  ASSERT_EQ(add->params.size(), 2u);
  EXPECT_EQ(add->params[1].name, "n");
  EXPECT_EQ(add->params[1].annotation, "struct node");

  const Entity* sq = find_entity(pf, "SQUARE", EntityKind::function);
  ASSERT_NE(sq, nullptr);
  EXPECT_EQ(sq->start_line, 4);
  EXPECT_EQ(sq->end_line, 5);  // the continuation line
  ASSERT_EQ(sq->params.size(), 1u);
  EXPECT_NE(find_entity(pf, "LIMIT", EntityKind::variable), nullptr);

  const Entity* node = find_entity(pf, "node", EntityKind::klass);
  ASSERT_NE(node, nullptr);
  EXPECT_EQ(node->start_line, 18);
  EXPECT_EQ(node->end_line, 26);
  for (const char* f : {"node.value", "node.next", "node.tag", "node.wide", "node.meta"})
    EXPECT_NE(find_entity(pf, f, EntityKind::field), nullptr) << f;  // an untagged union lends its members
  EXPECT_NE(find_entity(pf, "meta", EntityKind::klass), nullptr);    // a tag inside a struct is file-scope
  EXPECT_NE(find_entity(pf, "meta.owner", EntityKind::field), nullptr);

  const Entity* point = find_entity(pf, "point_t", EntityKind::klass);  // an untagged struct, named by its typedef
  ASSERT_NE(point, nullptr);
  EXPECT_EQ(point->start_line, 28);
  EXPECT_EQ(point->end_line, 30);
  EXPECT_NE(find_entity(pf, "point_t.y", EntityKind::field), nullptr);
  EXPECT_NE(find_entity(pf, "visit_fn", EntityKind::klass), nullptr);
  EXPECT_NE(find_entity(pf, "color", EntityKind::klass), nullptr);
  const Entity* blue = find_entity(pf, "BLUE", EntityKind::variable);  // enumerators are file-scope names
  ASSERT_NE(blue, nullptr);
  EXPECT_EQ(blue->start_line, 34);

  EXPECT_NE(find_entity(pf, "global_total", EntityKind::variable), nullptr);
  EXPECT_NE(find_entity(pf, "global_ptr", EntityKind::variable), nullptr);
  EXPECT_EQ(find_entity(pf, "elsewhere", EntityKind::variable), nullptr);       // a declaration, not a definition
  EXPECT_EQ(find_entity(pf, "prototype_only", EntityKind::function), nullptr);  // a .c file's prototype
  ParsedFile header = p.parse("list.h", "list.h", "/* Sums. */\nint sum(const int *v, int n);\n", Language::c);
  const Entity* sum = find_entity(header, "sum", EntityKind::function);  // a header's prototype: its signature
  ASSERT_NE(sum, nullptr);
  EXPECT_EQ(sum->decorators, std::vector<std::string>{"declaration"});
  EXPECT_EQ(sum->docstring, "Sums.");
  EXPECT_EQ(sum->params.size(), 2u);
  EXPECT_TRUE(header.references.empty());  // parameter names are not references
  int speeds = 0;
  for (const auto& e : pf.entities) speeds += e.qualname == "speed";
  EXPECT_EQ(speeds, 2);                                                          // both branches of the #ifdef
  const Entity* sys = find_entity(pf, "SYSCALL_DEFINE1", EntityKind::function);  // a macro-written header
  ASSERT_NE(sys, nullptr);
  EXPECT_EQ(sys->start_line, 46);
  EXPECT_EQ(sys->end_line, 49);
}

// Macros tree-sitter cannot know: an unknown specifier before a function, a variable a macro declares, and an
// error region whose items are still definitions.
TEST(CParser, UnknownMacrosKeepTheDefinitionsAround) {
  const char* src =
      "asmlinkage void noinstr enter(void)\n{\n}\n\n"
      "static DEFINE_MUTEX(big_lock);\n\n"
      "DEFINE_PER_CPU(struct tracking, tracking) = {\n#ifdef X\n\t.a = 1,\n#endif\n\t.b = INIT(2),\n};\n"
      "EXPORT_SYMBOL_GPL(tracking);\n\n"
      "#ifdef CONFIG_Y\n#define TPS(x) trace(x)\nstatic int after(void)\n{\n\treturn 1;\n}\n#endif\n"
      "int last(void)\n{\n\treturn after();\n}\n";
  SourceParser p;
  ParsedFile pf = p.parse("t.c", "t.c", src, Language::c);
  std::set<std::string> names;
  for (const auto& e : pf.entities) names.insert(e.qualname);
  EXPECT_TRUE(names.count("enter"));
  EXPECT_FALSE(names.count("void"));  // `asmlinkage void` is the function's specifiers, not a variable
  EXPECT_TRUE(names.count("big_lock"));
  EXPECT_TRUE(names.count("TPS"));
  EXPECT_TRUE(names.count("after"));
  const Entity* last = find_entity(pf, "last", EntityKind::function);
  ASSERT_NE(last, nullptr);
  EXPECT_EQ(last->start_line, 22);
  EXPECT_FALSE(pf.errors.empty());
}

TEST(CParser, IncludesAndReferencesWithoutLocals) {
  SourceParser p;
  ParsedFile pf = p.parse("list.c", "list.c", kListC, Language::c);
  ASSERT_EQ(pf.imports.size(), 2u);
  EXPECT_EQ(pf.imports[0].module, "stdio.h");
  EXPECT_EQ(pf.imports[0].level, 0);
  EXPECT_EQ(pf.imports[1].module, "list.h");
  EXPECT_EQ(pf.imports[1].level, 1);  // quoted: the includer's folder first
  EXPECT_TRUE(pf.imports[1].star);
  std::set<std::string> refs = chains_in(pf, "list_add");
  for (const char* want : {"SQUARE", "LIMIT", "helper", "global_total", "list", "node"})
    EXPECT_TRUE(refs.count(want)) << want;
  for (const char* local : {"count", "l", "n", "l.head", "n.next"}) EXPECT_FALSE(refs.count(local)) << local;
  EXPECT_TRUE(chains_in(pf, "SYSCALL_DEFINE1").count("list_add"));
}

TEST(CIncludes, QuotedBesideTheIncluderThenBySuffixNearestFirst) {
  std::vector<std::string> paths = {
      "include/linux/list.h",      "drivers/net/list.h", "drivers/net/eth.c", "arch/x86/include/asm/io.h",
      "arch/arm/include/asm/io.h", "lib/util.h",         "README.md"};
  IncludeResolver r(paths);
  EXPECT_EQ(r.resolve("drivers/net/eth.c", "list.h", true), 1);           // beside the includer
  EXPECT_EQ(r.resolve("drivers/net/eth.c", "linux/list.h", false), 0);    // an include directory's header
  EXPECT_EQ(r.resolve("arch/arm/kernel/setup.c", "asm/io.h", false), 4);  // the nearest of two
  EXPECT_EQ(r.resolve("drivers/net/eth.c", "../../lib/util.h", true), 5);
  EXPECT_EQ(r.resolve("drivers/net/eth.c", "stdio.h", false), -1);  // outside the repository
  EXPECT_EQ(r.resolve("x.c", "README.md", true), -1);               // not a C file
  EXPECT_EQ(normalize_relative("a/b/../c/./d.h"), "a/c/d.h");
  EXPECT_EQ(normalize_relative("../x.h"), "");
}

// A library of four files: a header with a struct and a macro, two definitions of one function (the nearer
// wins), a static helper another file must not reach.
class CResolution : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_.write("include/shop/cart.h",
                "#define CART_MAX 8\nstruct cart {\n\tint items;\n};\nint cart_total(struct cart *c);\n");
    repo_.write("src/cart.c",
                "#include <shop/cart.h>\n\nstatic int clamp(int v)\n{\n\treturn v > CART_MAX ? CART_MAX : v;\n}\n\n"
                "int cart_total(struct cart *c)\n{\n\treturn clamp(c->items);\n}\n");
    repo_.write("src/app.c",
                "#include <shop/cart.h>\n\nint run(void)\n{\n\tstruct cart c = { 0 };\n"
                "\treturn cart_total(&c) + clamp(1) + CART_MAX + log_line();\n}\n");
    repo_.write("src/log.c", "int log_line(void)\n{\n\treturn 0;\n}\n");
    repo_.write("tools/log.c", "int log_line(void)\n{\n\treturn 1;\n}\n");
    IndexOptions o;
    o.db_path = tmp_.str() + "/i.db";
    o.progress = false;
    build_index(repo_.str(), o);
    eng_ = Engine::open(o.db_path);
    app_ = *eng_->view().file_by_path("src/app.c");
    for (size_t i = 0; i < eng_->view().entities().size(); ++i)
      if (eng_->target_name(static_cast<int>(i)) == "src/app.c::run") run_ = static_cast<int>(i);
    ASSERT_GE(run_, 0);
  }
  std::string resolve(int file, const std::string& chain, int scope) {
    Resolution r = eng_->graph().resolve(file, scope, chain);
    if (r.kind != Resolution::Kind::entity) return "";
    return eng_->target_name(r.entity);
  }
  TempDir repo_, tmp_;
  std::unique_ptr<Engine> eng_;
  int app_ = -1, run_ = -1;
};

TEST_F(CResolution, NamesResolveAcrossFilesAsTheLinkerAndHeadersDo) {
  EXPECT_EQ(eng_->view().files()[app_].language, Language::c);
  EXPECT_EQ(eng_->view().files()[app_].module, "src/app.c");
  EXPECT_EQ(resolve(app_, "cart", run_), "include/shop/cart.h::cart");              // a header's struct tag
  EXPECT_EQ(resolve(app_, "CART_MAX", run_), "include/shop/cart.h::CART_MAX");      // a header's macro
  EXPECT_EQ(resolve(app_, "cart_total", run_), "include/shop/cart.h::cart_total");  // its included prototype
  EXPECT_EQ(resolve(app_, "clamp", run_), "");                                      // static in another file
  EXPECT_EQ(resolve(app_, "log_line", run_), "src/log.c::log_line");                // the nearer of two
  std::set<std::string> refs;
  for (int e : eng_->graph().referenced_entities(run_)) refs.insert(eng_->target_name(e));
  EXPECT_EQ(refs, (std::set<std::string>{"include/shop/cart.h::cart", "include/shop/cart.h::cart_total",
                                         "include/shop/cart.h::CART_MAX", "src/log.c::log_line"}));
  // Where no included header declares it, the definition stands for the function.
  int cart = *eng_->view().file_by_path("src/cart.c");
  EXPECT_EQ(resolve(cart, "log_line", -1), "src/log.c::log_line");
  std::vector<int> inc = eng_->graph().imported_files(app_);
  ASSERT_EQ(inc.size(), 1u);
  EXPECT_EQ(eng_->view().files()[inc[0]].path, "include/shop/cart.h");
}

// AlignCoder's dependency snippets for C: the included header's struct (with its members) and prototype the
// file uses; log_line, defined in a .c file no header declares, is not an import.
TEST_F(CResolution, DependencySnippetsListTheIncludedTypesAndPrototypes) {
  std::map<std::string, std::string> by_label;
  for (const auto& d : dependency_snippets(*eng_, app_)) by_label[d.label] = d.text;
  ASSERT_TRUE(by_label.count("class include/shop/cart.h.cart")) << by_label.size();
  EXPECT_EQ(by_label["class include/shop/cart.h.cart"], "struct cart\n    int items;\n");
  EXPECT_EQ(by_label["functions"], "int cart_total(struct cart *c);\n");
}
