// What the servers refuse before they do any work: the HTTP request path in memory (HttpExchange: the parser
// with the server's limits, the checks on the head, the handlers) and the MCP message path (McpServer::handle,
// LineReader), on a real index of Debian's Flask. The same paths over real sockets and processes, with
// attacks running: tests/integration/adversarial_serve.py.
#include <gtest/gtest.h>

#include <string>

#include "api/json.h"
#include "helpers.h"
#include "server/http_server.h"
#include "server/mcp_server.h"
#include "util/error.h"

using namespace repoctx;
using nlohmann::json;
using repoctx::testing::TempDir;

namespace {

constexpr const char* kFlask = "/usr/lib/python3/dist-packages/flask";

std::string post(const std::string& path, const std::string& body, const std::string& extra_headers = "",
                 const std::string& host = "127.0.0.1:8765") {
  return "POST " + path + " HTTP/1.1\r\nHost: " + host + "\r\nContent-Type: application/json\r\n" + extra_headers +
         "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body;
}

int status_of(const std::string& answer) {
  return answer.size() > 12 ? std::stoi(answer.substr(9, 3)) : 0;
}

json body_of(const std::string& answer) {
  auto end = answer.find("\r\n\r\n");
  return end == std::string::npos ? json() : json::parse(answer.substr(end + 4), nullptr, false);
}

std::string code_of(const std::string& answer) {
  json b = body_of(answer);
  return b.is_object() && b.contains("error") ? b["error"].value("code", "") : "";
}

class ServeGuard : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    dir_ = new TempDir();
    api::OpenParams op;
    op.index.db = dir_->str() + "/flask.db";
    std::vector<ServedRepo> repos;
    repos.push_back({"flask", kFlask, std::make_unique<api::Index>(kFlask, op), nullptr, false});
    ServeOptions opt;
    opt.watch = false;
    opt.warm = false;
    opt.limits.threads = 1;
    opt.limits.max_body_bytes = 4096;
    opt.limits.max_header_bytes = 4096;
    ex_ = new HttpExchange(std::move(repos), opt);
    api::OpenParams op2 = op;
    op2.refresh = false;
    index_ = new api::Index(kFlask, op2);
  }
  static void TearDownTestSuite() {
    delete ex_;
    delete index_;
    delete dir_;
  }
  static TempDir* dir_;
  static HttpExchange* ex_;
  static api::Index* index_;
};

TempDir* ServeGuard::dir_ = nullptr;
HttpExchange* ServeGuard::ex_ = nullptr;
api::Index* ServeGuard::index_ = nullptr;

}  // namespace

TEST_F(ServeGuard, ANormalRequestIsAnswered) {
  std::string a = ex_->answer(post("/v1/retrieve", R"({"query":"register a url rule","k":3})"));
  ASSERT_EQ(status_of(a), 200) << a;
  EXPECT_EQ(body_of(a)["results"].size(), 3u);
  a = ex_->answer("GET /v1/health HTTP/1.1\r\nHost: localhost\r\n\r\n");
  EXPECT_EQ(status_of(a), 200) << a;
  // Chunked bodies are read like Content-Length ones.
  std::string body = R"({"query":"url rule","k":2})";
  char size[16];
  std::snprintf(size, sizeof size, "%zx", body.size());
  a = ex_->answer(
      "POST /v1/retrieve HTTP/1.1\r\nHost: [::1]:1\r\nContent-Type: application/json; charset=utf-8\r\n"
      "Transfer-Encoding: chunked\r\n\r\n" +
      std::string(size) + "\r\n" + body + "\r\n0\r\n\r\n");
  EXPECT_EQ(status_of(a), 200) << a;
  // Not a whole request yet: nothing to answer (a connection waits for the rest, within its deadline).
  EXPECT_EQ(ex_->answer("POST /v1/retrieve HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
                        "Content-Length: 10\r\n\r\n{"),
            "");
}

