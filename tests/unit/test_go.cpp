// Go: extraction over tree-sitter-go (definitions, receivers, imports, references without locals), import
// paths from go.mod, and resolution across a package's files and through imports (same-package names,
// `pkg.F`, receiver members, methods declared apart from their type, embedded types).
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <set>

#include "helpers.h"
#include "index/index.h"
#include "repo/go/packages.h"
#include "repo/parser.h"
#include "retrieve/aligncoder_snippets.h"
#include "retrieve/engine.h"

using namespace repoctx;
using repoctx::testing::chains_in;
using repoctx::testing::find_entity;
using repoctx::testing::TempDir;

namespace {

const char* kServerGo = R"(package server

import (
	"fmt"
	u "example.com/shop/internal/util"
	. "example.com/shop/dot"
	_ "example.com/shop/sideeffect"
	yaml "gopkg.in/yaml.v3"
	"example.com/shop/api/v2"
)

// Server serves
// requests.
type Server struct {
	Base
	*u.Logger
	name, addr string
	hits       int `json:"hits"`
}

type (
	Handler interface {
		Serve(x int) error
		fmt.Stringer
	}
	ID int
)

var (
	defaultName = "x"
	_           = 3
)

const Version = "1"

// Start starts.
func (s *Server) Start(port int) (err error) {
	s.handle(port)
	n := u.Clamp(port, 4)
	fmt.Println(n, defaultName, Version)
	cfg := Config{Name: defaultName}
	for i, v := range cfg.Items {
		_ = i + v
	}
	return nil
}

func (Server) handle(n int) {}

func New[T any](xs ...T) *Server { return &Server{} }
)";

TEST(GoParser, DefinitionsReceiversAndLines) {
  SourceParser p;
  ParsedFile pf = p.parse("server/server.go", "example.com/shop/server", kServerGo, Language::go);
  EXPECT_EQ(pf.package, "server");
  EXPECT_TRUE(pf.errors.empty()) << pf.errors[0].message;
  const Entity* server = find_entity(pf, "Server");
  ASSERT_NE(server, nullptr);
  EXPECT_EQ(server->kind, EntityKind::klass);
  EXPECT_EQ(server->start_line, 14);
  EXPECT_EQ(server->end_line, 19);
  EXPECT_EQ(server->docstring, "Server serves\nrequests.");
  EXPECT_EQ(server->bases, (std::vector<std::string>{"Base", "u.Logger"}));
  for (const char* f : {"Server.name", "Server.addr", "Server.hits"}) {
    const Entity* e = find_entity(pf, f);
    ASSERT_NE(e, nullptr) << f;
    EXPECT_EQ(e->kind, EntityKind::field);
    EXPECT_EQ(&pf.entities[static_cast<size_t>(e->parent)], server);
  }
  const Entity* handler = find_entity(pf, "Handler");
  ASSERT_NE(handler, nullptr);
  EXPECT_EQ(handler->kind, EntityKind::interface);
  EXPECT_EQ(handler->start_line, 22);  // a spec of a parenthesised group starts at its name
  EXPECT_EQ(handler->bases, (std::vector<std::string>{"fmt.Stringer"}));
  ASSERT_NE(find_entity(pf, "Handler.Serve"), nullptr);
  EXPECT_EQ(find_entity(pf, "Handler.Serve")->kind, EntityKind::method);
  ASSERT_NE(find_entity(pf, "ID"), nullptr);
  ASSERT_NE(find_entity(pf, "defaultName"), nullptr);
  EXPECT_EQ(find_entity(pf, "defaultName")->start_line, 30);
  EXPECT_EQ(find_entity(pf, "_"), nullptr);  // the blank identifier declares nothing
  const Entity* version = find_entity(pf, "Version");
  ASSERT_NE(version, nullptr);
  EXPECT_EQ(version->start_line, 34);  // a single spec starts at its keyword

  const Entity* start = find_entity(pf, "Server.Start");
  ASSERT_NE(start, nullptr);
  EXPECT_EQ(start->kind, EntityKind::method);
  EXPECT_EQ(start->parent, -1);
  EXPECT_EQ(start->start_line, 37);
  EXPECT_EQ(start->end_line, 46);
  EXPECT_EQ(start->header_end_line, 37);
  EXPECT_EQ(start->body_start_line, 38);
  EXPECT_EQ(start->docstring, "Start starts.");
  ASSERT_GE(start->params.size(), 2u);
  EXPECT_EQ(start->params[0].name, "s");  // the receiver comes first
  EXPECT_EQ(start->params[0].annotation, "*Server");
  EXPECT_EQ(start->params[1].name, "port");
  EXPECT_EQ(start->signature, "func (s *Server) Start(port int) (err error)");
  ASSERT_NE(find_entity(pf, "Server.handle"), nullptr);
  const Entity* generic = find_entity(pf, "New");
  ASSERT_NE(generic, nullptr);
  EXPECT_EQ(generic->kind, EntityKind::function);
  ASSERT_EQ(generic->params.size(), 1u);
  EXPECT_EQ(generic->params[0].kind, Parameter::var_positional);
}

