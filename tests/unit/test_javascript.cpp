// JavaScript and TypeScript: extraction over tree-sitter (classes, members, interfaces, arrow functions,
// CommonJS assignments, imports of every form), module names and specifiers, and resolution through ES
// imports, default exports, `require` and module.exports, index files, and `this`.
#include <gtest/gtest.h>

#include <map>
#include <set>

#include "helpers.h"
#include "index/index.h"
#include "repo/javascript/manifests.h"
#include "repo/javascript/modules.h"
#include "repo/parser.h"
#include "retrieve/engine.h"

using namespace repoctx;
using repoctx::testing::chains_in;
using repoctx::testing::find_entity;
using repoctx::testing::TempDir;

namespace {

const char* kGreeterTs = R"(import { helper as h, Base } from "./lib/util";
import * as ns from "./lib";
import def from "./d";

/** A greeter. */
export class Greeter extends Base implements Named {
  #secret = 1;
  name: string = "x";
  constructor(name: string) { super(); this.name = name; }
  greet(): string {
    const local = 1;
    return h(this.name) + ns.tool() + def() + local;
  }
  static make = () => new Greeter("a");
}

export interface Named { name: string; hello(x: number): void }
type ID = string | number;
export default function main(a: number, ...rest: string[]): void { new Greeter("b").greet(); }
export const add = (a: number, b = 2) => a + b;
let counter = 0, other = 1;
exports.parse = function (s) { return s; };
)";

TEST(JavaScriptParser, TypeScriptDefinitionsAndLines) {
  SourceParser p;
  ParsedFile pf = p.parse("src/greeter.ts", "src/greeter", kGreeterTs, Language::typescript);
  EXPECT_TRUE(pf.errors.empty()) << pf.errors[0].message;
  const Entity* cls = find_entity(pf, "Greeter");
  ASSERT_NE(cls, nullptr);
  EXPECT_EQ(cls->kind, EntityKind::klass);
  EXPECT_EQ(cls->start_line, 6);  // the export keyword
  EXPECT_EQ(cls->end_line, 15);
  EXPECT_EQ(cls->docstring, "A greeter.");
  EXPECT_EQ(cls->bases, (std::vector<std::string>{"Base", "Named"}));
  for (const char* q : {"Greeter.#secret", "Greeter.name", "Greeter.make"}) {
    ASSERT_NE(find_entity(pf, q), nullptr) << q;
    EXPECT_EQ(find_entity(pf, q)->kind, EntityKind::field) << q;
  }
  ASSERT_NE(find_entity(pf, "Greeter.constructor"), nullptr);
  EXPECT_EQ(find_entity(pf, "Greeter.constructor")->kind, EntityKind::constructor);
  const Entity* greet = find_entity(pf, "Greeter.greet");
  ASSERT_NE(greet, nullptr);
  EXPECT_EQ(greet->kind, EntityKind::method);
  EXPECT_EQ(greet->start_line, 10);
  EXPECT_EQ(greet->end_line, 13);
  EXPECT_EQ(greet->body_start_line, 11);
  EXPECT_EQ(greet->signature, "greet(): string");
  const Entity* named = find_entity(pf, "Named");
  ASSERT_NE(named, nullptr);
  EXPECT_EQ(named->kind, EntityKind::interface);
  ASSERT_NE(find_entity(pf, "Named.hello"), nullptr);
  EXPECT_EQ(find_entity(pf, "Named.hello")->kind, EntityKind::method);
  EXPECT_EQ(find_entity(pf, "Named.name")->kind, EntityKind::field);
  EXPECT_EQ(find_entity(pf, "ID")->kind, EntityKind::klass);
  const Entity* main_fn = find_entity(pf, "main");
  ASSERT_NE(main_fn, nullptr);
  EXPECT_EQ(main_fn->kind, EntityKind::function);
  ASSERT_EQ(main_fn->params.size(), 2u);
  EXPECT_EQ(main_fn->params[0].annotation, "number");
  EXPECT_EQ(main_fn->params[1].kind, Parameter::var_positional);
  const Entity* add = find_entity(pf, "add");
  ASSERT_NE(add, nullptr);
  EXPECT_EQ(add->kind, EntityKind::function);  // an arrow function bound to a name
  EXPECT_TRUE(add->params[1].has_default);
  EXPECT_EQ(find_entity(pf, "counter")->kind, EntityKind::variable);
  EXPECT_EQ(find_entity(pf, "other")->kind, EntityKind::variable);
  const Entity* parse = find_entity(pf, "exports.parse");
  ASSERT_NE(parse, nullptr);
  EXPECT_EQ(parse->name, "parse");
  EXPECT_EQ(parse->kind, EntityKind::function);
}