TEST_F(ServeGuard, BrowsersCannotDriveIt) {
  EXPECT_EQ(code_of(ex_->answer(post("/v1/retrieve", R"({"query":"x"})", "", "evil.example:8765"))), "bad_host");
  EXPECT_EQ(code_of(ex_->answer(post("/v1/retrieve", R"({"query":"x"})", "", "127.0.0.1.evil.example"))), "bad_host");
  EXPECT_EQ(code_of(ex_->answer("GET /v1/health HTTP/1.1\r\n\r\n")), "bad_host") << "no Host";
  EXPECT_EQ(code_of(ex_->answer(post("/v1/retrieve", R"({"query":"x"})", "Origin: http://evil.example\r\n"))),
            "cross_origin");
  std::string plain =
      "POST /v1/retrieve HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\n"
      "Content-Length: 13\r\n\r\n{\"query\":\"x\"}";
  EXPECT_EQ(status_of(ex_->answer(plain)), 415);
  std::string none = "POST /v1/retrieve HTTP/1.1\r\nHost: localhost\r\nContent-Length: 13\r\n\r\n{\"query\":\"x\"}";
  EXPECT_EQ(status_of(ex_->answer(none)), 415);
  EXPECT_EQ(status_of(ex_->answer("OPTIONS /v1/retrieve HTTP/1.1\r\nHost: localhost\r\n\r\n")), 405);
}

TEST_F(ServeGuard, SizesAndDepthsAreBoundedBeforeWork) {
  std::string big = R"({"query":")" + std::string(5000, 'a') + R"("})";
  EXPECT_EQ(code_of(ex_->answer(post("/v1/retrieve", big))), "too_large");
  // A chunked body over the limit: refused as it grows, not after.
  std::string chunked =
      "POST /v1/retrieve HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n"
      "Transfer-Encoding: chunked\r\n\r\n";
  for (int i = 0; i < 8; ++i) chunked += "400\r\n" + std::string(1024, ' ') + "\r\n";
  chunked += "0\r\n\r\n";
  EXPECT_EQ(code_of(ex_->answer(chunked)), "too_large");
  EXPECT_EQ(
      code_of(ex_->answer("GET /v1/health HTTP/1.1\r\nHost: localhost\r\nX: " + std::string(8000, 'a') + "\r\n\r\n")),
      "headers_too_large");
  for (const char* length : {"1e20", "-1", "99999999999999999999999"}) {
    std::string a = ex_->answer(std::string("POST /v1/retrieve HTTP/1.1\r\nHost: localhost\r\nContent-Type: "
                                            "application/json\r\nContent-Length: ") +
                                length + "\r\n\r\n{}");
    EXPECT_TRUE(status_of(a) == 400 || status_of(a) == 413) << length << ": " << a;
  }
  std::string deep = R"({"query":"x","params":{"a":)" + std::string(200, '[') + std::string(200, ']') + "}}";
  EXPECT_EQ(code_of(ex_->answer(post("/v1/retrieve", deep))), "bad_json");
  std::string ok_depth = R"({"query":"x","k":3,"params":{"a":)" + std::string(20, '[') + std::string(20, ']') + "}}";
  EXPECT_NE(code_of(ex_->answer(post("/v1/retrieve", ok_depth))), "bad_json");
  EXPECT_EQ(code_of(ex_->answer(post("/v1/retrieve", R"({"query":"x","k":1e400})"))), "bad_json");
  EXPECT_THROW(api::parse_request_json(std::string(65, '[') + std::string(65, ']')), Error);
  EXPECT_NO_THROW(api::parse_request_json(std::string(64, '[') + std::string(64, ']')));
  // Brackets inside strings are text, not nesting.
  EXPECT_NO_THROW(api::parse_request_json("{\"a\":\"" + std::string(500, '[') + "\\\"[\"}"));
}

TEST_F(ServeGuard, ClientsNeverNameServerFiles) {
  for (const char* model : {"/dev/zero", "/etc/passwd", "../models/structural.json", "nope"}) {
    std::string a = ex_->answer(post(
        "/v1/retrieve",
        json{{"target", "helpers.py::get_root_path"}, {"strategy", "structural"}, {"structural_model", model}}.dump()));
    EXPECT_EQ(status_of(a), 400) << model << ": " << a;
    EXPECT_NE(body_of(a)["error"]["message"].get<std::string>().find("builtin"), std::string::npos)
        << "the answer lists the models that may be chosen";
  }
  std::string a = ex_->answer(post("/v1/retrieve", json{{"target", "helpers.py::get_root_path"},
                                                        {"strategy", "structural"},
                                                        {"k", 3},
                                                        {"structural_model", "builtin"}}
                                                       .dump()));
  EXPECT_EQ(status_of(a), 200) << a;
  a = ex_->answer(post("/v1/retrieve",
                       json{{"query", "x"}, {"params", {{"model_path", "/dev/zero"}}}, {"strategy", "sparse"}}.dump()));
  EXPECT_EQ(status_of(a), 400) << a;
  a = ex_->answer("GET /v1/models HTTP/1.1\r\nHost: localhost\r\n\r\n");
  EXPECT_EQ(body_of(a)["structural"], json::array({"builtin"})) << a;
}