TEST(GoParser, ImportsBindThePackageName) {
  SourceParser p;
  ParsedFile pf = p.parse("server/server.go", "example.com/shop/server", kServerGo, Language::go);
  ASSERT_EQ(pf.imports.size(), 6u);
  EXPECT_EQ(pf.imports[0].module, "fmt");
  EXPECT_EQ(pf.imports[0].bound_name(), "fmt");
  EXPECT_EQ(pf.imports[1].module, "example.com/shop/internal/util");
  EXPECT_EQ(pf.imports[1].bound_name(), "u");
  EXPECT_TRUE(pf.imports[2].star);
  EXPECT_EQ(pf.imports[3].bound_name(), "_");
  EXPECT_EQ(pf.imports[4].bound_name(), "yaml");
  EXPECT_EQ(pf.imports[5].bound_name(), "api");  // "/v2" is a major version, not the package's name
}

TEST(GoParser, ReferencesSkipLocalsAndKeepTheReceiver) {
  SourceParser p;
  ParsedFile pf = p.parse("server/server.go", "example.com/shop/server", kServerGo, Language::go);
  int start = -1;
  for (size_t i = 0; i < pf.entities.size(); ++i)
    if (pf.entities[i].qualname == "Server.Start") start = static_cast<int>(i);
  std::set<std::string> refs = chains_in(pf, start);
  for (const char* want : {"s.handle", "u.Clamp", "fmt.Println", "defaultName", "Version", "Config"})
    EXPECT_TRUE(refs.count(want)) << want;
  // Parameters, named results, := and range variables are locals; predeclared names name nothing; a
  // composite literal's keys are fields.
  for (const char* local : {"port", "n", "cfg", "cfg.Items", "i", "v", "err", "nil", "int", "error", "Name"})
    EXPECT_FALSE(refs.count(local)) << local;
  // Field types of a struct are the type's references.
  int server = -1;
  for (size_t i = 0; i < pf.entities.size(); ++i)
    if (pf.entities[i].qualname == "Server") server = static_cast<int>(i);
  std::set<std::string> type_refs = chains_in(pf, server);
  EXPECT_TRUE(type_refs.count("Base"));
  EXPECT_TRUE(type_refs.count("u.Logger"));
}

