// The parameter tables behind --param and config files (util/param_table.h), through the three structs
// that use them: values land in the right (also nested) field, wrong types and unknown names are usage
// errors that name the parameter, and to_json round-trips.
#include <gtest/gtest.h>

#include "retrieve/aligncoder/params.h"
#include "retrieve/procedural/decompose.h"
#include "retrieve/study/params.h"
#include "util/error.h"

namespace repoctx {
namespace {

using nlohmann::json;

ExitCode code_of(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.code();
  }
  return ExitCode::ok;
}

TEST(ParamTable, StudyParamsReachNestedFields) {
  StudyParams p;
  p.apply(json{{"bm25_k1", 0.9}, {"chunk_chars", 1234}, {"acr_skip_tests", false}, {"max_turns", 7}});
  EXPECT_DOUBLE_EQ(p.chunks.k1, 0.9);
  EXPECT_EQ(p.chunks.chunk_chars, 1234);
  EXPECT_FALSE(p.acr_skip_tests);
  EXPECT_EQ(p.react.max_turns, 7);
  json j = p.to_json();
  EXPECT_DOUBLE_EQ(j["bm25_k1"].get<double>(), 0.9);
  EXPECT_EQ(j["max_turns"], 7);
  StudyParams q;
  q.apply(j);  // every name to_json writes is one apply reads
  EXPECT_EQ(q.to_json(), j);
  EXPECT_TRUE(StudyParams::has("bm25_b"));
  EXPECT_FALSE(StudyParams::has("bm25"));
}

TEST(ParamTable, WrongTypesAreUsageErrorsNamingTheParameter) {
  StudyParams s;
  std::string msg;
  EXPECT_EQ(code_of([&] { s.apply(json{{"chunk_chars", 1.5}}); }, &msg), ExitCode::usage);
  EXPECT_NE(msg.find("study parameter 'chunk_chars' has a value of the wrong type: 1.5"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { s.apply(json{{"acr_skip_tests", 1}}); }), ExitCode::usage);
  EXPECT_EQ(code_of([&] { s.apply(json{{"bm25_b", "0.5"}}); }), ExitCode::usage);
  s.apply(json{{"bm25_b", 1}});  // an integer is a number
  EXPECT_DOUBLE_EQ(s.chunks.b, 1.0);

  CompletionParams c;
  EXPECT_EQ(code_of([&] { c.apply(json{{"seed", -1}}); }, &msg), ExitCode::usage);
  EXPECT_NE(msg.find("completion parameter 'seed'"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { c.apply(json{{"model_path", 3}}); }), ExitCode::usage);
  c.apply(json{{"seed", 42}, {"model_path", "m.json"}, {"temperature", 0.5}});
  EXPECT_EQ(c.seed, 42u);
  EXPECT_EQ(c.model_path, "m.json");
  EXPECT_DOUBLE_EQ(c.temperature, 0.5);
}

TEST(ParamTable, UnknownNamesListTheKnownOnes) {
  ProceduralParams p;
  std::string msg;
  EXPECT_EQ(code_of([&] { p.apply(json{{"tau", 0.5}}); }, &msg), ExitCode::usage);
  EXPECT_NE(msg.find("unknown procedural parameter 'tau'"), std::string::npos) << msg;
  EXPECT_NE(msg.find("tau_mu, tau_pc1"), std::string::npos) << msg;
  p.apply(json{{"tau_mu", 0.25}, {"agent", false}, {"max_rounds", 9}});
  EXPECT_DOUBLE_EQ(p.tau_mu, 0.25);
  EXPECT_FALSE(p.agent);
  EXPECT_EQ(p.to_json()["max_rounds"], 9);
  ProceduralParams before = p;
  EXPECT_EQ(code_of([&] { p.apply(json{{"max_rounds", true}}); }), ExitCode::usage);
  EXPECT_EQ(p.max_rounds, before.max_rounds);
}

}  // namespace
}  // namespace repoctx