TEST(JavaScriptParser, ImportsOfEveryFormAndTheDefaultExport) {
  SourceParser p;
  ParsedFile pf = p.parse("src/greeter.ts", "src/greeter", kGreeterTs, Language::typescript);
  std::map<std::string, std::pair<std::string, std::string>> by_alias;  // bound name -> (module, name)
  for (const auto& im : pf.imports) by_alias[im.bound_name()] = {im.module, im.name};
  EXPECT_EQ(by_alias["h"], (std::pair<std::string, std::string>{"./lib/util", "helper"}));
  EXPECT_EQ(by_alias["Base"], (std::pair<std::string, std::string>{"./lib/util", "Base"}));
  EXPECT_EQ(by_alias["ns"], (std::pair<std::string, std::string>{"./lib", ""}));
  EXPECT_EQ(by_alias["def"], (std::pair<std::string, std::string>{"./d", "default"}));
  // `export default function main`: "default" is bound to main through the file itself.
  EXPECT_EQ(by_alias["default"], (std::pair<std::string, std::string>{"./greeter", "main"}));

  ParsedFile cjs = p.parse("lib/x.js", "lib/x",
                           "const fs = require('fs');\nconst {join, sep: s} = require('./path');\n"
                           "function run() { return join(s); }\nmodule.exports = run;\n",
                           Language::javascript);
  std::map<std::string, std::pair<std::string, std::string>> c;
  for (const auto& im : cjs.imports) c[im.bound_name()] = {im.module, im.name};
  EXPECT_EQ(c["fs"], (std::pair<std::string, std::string>{"fs", "module.exports"}));
  EXPECT_EQ(c["join"], (std::pair<std::string, std::string>{"./path", "join"}));
  EXPECT_EQ(c["s"], (std::pair<std::string, std::string>{"./path", "sep"}));
  EXPECT_EQ(c["module.exports"], (std::pair<std::string, std::string>{"./x", "run"}));
  EXPECT_EQ(c["default"], (std::pair<std::string, std::string>{"./x", "run"}));
}

TEST(JavaScriptParser, ReferencesLeaveOutLocalsAndGlobals) {
  SourceParser p;
  ParsedFile pf = p.parse("src/greeter.ts", "src/greeter", kGreeterTs, Language::typescript);
  int greet = -1;
  for (size_t i = 0; i < pf.entities.size(); ++i)
    if (pf.entities[i].qualname == "Greeter.greet") greet = static_cast<int>(i);
  std::set<std::string> refs;
  for (const auto& r : pf.references)
    if (r.scope == greet) refs.insert(r.chain);
  for (const char* want : {"h", "this.name", "ns.tool", "def"}) EXPECT_TRUE(refs.count(want)) << want;
  for (const char* not_wanted : {"local", "string", "this"}) EXPECT_FALSE(refs.count(not_wanted)) << not_wanted;
}

TEST(JavaScriptModules, NamesAndSpecifiers) {
  EXPECT_EQ(strip_javascript_extension("src/a.ts"), "src/a");
  EXPECT_EQ(strip_javascript_extension("src/a.d.ts"), "src/a.d");           // a declaration file is named apart
  EXPECT_EQ(strip_javascript_extension("lib/index.mjs"), "lib/index.mjs");  // "./index" never loads it
  EXPECT_EQ(strip_javascript_extension("lib/index.mts"), "lib/index.mjs");  // what "./index.mjs" names in TS
  EXPECT_EQ(javascript_specifier_modules("main.js", "fs/promises"), std::vector<std::string>{});  // built-in
  EXPECT_EQ(javascript_specifier_modules("src/app/main.ts", "../util/x.js"),
            (std::vector<std::string>{"src/util/x", "src/util/x.d", "src/util/x/index", "src/util/x/index.d"}));
  EXPECT_EQ(javascript_specifier_modules("main.js", "./lib")[2], "lib/index");
  EXPECT_TRUE(javascript_specifier_modules("main.js", "../../outside").empty());
  EXPECT_TRUE(javascript_specifier_modules("main.js", "node:fs").empty());
  auto bare = javascript_specifier_modules("a/b.ts", "core/thing");
  EXPECT_EQ(bare[0], "core/thing");
  EXPECT_EQ(bare[4], "src/core/thing");
}