TEST(GoPackages, ImportPathsFromGoModGopathOrTheRoot) {
  TempDir root;
  root.write("go.mod", "// the shop\nmodule example.com/shop // trailing\n\ngo 1.19\n");
  root.write("main.go", "package main\n");
  root.write("internal/util/util.go", "package util\n");
  root.write("tools/go.mod", "module \"example.com/tools\"\n");
  root.write("tools/gen/gen.go", "package gen\n");
  auto paths =
      go_package_paths({"main.go", "internal/util/util.go", "tools/gen/gen.go", "README.py"}, root.str(), "shop");
  EXPECT_EQ(paths["main.go"], "example.com/shop");
  EXPECT_EQ(paths["internal/util/util.go"], "example.com/shop/internal/util");
  EXPECT_EQ(paths["tools/gen/gen.go"], "example.com/tools/gen");  // the nearest go.mod wins
  EXPECT_FALSE(paths.count("README.py"));

  TempDir std_tree;  // Go's own tree: `module std`, packages named by their folders
  std_tree.write("go.mod", "module std\n");
  std_tree.write("net/http/server.go", "package http\n");
  EXPECT_EQ(go_package_paths({"net/http/server.go"}, std_tree.str(), "src")["net/http/server.go"], "net/http");

  TempDir gopath;  // no go.mod: the path below the last src/ folder
  gopath.write("src/github.com/acme/lib/lib.go", "package lib\n");
  EXPECT_EQ(go_package_paths({"lib.go"}, gopath.str() + "/src/github.com/acme/lib", "lib")["lib.go"],
            "github.com/acme/lib");
  TempDir linked;  // a go.mod linking outside the repository is not read
  TempDir outside;
  outside.write("go.mod", "module evil.example/outside\n");
  linked.write("a/b.go", "package a\n");
  std::filesystem::create_symlink(outside.str() + "/go.mod", linked.str() + "/go.mod");
  EXPECT_EQ(go_package_paths({"a/b.go"}, linked.str(), "proj")["a/b.go"], "proj/a");
  TempDir bare;  // nothing at all: the root's name
  bare.write("a/b.go", "package a\n");
  EXPECT_EQ(go_package_paths({"a/b.go"}, bare.str(), "proj")["a/b.go"], "proj/a");
}

// A module of three packages: the server's files share one scope, a method is declared in another file
// than its type, and util is imported under an alias.
class GoResolution : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_.write("go.mod", "module example.com/shop\n\ngo 1.19\n");
    repo_.write("internal/util/util.go",
                "package util\n\n"
                "// Clamp clamps.\n"
                "func Clamp(a, b int) int {\n\tif a > b {\n\t\treturn b\n\t}\n\treturn a\n}\n\n"
                "type Logger struct{ prefix string }\n\n"
                "func (l *Logger) Logf(format string) {}\n");
    repo_.write("server/base.go",
                "package server\n\n"
                "type Base struct{ id int }\n\n"
                "func (b *Base) ID() int { return b.id }\n");
    repo_.write("server/server.go",
                "package server\n\n"
                "import (\n\t\"fmt\"\n\tu \"example.com/shop/internal/util\"\n)\n\n"
                "type Server struct {\n\tBase\n\tlog  *u.Logger\n\tname string\n}\n\n"
                "func (s *Server) Start(port int) error {\n"
                "\tn := u.Clamp(port, 4)\n\ts.handle(n)\n\tfmt.Println(s.name, s.ID(), newConfig())\n"
                "\treturn nil\n}\n");
    repo_.write("server/handle.go",
                "package server\n\n"
                "func (s *Server) handle(n int) {}\n\n"
                "func newConfig() int { return 1 }\n");
    IndexOptions o;
    o.db_path = tmp_.str() + "/i.db";
    o.progress = false;
    build_index(repo_.str(), o);
    eng_ = Engine::open(o.db_path);
    server_file_ = *eng_->view().file_by_path("server/server.go");
    for (size_t i = 0; i < eng_->view().entities().size(); ++i)
      if (eng_->target_name(static_cast<int>(i)) == "server/server.go::Server.Start") start_ = static_cast<int>(i);
    ASSERT_GE(start_, 0);
  }
  std::string resolve(const std::string& chain, int scope) {
    Resolution r = eng_->graph().resolve(server_file_, scope, chain);
    if (r.kind != Resolution::Kind::entity) return "";
    return eng_->target_name(r.entity);
  }
  TempDir repo_, tmp_;
  std::unique_ptr<Engine> eng_;
  int server_file_ = -1, start_ = -1;
};

TEST_F(GoResolution, FilesAreNamedByTheirPackagesImportPath) {
  EXPECT_EQ(eng_->view().files()[server_file_].module, "example.com/shop/server");
  EXPECT_EQ(eng_->view().files()[server_file_].language, Language::go);
}

