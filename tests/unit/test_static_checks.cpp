// Conservative static checks (generate/static_checks.h) on real code: no finding on flask's correct
// bodies, and each kind of injected error is caught in real functions of flask.
#include <gtest/gtest.h>

#include <filesystem>

#include "generate/static_checks.h"
#include "helpers.h"
#include "index/index.h"
#include "indexed_repo.h"
#include "repo/parser.h"
#include "util/text.h"

using namespace repoctx;
using repoctx::testing::TempDir;

namespace {

repoctx::testing::IndexedRepo& flask() {
  return repoctx::testing::flask_index();
}
bool have_flask() {
  return std::filesystem::exists("/usr/lib/python3/dist-packages/flask/app.py");
}

// The file of `target` with `line` inserted as the first statement of its body.
std::string inject(const Engine& e, int target, const std::string& line) {
  const auto& en = e.view().entities()[target];
  const std::string& src = e.view().content(en.file);
  auto starts = line_starts(src);
  size_t at = starts[static_cast<size_t>(en.body_start_line - 1)];
  size_t indent = 0;
  while (src[at + indent] == ' ') ++indent;
  return src.substr(0, at) + std::string(indent, ' ') + line + "\n" + src.substr(at);
}

std::vector<StaticFinding> check_with(const std::string& target, const std::string& line) {
  auto& e = *flask().engine;
  auto t = e.resolve_target(target);
  return check_function(e, t.entity, inject(e, t.entity, line));
}

bool has_kind(const std::vector<StaticFinding>& fs, const std::string& check) {
  for (const auto& f : fs)
    if (f.check == check) return true;
  return false;
}

}  // namespace

TEST(StaticChecks, NoFindingOnFlasksRealBodies) {
  if (!have_flask()) GTEST_FAIL() << "python3-flask is not installed (scripts/setup.sh installs it)";
  auto rep = check_all_real_bodies(*flask().engine);
  EXPECT_GT(rep.functions, 300);
  for (const auto& [fn, f] : rep.findings) ADD_FAILURE() << fn << ":" << f.line << ": " << f.message;
}

TEST(StaticChecks, InjectedErrorsInRealFunctionsAreCaught) {
  if (!have_flask()) GTEST_FAIL() << "python3-flask is not installed (scripts/setup.sh installs it)";
  // (1) a method that does not exist on self; a method called with too many arguments.
  auto a = check_with("app.py::Flask.make_response", "self.make_responze(rv)");
  EXPECT_TRUE(has_kind(a, "method_call")) << (a.empty() ? "" : a[0].message);
  auto b = check_with("app.py::Flask.make_response", "self.make_default_options_response(rv, rv, rv)");
  ASSERT_TRUE(has_kind(b, "method_call"));
  EXPECT_NE(b[0].message.find("positional"), std::string::npos) << b[0].message;
  // (4) an undefined function; a module function with a wrong keyword and with a missing argument.
  auto c = check_with("helpers.py::get_root_path", "x = get_root_pathh(import_name)");
  EXPECT_TRUE(has_kind(c, "function_call"));
  auto d = check_with("helpers.py::send_file", "get_root_path(import_name=1, no_such_argument=2)");
  ASSERT_TRUE(has_kind(d, "function_call"));
  EXPECT_NE(d[0].message.find("no_such_argument"), std::string::npos) << d[0].message;
  auto m = check_with("helpers.py::send_file", "get_root_path()");
  ASSERT_TRUE(has_kind(m, "function_call"));
  EXPECT_NE(m[0].message.find("missing required argument 'import_name'"), std::string::npos) << m[0].message;
  // (2) a field no class of the hierarchy defines or assigns; real fields (assigned in __init__, class
  // attributes, properties) and fields the new body assigns itself stay silent.
  auto f = check_with("app.py::Flask.make_response", "x = self.zq_no_such_field");
  ASSERT_TRUE(has_kind(f, "field_access")) << (f.empty() ? "" : f[0].message);
  EXPECT_NE(f[0].message.find("zq_no_such_field"), std::string::npos);
  EXPECT_TRUE(check_with("app.py::Flask.make_response", "x = self.config").empty());
  EXPECT_TRUE(check_with("app.py::Flask.make_response", "x = self.response_class").empty());
  EXPECT_TRUE(check_with("app.py::Flask.make_response", "self.zq_new = 1; x = self.zq_new").empty());
  // Syntax.
  auto s = check_with("helpers.py::get_root_path", "x = (1 +");
  EXPECT_TRUE(has_kind(s, "syntax"));
  // Correct additions stay silent: a real method with the right arguments, a builtin, a local function.
  EXPECT_TRUE(check_with("app.py::Flask.make_response", "self.make_default_options_response()").empty());
  EXPECT_TRUE(check_with("helpers.py::get_root_path", "x = len(import_name)").empty());
  EXPECT_TRUE(check_with("helpers.py::get_root_path", "def local_helper(): return 1").empty());
}