class JavaScriptResolution : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_.write("src/greeter.ts", kGreeterTs);
    repo_.write("src/lib/util.ts",
                "/** Helps. */\nexport function helper(s: string): string { return s; }\n"
                "export class Base { hello(): number { return 1; } }\n");
    repo_.write("src/lib/index.ts", "export function tool() { return 1; }\nexport * from './util';\n");
    repo_.write("src/d.js", "function dflt() { return 2; }\nmodule.exports = dflt;\n");
    repo_.write("src/lib/util.d.ts", "export declare function helper(s: string): string;\n");
    repo_.write("src/cjs.js",
                "const dflt = require('./d');\nconst lib = require('./lib/exports');\n"
                "function use() { return dflt() + lib.twice(2); }\n");
    repo_.write("src/lib/exports.js", "exports.twice = function (x) { return 2 * x; };\n");
    IndexOptions o;
    o.db_path = tmp_.str() + "/i.db";
    o.progress = false;
    build_index(repo_.str(), o);
    eng_ = Engine::open(o.db_path);
  }
  std::string resolve(const std::string& path, const std::string& scope_qualname, const std::string& chain) {
    int file = *eng_->view().file_by_path(path);
    int scope = -1;
    for (size_t i = 0; i < eng_->view().entities().size(); ++i)
      if (eng_->target_name(static_cast<int>(i)) == path + "::" + scope_qualname) scope = static_cast<int>(i);
    Resolution r = eng_->graph().resolve(file, scope, chain);
    if (r.kind != Resolution::Kind::entity) return "";
    return eng_->target_name(r.entity);
  }
  TempDir repo_, tmp_;
  std::unique_ptr<Engine> eng_;
};

TEST_F(JavaScriptResolution, EsImportsDefaultExportsAndIndexFiles) {
  EXPECT_EQ(resolve("src/greeter.ts", "Greeter.greet", "h"), "src/lib/util.ts::helper");  // the code, not util.d.ts
  EXPECT_EQ(resolve("src/greeter.ts", "Greeter.greet", "ns.tool"), "src/lib/index.ts::tool");     // ./lib -> index
  EXPECT_EQ(resolve("src/greeter.ts", "Greeter.greet", "ns.helper"), "src/lib/util.ts::helper");  // export *
  EXPECT_EQ(resolve("src/greeter.ts", "Greeter.greet", "def"), "src/d.js::dflt");  // default import of CommonJS
  EXPECT_EQ(resolve("src/greeter.ts", "", "Base"), "src/lib/util.ts::Base");
}

TEST_F(JavaScriptResolution, ThisReachesTheClassAndItsImportedBase) {
  EXPECT_EQ(resolve("src/greeter.ts", "Greeter.greet", "this.name"), "src/greeter.ts::Greeter.name");
  EXPECT_EQ(resolve("src/greeter.ts", "Greeter.greet", "this.hello"), "src/lib/util.ts::Base.hello");
}

TEST_F(JavaScriptResolution, RequireReturnsModuleExportsOrTheModule) {
  EXPECT_EQ(resolve("src/cjs.js", "use", "dflt"), "src/d.js::dflt");
  EXPECT_EQ(resolve("src/cjs.js", "use", "lib.twice"), "src/lib/exports.js::exports.twice");
  std::set<std::string> names;
  int file = *eng_->view().file_by_path("src/cjs.js");
  for (int g : eng_->graph().imported_files(file)) names.insert(eng_->view().files()[g].path);
  EXPECT_EQ(names, (std::set<std::string>{"src/d.js", "src/lib/exports.js"}));
}