TEST_F(GoResolution, ImportedPackagesAndTheSamePackagesFilesResolve) {
  EXPECT_EQ(resolve("u.Clamp", start_), "internal/util/util.go::Clamp");
  EXPECT_EQ(resolve("u.Logger", start_), "internal/util/util.go::Logger");
  EXPECT_EQ(resolve("newConfig", start_), "server/handle.go::newConfig");  // another file, same package
  EXPECT_EQ(resolve("Base", -1), "server/base.go::Base");
  EXPECT_EQ(resolve("fmt.Println", start_), "");  // outside the repository
  EXPECT_EQ(resolve("Missing", start_), "");
  // A method is a member of its type, not a package-level name.
  EXPECT_EQ(resolve("handle", start_), "");
}

TEST_F(GoResolution, TheReceiverReachesMethodsFieldsAndEmbeddedTypes) {
  EXPECT_EQ(resolve("s.handle", start_), "server/handle.go::Server.handle");  // declared in another file
  EXPECT_EQ(resolve("s.name", start_), "server/server.go::Server.name");
  EXPECT_EQ(resolve("s.ID", start_), "server/base.go::Base.ID");  // promoted from the embedded Base
  EXPECT_EQ(resolve("Server.handle", -1), "server/handle.go::Server.handle");
}

TEST_F(GoResolution, ABodyReferencesWhatItCallsAcrossPackages) {
  std::set<std::string> names;
  for (int e : eng_->graph().referenced_entities(start_)) names.insert(eng_->target_name(e));
  EXPECT_EQ(names, (std::set<std::string>{"internal/util/util.go::Clamp", "server/handle.go::Server.handle",
                                          "server/handle.go::newConfig", "server/server.go::Server.name",
                                          "server/base.go::Base.ID"}));
}

TEST_F(GoResolution, AnImportLoadsEveryFileOfThePackage) {
  std::set<std::string> paths;
  for (int f : eng_->graph().accessible_files(server_file_)) paths.insert(eng_->view().files()[f].path);
  EXPECT_TRUE(paths.count("internal/util/util.go"));
  int util = *eng_->view().file_by_path("internal/util/util.go");
  std::set<std::string> from_util;
  for (int f : eng_->graph().imported_files(util)) from_util.insert(eng_->view().files()[f].path);
  EXPECT_TRUE(from_util.empty());
}

// AlignCoder's dependency snippets of a Go file: what it names through its imports, a type with its methods
// (declared beside it) and the functions' signatures.
TEST_F(GoResolution, DependencySnippetsListTheImportedPackagesNamedDefinitions) {
  std::map<std::string, std::string> by_label;
  for (const auto& d : dependency_snippets(*eng_, server_file_)) by_label[d.label] = d.text;
  ASSERT_TRUE(by_label.count("class example.com/shop/internal/util.Logger")) << by_label.size();
  EXPECT_EQ(by_label["class example.com/shop/internal/util.Logger"],
            "type Logger struct\n    func (l *Logger) Logf(format string)\n");
  EXPECT_EQ(by_label["functions"], "func Clamp(a, b int) int\n");
  EXPECT_EQ(by_label.size(), 2u);  // fmt is outside the repository; same-package names are not imports
}

// A refresh that finds every file unchanged keeps the import paths (and a new go.mod renames them).
TEST_F(GoResolution, RefreshKeepsAndFollowsTheImportPaths) {
  IndexOptions o;
  o.db_path = tmp_.str() + "/i.db";
  o.progress = false;
  build_index(repo_.str(), o);
  eng_ = Engine::open(o.db_path);
  EXPECT_EQ(eng_->view().files()[server_file_].module, "example.com/shop/server");
  repo_.write("go.mod", "module example.org/store\n");
  build_index(repo_.str(), o);
  eng_ = Engine::open(o.db_path);
  int f = *eng_->view().file_by_path("server/server.go");
  EXPECT_EQ(eng_->view().files()[f].module, "example.org/store/server");
}

}  // namespace