TEST_F(ServeGuard, ServerModelsResolveNamesOnly) {
  ServerModels m;
  ServerModels::add(m.structural, "fast=/srv/models/fast.json", "--structural-model");
  ServerModels::add(m.structural, "/srv/models/default.json", "--structural-model");
  EXPECT_THROW(ServerModels::add(m.structural, "fast=/x.json", "--structural-model"), Error) << "a repeated name";
  EXPECT_THROW(ServerModels::add(m.structural, "builtin=/x.json", "--structural-model"), Error) << "reserved";
  api::RetrieveParams p;
  m.resolve(p);
  EXPECT_EQ(p.structural_model, "/srv/models/default.json") << "no name: the server's default";
  p.structural_model = "fast";
  m.resolve(p);
  EXPECT_EQ(p.structural_model, "/srv/models/fast.json");
  p.structural_model = "builtin";
  m.resolve(p);
  EXPECT_EQ(p.structural_model, "");
  p.structural_model = "/srv/models/fast.json";
  EXPECT_THROW(m.resolve(p), Error) << "the file itself is not a name";
  std::map<std::string, std::string> params{{"model_path", "untrained"}};
  m.resolve(params);
  EXPECT_EQ(params["model_path"], "untrained");
}

TEST_F(ServeGuard, McpHoldsCallsToTheAnnouncedSchemas) {
  McpOptions opt;
  opt.watch = false;
  opt.warm = false;
  McpServer mcp(*index_, opt);
  auto ask = [&](const json& msg) { return json::parse(mcp.handle(msg.dump())); };
  auto call = [&](const std::string& tool, const json& args) {
    return ask({{"jsonrpc", "2.0"},
                {"id", 2},
                {"method", "tools/call"},
                {"params", {{"name", tool}, {"arguments", args}}}})["result"];
  };
  ask({{"jsonrpc", "2.0"}, {"id", 1}, {"method", "initialize"}, {"params", {{"protocolVersion", "2025-11-25"}}}});
  EXPECT_FALSE(call("retrieve", {{"query", "url rule"}, {"k", 2}}).value("isError", false));
  EXPECT_TRUE(call("retrieve", {{"query", "x"}, {"trace", true}}).value("isError", false)) << "not in the schema";
  EXPECT_TRUE(call("retrieve", {{"query", "x"}, {"strategy", "procedural"}}).value("isError", false))
      << "a strategy the schema's enum leaves out (no model)";
  EXPECT_TRUE(call("retrieve", {{"query", "x"}, {"structural_model", "/dev/zero"}}).value("isError", false));
  EXPECT_TRUE(call("retrieve", {{"query", "x"}, {"params", {{"model_path", "/dev/zero"}}}}).value("isError", false));
  EXPECT_TRUE(call("symbols", {{"limit", -1}}).value("isError", false)) << "below the schema's minimum";
  EXPECT_TRUE(call("read_file", {{"path", 3}}).value("isError", false)) << "a wrong type";
  EXPECT_TRUE(call("read_file", json::object()).value("isError", false)) << "a required field missing";
  std::string deep = R"({"jsonrpc":"2.0","id":3,"method":"ping","params":{"a":)" + std::string(100000, '[') +
                     std::string(100000, ']') + "}}";
  EXPECT_EQ(json::parse(mcp.handle(deep))["error"]["code"], -32700);
  std::string deep_note =
      R"({"jsonrpc":"2.0","method":"x","params":)" + std::string(100000, '[') + std::string(100000, ']') + "}";
  EXPECT_EQ(json::parse(mcp.handle(deep_note))["error"]["code"], -32700);
}

TEST(LineReader, LinesUpToTheLimitAndNothingHeldBeyondIt) {
  LineReader r(10);
  std::vector<std::string> lines;
  int too_long = 0;
  auto on_line = [&](std::string_view l) { lines.emplace_back(l); };
  auto on_long = [&] { ++too_long; };
  r.feed("abc\r\n0123456789\nx", on_line, on_long);
  r.feed("y\n0123456789AB", on_line, on_long);
  EXPECT_EQ(too_long, 1) << "reported as soon as the line passes the limit (a CR before its end aside)";
  r.feed(std::string(1 << 20, 'z'), on_line, on_long);
  EXPECT_TRUE(r.rest().empty()) << "the long line's bytes are dropped as they arrive";
  r.feed("zz\nlast", on_line, on_long);
  EXPECT_EQ(lines, (std::vector<std::string>{"abc", "0123456789", "xy"}));
  EXPECT_EQ(too_long, 1);
  EXPECT_EQ(r.rest(), "last");
}