TEST(JavaScriptManifests, SpecifierPatternsExactFirstThenTheLongestWildcardPrefix) {
  std::vector<SpecifierMapping> m = {{"@app/*", {"src/app/*"}},
                                     {"@app/core/*", {"core/*.ts", "legacy/*"}},
                                     {"@app/core/main", {"core/entry"}},
                                     {"./*.js", {"lib/*.js"}}};
  EXPECT_EQ(map_specifier(m, "@app/x/y"), (std::vector<std::string>{"src/app/x/y"}));
  EXPECT_EQ(map_specifier(m, "@app/core/z"), (std::vector<std::string>{"core/z.ts", "legacy/z"}));
  EXPECT_EQ(map_specifier(m, "@app/core/main"), (std::vector<std::string>{"core/entry"}));
  EXPECT_EQ(map_specifier(m, "./a/b.js"), (std::vector<std::string>{"lib/a/b.js"}));  // prefix and suffix
  EXPECT_TRUE(map_specifier(m, "other").empty());
  EXPECT_TRUE(map_specifier(m, "./a.ts").empty());
}

// A monorepo: two packages importing each other by name (`main`, `exports` with conditions and subpath
// patterns), a tsconfig.json with comments and trailing commas mapping `@shared/*`, a package whose
// `exports` hides its other files, and the stored facts surviving a round trip through the index.
class JavaScriptManifestResolution : public ::testing::Test {
 protected:
  void SetUp() override {
    repo_.write("packages/util/package.json",
                R"({"name": "@org/util", "main": "./ignored.js",
                    "exports": {".": {"types": "./lib/index.d.ts", "import": "./lib/index.mjs",
                                      "require": "./lib/index.js"},
                                "./feature/*": "./lib/features/*.js", "./hidden": null},
                    "imports": {"#internal/*": {"node": "./lib/internal/*.js"}}})");
    repo_.write("packages/util/lib/index.js",
                "const { trim } = require('#internal/strings');\n"
                "function pad(s) { return trim(s); }\nmodule.exports = { pad };\n");
    repo_.write("packages/util/lib/internal/strings.js", "exports.trim = function (s) { return s; };\n");
    repo_.write("packages/util/lib/features/color.js", "exports.paint = function (c) { return c; };\n");
    repo_.write("packages/util/ignored.js", "exports.pad = function () {};\n");
    repo_.write("packages/app/package.json", R"({"name": "app", "main": "dist/main.js"})");
    repo_.write("packages/app/dist/main.js",
                "const { pad } = require('@org/util');\nconst color = require('@org/util/feature/color');\n"
                "const missing = require('@org/util/hidden');\nconst self = require('app/dist/other');\n"
                "function run() { return pad('x') + color.paint('red') + self.other(); }\n");
    repo_.write("packages/app/dist/other.js", "exports.other = function () { return 1; };\n");
    repo_.write("web/tsconfig.json", R"({
      // comments and trailing commas: JSONC
      "compilerOptions": {
        "baseUrl": "./src", /* relative to this file */
        "paths": { "@shared/*": ["../../shared/*", "../../vendor/*",], },
      },
    })");
    repo_.write("web/src/main.ts",
                "import { fmt } from '@shared/format';\nimport { tool } from 'tools/kit';\n"
                "export function show(): string { return fmt(tool()); }\n");
    repo_.write("web/src/tools/kit.ts", "export function tool(): number { return 1; }\n");
    repo_.write("shared/format.ts", "export function fmt(x: number): string { return String(x); }\n");
    // A tsconfig that only extends a shared base two folders up: the base's baseUrl and paths, relative to it.
    repo_.write("tsconfig.base.json", R"({"compilerOptions": {"baseUrl": ".", "paths": {"@lib/*": ["libs/*"]}}})");
    repo_.write("apps/mobile/tsconfig.json", R"({"extends": "../../tsconfig.base", "compilerOptions": {}})");
    repo_.write("apps/mobile/app.ts", "import { a } from '@lib/a';\nimport { b } from 'libs/b';\n");
    repo_.write("libs/a.ts", "export function a() {}\n");
    repo_.write("libs/b.ts", "export function b() {}\n");
    IndexOptions o;
    o.db_path = tmp_.str() + "/i.db";
    o.progress = false;
    build_index(repo_.str(), o);
    eng_ = Engine::open(o.db_path);
  }
  std::string loads(const std::string& path, const std::string& spec) {
    int file = *eng_->view().file_by_path(path);
    std::string out;
    for (const auto& im : eng_->view().imports(file))
      if (im.module == spec)
        for (int f : eng_->graph().import_files(file, im))
          out += (out.empty() ? "" : ",") + eng_->view().files()[f].path;
    return out;
  }
  TempDir repo_, tmp_;
  std::unique_ptr<Engine> eng_;
};

TEST_F(JavaScriptManifestResolution, PackagesByNameThroughExportsAndMain) {
  EXPECT_EQ(loads("packages/app/dist/main.js", "@org/util"), "packages/util/lib/index.js");  // require, not main
  EXPECT_EQ(loads("packages/app/dist/main.js", "@org/util/feature/color"), "packages/util/lib/features/color.js");
  EXPECT_EQ(loads("packages/app/dist/main.js", "@org/util/hidden"), "");                          // exports hide it
  EXPECT_EQ(loads("packages/app/dist/main.js", "app/dist/other"), "packages/app/dist/other.js");  // self, no exports
  EXPECT_EQ(loads("packages/util/lib/index.js", "#internal/strings"), "packages/util/lib/internal/strings.js");
  EXPECT_EQ(loads("packages/app/dist/main.js", "#internal/strings"), "");  // another package's imports
  int file = *eng_->view().file_by_path("packages/app/dist/main.js");
  int run = -1;
  for (size_t i = 0; i < eng_->view().entities().size(); ++i)
    if (eng_->target_name(static_cast<int>(i)) == "packages/app/dist/main.js::run") run = static_cast<int>(i);
  ASSERT_GE(run, 0);
  Resolution r = eng_->graph().resolve(file, run, "pad");
  ASSERT_EQ(r.kind, Resolution::Kind::entity);
  EXPECT_EQ(eng_->target_name(r.entity), "packages/util/lib/index.js::pad");
}

TEST_F(JavaScriptManifestResolution, TsconfigPathsAndBaseUrlWithComments) {
  EXPECT_EQ(loads("web/src/main.ts", "@shared/format"), "shared/format.ts");
  EXPECT_EQ(loads("web/src/main.ts", "tools/kit"), "web/src/tools/kit.ts");  // baseUrl
  EXPECT_EQ(loads("apps/mobile/app.ts", "@lib/a"), "libs/a.ts");             // paths of the extended configuration
  EXPECT_EQ(loads("apps/mobile/app.ts", "libs/b"), "libs/b.ts");             // its baseUrl, relative to it
  JavascriptResolution r = JavascriptResolution::from_json(eng_->view().javascript_resolution());
  ASSERT_EQ(r.scopes.size(), 2u);
  EXPECT_EQ(r.scopes[0].dir, "apps/mobile");
  EXPECT_TRUE(r.scopes[0].has_base);
  EXPECT_EQ(r.scopes[0].base, "");
  EXPECT_EQ(r.scopes[1].dir, "web");
  EXPECT_EQ(r.scopes[1].base, "web/src");
  EXPECT_EQ(r.scopes[1].paths.at(0).targets, (std::vector<std::string>{"shared/*", "vendor/*"}));
  ASSERT_EQ(r.packages.size(), 2u);
  EXPECT_EQ(r.packages[0].name, "app");
  EXPECT_EQ(r.packages[0].main, "packages/app/dist/main.js");
  EXPECT_EQ(JavascriptResolution::from_json(r.to_json()).to_json(), r.to_json());
}

TEST_F(JavaScriptManifestResolution, AChangedManifestReResolvesWithoutReParsing) {
  repo_.write("web/tsconfig.json", R"({"compilerOptions": {"baseUrl": "."}})");
  IndexOptions o;
  o.db_path = tmp_.str() + "/i.db";
  o.progress = false;
  IndexStats st = build_index(repo_.str(), o);
  EXPECT_EQ(st.parsed, 0u);  // no source file changed
  eng_ = Engine::open(o.db_path);
  EXPECT_EQ(loads("web/src/main.ts", "@shared/format"), "");  // the mapping is gone
  EXPECT_EQ(loads("web/src/main.ts", "tools/kit"), "");       // baseUrl is web/ now
}

}  // namespace