TEST(StaticChecks, VariableMethodCallsOnInferredReceivers) {
  if (!have_flask()) GTEST_FAIL() << "python3-flask is not installed (scripts/setup.sh installs it)";
  // (3) In Flask.make_config, `cfg = Config(...)` makes cfg a flask.config.Config (a dict subclass: the
  // builtin base is known), so its methods are checked like self's.
  const std::string t = "app.py::Flask.make_config";
  auto missing = check_with(t, "cfg = Config(None)\n        cfg.from_pyfle('x.cfg')");
  ASSERT_TRUE(has_kind(missing, "variable_method")) << (missing.empty() ? "" : missing[0].message);
  EXPECT_NE(missing[0].message.find("from_pyfle"), std::string::npos) << missing[0].message;
  auto arity = check_with(t, "cfg = Config(None)\n        cfg.from_pyfile('x.cfg', False, 1)");
  ASSERT_TRUE(has_kind(arity, "variable_method"));
  EXPECT_NE(arity[0].message.find("positional"), std::string::npos) << arity[0].message;
  // Silent: real methods, members of the builtin base, attributes set on the local, a local bound
  // twice (its type is not certain), a class with __getattr__ (flask's _AppCtxGlobals).
  EXPECT_TRUE(check_with(t, "cfg = Config(None)\n        cfg.from_pyfile('x.cfg')").empty());
  EXPECT_TRUE(check_with(t, "cfg = Config(None)\n        cfg.setdefault('A', 1)").empty());
  EXPECT_TRUE(check_with(t, "cfg = Config(None)\n        cfg = {}\n        cfg.zq_anything()").empty());
  EXPECT_TRUE(check_with(t, "cfg = Config(None)\n        cfg.zq_hook = len\n        cfg.zq_hook()").empty());
  EXPECT_TRUE(check_with(t, "g = _AppCtxGlobals()\n        g.zq_anything()").empty());
  // werkzeug's Request, flask's Request's base, is followed through the installed werkzeug sources:
  // its methods are known, a name none of its classes has is reported.
  if (std::filesystem::exists("/usr/lib/python3/dist-packages/werkzeug/wrappers/request.py")) {
    EXPECT_TRUE(check_with(t, "req = Request({})\n        req.get_data()").empty());
    EXPECT_TRUE(has_kind(check_with(t, "req = Request({})\n        req.zq_anything()"), "variable_method"));
  }
}

TEST(StaticChecks, TypedLocalsComeOnlyFromSingleConstructorBindings) {
  SourceParser p;
  auto pf = p.parse("m.py", "m",
                    "def f(a):\n"
                    "    x = Foo()\n"
                    "    y = Foo()\n    y = Bar()\n"
                    "    z = Foo()\n    for z in a: pass\n"
                    "    a = Foo()\n"
                    "    w = mod.Baz(1)\n    w = mod.Baz(2)\n"
                    "    x.run(1)\n    w.go()\n    a.m()\n    def g():\n        nonlocal w\n        w = 1\n",
                    Language::python);
  const ScopeInfo* f = nullptr;
  for (const auto& s : pf.scopes)
    if (s.entity >= 0 && pf.entities[s.entity].name == "f") f = &s;
  ASSERT_NE(f, nullptr);
  // y: two callees; z: also a loop target; a: a parameter; w: rebound by the nested function.
  ASSERT_EQ(f->typed_locals.size(), 1u);
  EXPECT_EQ(f->typed_locals[0].name, "x");
  EXPECT_EQ(f->typed_locals[0].constructor, "Foo");
  EXPECT_EQ(f->typed_locals[0].line, 2);
  ASSERT_EQ(pf.local_references.size(), 1u);  // x.run: the only call on a typed local
  EXPECT_EQ(pf.local_references[0].chain, "x.run");
  EXPECT_EQ(pf.local_references[0].nargs, 1);
}

TEST(StaticChecks, CallsExpectedToFailAndClosures) {
  if (!have_flask()) GTEST_FAIL() << "python3-flask is not installed (scripts/setup.sh installs it)";
  // Only the lines inside a raises(...) block are exempt: a wrong call after the block is still reported.
  const std::string t = "helpers.py::send_file";
  EXPECT_FALSE(has_kind(check_with(t, "with raises(TypeError):\n        get_root_path()"), "function_call"));
  EXPECT_TRUE(has_kind(check_with(t, "with raises(TypeError):\n        pass\n    get_root_path()"), "function_call"));
  // A try block whose handler catches TypeError may call with wrong arguments on purpose; after it, not.
  EXPECT_TRUE(check_with(t, "try:\n        get_root_path()\n    except TypeError:\n        pass").empty());
  EXPECT_TRUE(has_kind(check_with(t, "try:\n        pass\n    except TypeError:\n        pass\n    get_root_path()"),
                       "function_call"));
  // In a nested function, a name of the enclosing function is visible; an undefined one is reported.
  auto& e = *flask().engine;
  auto nested = e.resolve_target("views.py::View.as_view.<locals>.view");
  ASSERT_GE(nested.entity, 0);
  EXPECT_TRUE(check_function(e, nested.entity, inject(e, nested.entity, "x = class_args")).empty());
  EXPECT_TRUE(
      has_kind(check_function(e, nested.entity, inject(e, nested.entity, "zq_undefined_7()")), "function_call"));
}
