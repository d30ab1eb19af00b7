// The openai backend against a real llama-server (built from the same llama.cpp) serving the tiny model
// on 127.0.0.1, and against a fault-injecting server: server down, slow answers past the timeout, 429 and
// 500 answers, truncated and malformed JSON bodies.
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <cmath>
#include <mutex>
#include <nlohmann/json.hpp>
#include <thread>

#include "helpers.h"
#include "llm/cache.h"
#include "llm/config.h"
#include "llm/llama_backend.h"
#include "llm/openai_backend.h"
#include "llm_fixtures.h"
#include "util/cancel.h"
#include "util/error.h"

using namespace repoctx;
using namespace repoctx::testing;
using nlohmann::json;

namespace {

LlamaServer& chat_server() {
  static LlamaServer s({"-np", "4"});
  return s;
}
LlamaServer& embed_server() {
  // docs/LLM.md's embedding server: the physical batch (-ub) stays at its default of 512 tokens.
  static LlamaServer s({"--embeddings", "--pooling", "mean"});
  return s;
}

OpenAiOptions opts(const std::vector<std::string>& eps) {
  OpenAiOptions o;
  o.endpoints = eps;
  o.model = "tiny";
  o.timeout_s = 60;
  o.retries = 2;
  o.backoff_s = 0.05;
  return o;
}

GenerateRequest chat(const std::string& text, int max_tokens = 12) {
  GenerateRequest r;
  r.messages = {{"user", text}};
  r.max_tokens = max_tokens;
  return r;
}

// Raw completion. llama-server's chat endpoint parses the reply and rejects a random model's output
// when the last token ends inside a UTF-8 sequence; the completion endpoint returns it as it is.
GenerateRequest raw(const std::string& text, int max_tokens = 12) {
  GenerateRequest r;
  r.prompt = text;
  r.max_tokens = max_tokens;
  return r;
}

// A scripted server listening on a free loopback port for the scope (stopped also when an assertion throws).
class ServedOnLoopback {
 public:
  explicit ServedOnLoopback(httplib::Server& svr) : svr_(svr), port_(svr.bind_to_any_port("127.0.0.1")) {
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    while (!svr_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~ServedOnLoopback() {
    svr_.stop();
    thread_.join();
  }
  std::string v1() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }

 private:
  httplib::Server& svr_;
  int port_;
  std::thread thread_;
};

}  // namespace

TEST(OpenAiBackend, ChatCompletionEmbeddingsAndLogprobsFromLlamaServer) {
  ASSERT_TRUE(chat_server().ready()) << "llama-server did not start";
  auto b = make_openai_backend(opts({chat_server().v1()}));
  auto a1 = b->generate(raw("Decompose: def add(a, b): return a + b"));
  auto a2 = b->generate(raw("Decompose: def add(a, b): return a + b"));
  ASSERT_EQ(a1.choices.size(), 1u);
  EXPECT_EQ(a1.choices[0].text, a2.choices[0].text);  // greedy
  EXPECT_GT(a1.choices[0].completion_tokens, 0);

  auto s = chat("steps please", 300);
  s.json_schema = R"({"type":"object","properties":{"verdict":{"enum":["yes","no"]},
      "reason":{"type":"string","maxLength":20}},"required":["verdict","reason"]})";
  for (int seed = 0; seed < 3; ++seed) {
    s.temperature = seed ? 0.9 : 0.0;
    s.seed = static_cast<uint64_t>(seed);
    auto g = b->generate(s);
    json j = json::parse(g.choices[0].text, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << g.choices[0].text;
    EXPECT_TRUE(j["verdict"] == "yes" || j["verdict"] == "no");
  }

  // The same model in-process and behind the server: log-probabilities of a continuation agree.
  LogprobRequest lr;
  lr.prompt = "def add(a, b):\n    return";
  lr.continuation = " a + b";
  auto remote = b->logprobs(lr);
  ASSERT_FALSE(remote.logprobs.empty());
  std::string joined;
  for (const auto& t : remote.tokens) joined += t;
  EXPECT_EQ(joined, lr.continuation);  // llama-server has no echo: the continuation was forced by a grammar
  // The in-process backend scoring the same token sequence gives the same log-probabilities.
  LlamaOptions lo;
  lo.model_path = tiny_ascii_model_path();
  LogprobRequest same = lr;
  same.continuation_tokens = remote.token_ids;
  auto local = make_llama_backend(lo)->logprobs(same);
  ASSERT_EQ(remote.logprobs.size(), local.logprobs.size());
  for (size_t i = 0; i < local.logprobs.size(); ++i) EXPECT_NEAR(remote.logprobs[i], local.logprobs[i], 1e-3) << i;

  ASSERT_TRUE(embed_server().ready());
  auto eb = make_openai_backend(opts({embed_server().v1()}));
  EmbedRequest er;
  er.texts = {"parse json", "mean of values"};
  auto ev = eb->embed(er);
  ASSERT_EQ(ev.vectors.size(), 2u);
  auto lv = make_llama_backend(lo)->embed(er);
  double dot = 0, n = 0;
  for (size_t i = 0; i < ev.vectors[0].size(); ++i) {
    dot += static_cast<double>(ev.vectors[0][i]) * lv.vectors[0][i];
    n += static_cast<double>(ev.vectors[0][i]) * ev.vectors[0][i];
  }
  EXPECT_NEAR(std::sqrt(n), 1.0, 1e-5);
  EXPECT_GT(dot, 0.99);  // same mean pooling of the same model

  // An input longer than the server's physical batch (512 tokens) is cut to it, not a failed request; the
  // server's context is read from /props.
  std::string long_text;
  for (int i = 0; i < 150; ++i)
    long_text += "def f" + std::to_string(i) + "(x):\n    return x + " + std::to_string(i) + "\n";
  EmbedRequest lr2;
  lr2.texts = {long_text, "short"};
  auto lv2 = eb->embed(lr2);
  ASSERT_EQ(lv2.vectors.size(), 2u);
  EXPECT_EQ(lv2.vectors[0].size(), ev.vectors[0].size());
  EXPECT_EQ(eb->context_length(), 4096);

  auto h = chat("x");
  h.hidden_states = true;
  try {
    b->generate(h);
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("hidden states are not available"), std::string::npos);
  }
}

TEST(OpenAiBackend, ConcurrentRequestsAndTheCache) {
  ASSERT_TRUE(chat_server().ready());
  TempDir d;
  auto o = opts({chat_server().v1()});
  o.concurrency = 4;
  auto cache = std::make_shared<LlmCache>(d.str() + "/c.db");
  CachedBackend cb(make_openai_backend(o), cache);
  std::vector<GenerateRequest> rs;
  for (int i = 0; i < 12; ++i) rs.push_back(raw("request number " + std::to_string(i), 8));
  rs[3].n = 3;
  rs[3].temperature = 0.8;
  auto t0 = std::chrono::steady_clock::now();
  auto out = cb.generate_many(rs);
  double first_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ASSERT_EQ(out.size(), 12u);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(out[i].choices.size(), i == 3 ? 3u : 1u);
  EXPECT_EQ(cache->stats().misses, 12);
  auto again = cb.generate_many(rs);
  EXPECT_EQ(cache->stats().hits, 12);
  for (size_t i = 0; i < out.size(); ++i) EXPECT_EQ(again[i].choices.size(), out[i].choices.size());
  (void)first_s;
}

TEST(OpenAiBackend, CachedResultsNeedNoServer) {
  ASSERT_TRUE(chat_server().ready());
  TempDir d;
  auto cache = std::make_shared<LlmCache>(d.str() + "/c.db");
  auto o = opts({chat_server().v1()});
  o.identity = "openai:tiny-fleet";
  std::vector<GenerateRequest> rs = {raw("one", 6), raw("two", 6)};
  std::vector<GenerateResult> first;
  {
    CachedBackend cb(make_openai_backend(o), cache);
    first = cb.generate_many(rs);
  }
  auto down = opts({"http://127.0.0.1:" + std::to_string(free_port()) + "/v1"});
  down.identity = "openai:tiny-fleet";
  down.retries = 0;
  CachedBackend cb2(make_openai_backend(down), cache);
  auto again = cb2.generate_many(rs);
  for (size_t i = 0; i < rs.size(); ++i) EXPECT_EQ(again[i].choices[0].text, first[i].choices[0].text);
}

// ------------------------------------------------------------------------------------------- faults
namespace {

// A scripted OpenAI-compatible server: each request to /v1/chat/completions takes the next behaviour.
class FaultServer {
 public:
  enum Behaviour {
    ok,
    http429,
    http500,
    slow,
    truncated,
    malformed,
    http400,
    http501,
    http408,
    null_content,
    no_choices,
    empty,
    huge,
    redirect,
    hang
  };
  explicit FaultServer(std::vector<Behaviour> script) : script_(std::move(script)) {
    svr_.Post("/v1/chat/completions", [this](const httplib::Request&, httplib::Response& res) {
      size_t i = calls_.fetch_add(1);
      Behaviour b = i < script_.size() ? script_[i] : ok;
      json good = {
          {"choices",
           json::array({{{"message", {{"role", "assistant"}, {"content", "fine"}}}, {"finish_reason", "stop"}}})},
          {"usage", {{"prompt_tokens", 3}, {"completion_tokens", 1}}}};
      switch (b) {
        case ok:
          res.set_content(good.dump(), "application/json");
          break;
        case http429:
          res.status = 429;
          res.set_header("Retry-After", "0");
          res.set_content(R"({"error":"rate limited"})", "application/json");
          break;
        case http500:
          res.status = 500;
          res.set_content(R"({"error":"boom"})", "application/json");
          break;
        case http400:
          res.status = 400;
          res.set_content(R"({"error":"bad request: unknown field"})", "application/json");
          break;
        case http501:
          res.status = 501;
          res.set_content(R"({"error":"not implemented"})", "application/json");
          break;
        case http408:
          res.status = 408;
          res.set_content(R"({"error":"request timeout"})", "application/json");
          break;
        case slow:
          std::this_thread::sleep_for(std::chrono::milliseconds(1500));
          res.set_content(good.dump(), "application/json");
          break;
        case truncated:
          res.set_content(good.dump().substr(0, 25), "application/json");
          break;
        case malformed:
          res.set_content("<html>proxy error</html>", "text/html");
          break;
        case null_content:
          res.set_content(R"({"choices":[{"message":{"role":"assistant","content":null}}]})", "application/json");
          break;
        case no_choices:
          res.set_content(R"({"id":"x","object":"chat.completion"})", "application/json");
          break;
        case empty:
          res.set_content(R"({"choices":[{"message":{"role":"assistant","content":""},"finish_reason":"stop"}]})",
                          "application/json");
          break;
        case huge:
          res.set_content("{\"choices\":[{\"message\":{\"content\":\"" + std::string(5 << 20, 'a') + "\"}}]}",
                          "application/json");
          break;
        case redirect:
          res.status = 302;
          res.set_header("Location", "http://127.0.0.1:9/v1/chat/completions");
          break;
        case hang:
          for (int k = 0; k < 3000 && !stopping_; ++k) std::this_thread::sleep_for(std::chrono::milliseconds(10));
          res.set_content(good.dump(), "application/json");
          break;
      }
    });
    port_ = svr_.bind_to_any_port("127.0.0.1");  // bound before the constructor returns
    thread_ = std::thread([this] { svr_.listen_after_bind(); });
    while (!svr_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  ~FaultServer() {
    stopping_ = true;
    svr_.stop();
    thread_.join();
  }
  std::string v1() const { return "http://127.0.0.1:" + std::to_string(port_) + "/v1"; }
  size_t calls() const { return calls_; }

 private:
  std::vector<Behaviour> script_;
  httplib::Server svr_;
  std::thread thread_;
  int port_ = 0;
  std::atomic<size_t> calls_{0};
  std::atomic<bool> stopping_{false};
};

std::string error_of(LlmBackend& b, const GenerateRequest& r) {
  try {
    b.generate(r);
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::llm);
    return e.what();
  }
  return "";
}

}  // namespace

TEST(OpenAiFaults, RetriesRecoverFromTransientFailures) {
  FaultServer s(
      {FaultServer::http429, FaultServer::http500, FaultServer::truncated, FaultServer::malformed, FaultServer::ok});
  auto o = opts({s.v1()});
  o.retries = 4;
  auto b = make_openai_backend(o);
  auto r = b->generate(chat("x"));
  EXPECT_EQ(r.choices[0].text, "fine");
  EXPECT_EQ(s.calls(), 5u);
}

TEST(OpenAiFaults, PersistentFailuresEndInAClearError) {
  {
    FaultServer s(std::vector<FaultServer::Behaviour>(10, FaultServer::http500));
    auto b = make_openai_backend(opts({s.v1()}));
    auto msg = error_of(*b, chat("x"));
    EXPECT_NE(msg.find("after 3 attempts"), std::string::npos) << msg;
    EXPECT_NE(msg.find("HTTP 500"), std::string::npos) << msg;
    EXPECT_EQ(s.calls(), 3u);
  }
  {
    FaultServer s(std::vector<FaultServer::Behaviour>(10, FaultServer::malformed));
    auto b = make_openai_backend(opts({s.v1()}));
    EXPECT_NE(error_of(*b, chat("x")).find("malformed or truncated JSON"), std::string::npos);
  }
  {
    FaultServer s({FaultServer::http400});
    auto b = make_openai_backend(opts({s.v1()}));
    auto msg = error_of(*b, chat("x"));
    EXPECT_NE(msg.find("rejected the request (HTTP 400)"), std::string::npos) << msg;
    EXPECT_EQ(s.calls(), 1u);  // a client error is not retried
  }
  {
    FaultServer s(std::vector<FaultServer::Behaviour>(10, FaultServer::http501));
    auto b = make_openai_backend(opts({s.v1()}));
    auto msg = error_of(*b, chat("x"));
    EXPECT_NE(msg.find("HTTP 501"), std::string::npos) << msg;
    EXPECT_EQ(s.calls(), 1u);  // Not Implemented is permanent: not retried
  }
  {
    FaultServer s({FaultServer::http408, FaultServer::ok});
    auto b = make_openai_backend(opts({s.v1()}));
    EXPECT_EQ(b->generate(chat("x")).choices[0].text, "fine");  // Request Timeout is transient
    EXPECT_EQ(s.calls(), 2u);
  }
  {
    auto o = opts({"http://127.0.0.1:" + std::to_string(free_port()) + "/v1"});  // server down
    auto b = make_openai_backend(o);
    auto msg = error_of(*b, chat("x"));
    EXPECT_NE(msg.find("127.0.0.1"), std::string::npos) << msg;
  }
}

TEST(OpenAiFaults, SlowAnswersTimeOutAndFailOverToTheNextEndpoint) {
  FaultServer slow(std::vector<FaultServer::Behaviour>(10, FaultServer::slow));
  FaultServer good({});
  auto o = opts({slow.v1(), good.v1()});
  o.timeout_s = 0.4;
  o.retries = 1;
  auto b = make_openai_backend(o);
  // Two requests: whichever endpoint each starts on, a timeout moves it to the healthy one.
  EXPECT_EQ(b->generate(chat("a")).choices[0].text, "fine");
  EXPECT_EQ(b->generate(chat("b")).choices[0].text, "fine");
  auto only_slow = opts({slow.v1()});
  only_slow.timeout_s = 0.4;
  only_slow.retries = 1;
  auto b2 = make_openai_backend(only_slow);
  auto msg = error_of(*b2, chat("c"));
  EXPECT_NE(msg.find("imeout"), std::string::npos) << msg;
}

TEST(OpenAiFaults, CompletedWorkIsNotLostWhenARequestFails) {
  // Request 2 meets 500s until retries run out; the others succeed and stay in the cache.
  FaultServer s({FaultServer::ok, FaultServer::ok, FaultServer::http500, FaultServer::http500, FaultServer::http500,
                 FaultServer::ok});
  TempDir d;
  auto cache = std::make_shared<LlmCache>(d.str() + "/c.db");
  auto o = opts({s.v1()});
  o.concurrency = 1;
  o.retries = 2;
  CachedBackend cb(make_openai_backend(o), cache);
  std::vector<GenerateRequest> rs = {chat("r0"), chat("r1"), chat("r2"), chat("r3")};
  EXPECT_THROW(cb.generate_many(rs), Error);
  for (int i : {0, 1, 3}) EXPECT_TRUE(cache->get(cb.key_of(rs[static_cast<size_t>(i)].to_json())).has_value()) << i;
  EXPECT_FALSE(cache->get(cb.key_of(rs[2].to_json())).has_value());
  // Resuming repeats only the failed request.
  size_t before = s.calls();
  auto out = cb.generate_many(rs);
  EXPECT_EQ(s.calls() - before, 1u);
  EXPECT_EQ(out[2].choices[0].text, "fine");
}

// Issue 21, item 7: a server that answers valid JSON of the wrong shape, an empty text, a huge body, a
// redirect, or nothing at all.
TEST(OpenAiFaults, WrongShapesAreClearErrorsAndNothingWrongIsCached) {
  TempDir d;
  auto cache = std::make_shared<LlmCache>(d.str() + "/c.db");
  for (auto b : {FaultServer::null_content, FaultServer::no_choices}) {
    FaultServer s(std::vector<FaultServer::Behaviour>(10, b));
    CachedBackend cb(make_openai_backend(opts({s.v1()})), cache);
    auto msg = error_of(cb, chat("x"));
    EXPECT_NE(msg.find("unexpected shape"), std::string::npos) << msg;
    EXPECT_EQ(msg.find("json.exception"), std::string::npos) << msg;
    EXPECT_EQ(s.calls(), 1u);  // not retried: a wrong shape is no transient failure
    error_of(cb, chat("x"));
    EXPECT_EQ(s.calls(), 2u) << "nothing was cached";
  }
  FaultServer s({FaultServer::empty, FaultServer::empty});
  CachedBackend cb(make_openai_backend(opts({s.v1()})), cache);
  EXPECT_EQ(cb.generate(chat("y")).choices.at(0).text, "");
  EXPECT_EQ(cb.generate(chat("y")).choices.at(0).text, "");
  EXPECT_EQ(s.calls(), 2u) << "an empty answer is returned, never cached";
  EXPECT_FALSE(cache->get(cb.key_of(chat("y").to_json())).has_value());
}

TEST(OpenAiFaults, BodiesPastTheCapAndRedirectsAreRefusedAtOnce) {
  FaultServer big({FaultServer::huge});
  auto o = opts({big.v1()});
  o.max_response_bytes = 1 << 20;
  auto b = make_openai_backend(o);
  auto msg = error_of(*b, chat("x"));
  EXPECT_NE(msg.find("larger than 1 MiB"), std::string::npos) << msg;
  EXPECT_EQ(big.calls(), 1u);
  FaultServer moved({FaultServer::redirect});
  auto b2 = make_openai_backend(opts({moved.v1()}));
  msg = error_of(*b2, chat("x"));
  EXPECT_NE(msg.find("redirect to http://127.0.0.1:9/v1/chat/completions (not followed"), std::string::npos) << msg;
  EXPECT_EQ(moved.calls(), 1u);
}

TEST(OpenAiFaults, AnInterruptStopsAHungRequest) {
  FaultServer s(std::vector<FaultServer::Behaviour>(10, FaultServer::hang));
  auto o = opts({s.v1()});
  o.timeout_s = 300;  // the old worst case: every attempt waited for it
  auto b = make_openai_backend(o);
  g_interrupted = false;
  std::thread stopper([] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    g_interrupted = true;
  });
  try {
    b->generate(chat("x"));
    ADD_FAILURE() << "no error";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::interrupted) << e.what();
  }
  stopper.join();
  g_interrupted = false;
  EXPECT_EQ(s.calls(), 1u);  // no retry after the interrupt
}

// What servers say about an input longer than they accept, and the limit their message names.
TEST(OpenAiLimits, TooLargeAnswersAreRecognisedWithTheirLimit) {
  auto llama_batch = openai_input_too_large(
      500, R"J({"error":{"code":500,"message":"input (1650 tokens) is too large to process. increase the )J"
           R"J(physical batch size (current batch size: 512)","type":"server_error"}})J");
  EXPECT_TRUE(llama_batch.too_large);
  EXPECT_EQ(llama_batch.limit, 512);
  auto llama_ctx = openai_input_too_large(
      400, R"J({"error":{"code":400,"message":"request (3300 tokens) exceeds the available context size )J"
           R"J((2048 tokens), try increasing it","type":"exceed_context_size_error","n_prompt_tokens":3300,)J"
           R"J("n_ctx":2048}})J");
  EXPECT_TRUE(llama_ctx.too_large);
  EXPECT_EQ(llama_ctx.limit, 2048);
  auto vllm = openai_input_too_large(
      400, R"J({"object":"error","message":"This model's maximum context length is 512 tokens. However, you )J"
           R"J(requested 878 tokens in the input for embedding generation.","type":"BadRequestError","code":400})J");
  EXPECT_TRUE(vllm.too_large);
  EXPECT_EQ(vllm.limit, 512);
  EXPECT_FALSE(openai_input_too_large(500, R"J({"error":{"message":"out of memory"}})J").too_large);
  EXPECT_FALSE(openai_input_too_large(200, "input is too large to process").too_large);
}

// A server shaped like vLLM: no /props and no llama-server /tokenize, max_model_len in /v1/models, and a
// 400 naming its limit for an input over 64 tokens (counted here as 4 bytes a token). The long input is
// cut (by bytes) until accepted, the short one is sent whole, and the limit is learnt once: the second
// call needs no refused request.
TEST(OpenAiLimits, AServerWithoutATokenizerGetsInputsCutByBytes) {
  httplib::Server svr;
  std::atomic<int> refused{0}, accepted{0};
  std::vector<size_t> last_sizes;
  std::mutex mu;
  svr.Get("/v1/models", [](const httplib::Request&, httplib::Response& res) {
    res.set_content(R"({"object":"list","data":[{"id":"m","object":"model","max_model_len":640}]})",
                    "application/json");
  });
  svr.Post("/v1/embeddings", [&](const httplib::Request& req, httplib::Response& res) {
    json in = json::parse(req.body)["input"];
    json data = json::array();
    std::lock_guard lk(mu);
    last_sizes.clear();
    for (size_t i = 0; i < in.size(); ++i) {
      size_t bytes = in[i].get<std::string>().size();
      last_sizes.push_back(bytes);
      if ((bytes + 3) / 4 > 64) {
        ++refused;
        res.status = 400;
        res.set_content(
            json{{"object", "error"},
                 {"message", "This model's maximum context length is 64 tokens. However, you requested " +
                                 std::to_string((bytes + 3) / 4) + " tokens in the input for embedding generation."},
                 {"code", 400}}
                .dump(),
            "application/json");
        return;
      }
      data.push_back({{"index", i}, {"embedding", {1.0, static_cast<double>(bytes)}}});
    }
    ++accepted;
    res.set_content(json{{"data", data}}.dump(), "application/json");
  });
  ServedOnLoopback served(svr);
  auto o = opts({served.v1()});
  o.model = "m";
  auto b = make_openai_backend(o);
  EXPECT_EQ(b->context_length(), 640);
  EmbedRequest r;
  r.texts = {std::string(2000, 'x'), "short"};
  auto v = b->embed(r);
  ASSERT_EQ(v.vectors.size(), 2u);
  EXPECT_GE(refused.load(), 1);
  {
    std::lock_guard lk(mu);
    ASSERT_EQ(last_sizes.size(), 2u);
    EXPECT_LE(last_sizes[0], 256u);  // 64 tokens
    EXPECT_GE(last_sizes[0], 64u);   // not cut to nothing
    EXPECT_EQ(last_sizes[1], 5u);    // the short input whole
  }
  int before = refused.load();
  r.texts = {std::string(3000, 'y')};
  b->embed(r);
  EXPECT_EQ(refused.load(), before);  // the learnt limit cut it before sending
}

TEST(OpenAiConfig, EndpointsMayComeFromTheCommandLine) {
  LlmConfig c;
  c.apply_json(json::parse(R"({"llm": {"backend": "openai", "model": "m"}})"));
  EXPECT_THROW(c.llm.validate("the LLM", ""), Error);  // nothing gives an endpoint yet
  c.llm.openai.endpoints = {"http://127.0.0.1:1/v1"};  // what --endpoint does
  EXPECT_NO_THROW(c.llm.validate("the LLM", ""));
  LlmConfig bad;
  try {
    bad.apply_json(json::parse(R"({"llm": {"backend": "openai", "endpoints": "not-a-list"}})"));
    ADD_FAILURE();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input) << e.what();
  }
  // A response limit out of range is refused before any conversion (the fuzzer found 6.7e46 MB).
  for (const char* mb : {"6666666666666666666666666666666666666666668", "0", "-3"}) {
    LlmConfig c2;
    try {
      c2.apply_json(json::parse(std::string(R"({"llm": {"backend": "openai", "max_response_mb": )") + mb + "}}"));
      ADD_FAILURE() << mb;
    } catch (const Error& e) {
      EXPECT_EQ(e.code(), ExitCode::bad_input) << e.what();
      EXPECT_NE(std::string(e.what()).find("max_response_mb"), std::string::npos) << e.what();
    }
  }
  LlmConfig ok;
  ok.apply_json(json::parse(R"({"llm": {"backend": "openai", "max_response_mb": 2}})"));
  EXPECT_EQ(ok.llm.openai.max_response_bytes, size_t{2} << 20);
}

// Native tool calling on the wire: the request carries `tools` and `tool_choice`, an assistant's earlier calls
// as `tool_calls` (id, type function, name, arguments text) and each tool's answer as a `tool` message with its
// `tool_call_id`; a reply whose message calls tools with a null content is a generation with those calls.
TEST(OpenAiToolCalls, RequestsAndRepliesHaveTheApiShapes) {
  httplib::Server svr;
  json seen;
  std::mutex mu;
  svr.Post("/v1/chat/completions", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard lk(mu);
    seen = json::parse(req.body);
    json call = {{"id", "call_7"},
                 {"type", "function"},
                 {"function", {{"name", "search_class"}, {"arguments", R"({"class_name":"Report"})"}}}};
    res.set_content(json{{"choices",
                          {{{"index", 0},
                            {"finish_reason", "tool_calls"},
                            {"message", {{"role", "assistant"}, {"content", nullptr}, {"tool_calls", {call}}}}}}},
                         {"usage", {{"prompt_tokens", 10}, {"completion_tokens", 5}}}}
                        .dump(),
                    "application/json");
  });
  ServedOnLoopback served(svr);
  auto b = make_openai_backend(opts({served.v1()}));
  EXPECT_TRUE(b->capabilities().tool_calls);
  GenerateRequest r = chat("find the report");
  r.messages.push_back({"assistant", "", {{"call_1", "search_method", R"({"method_name":"summarize"})"}}});
  r.messages.push_back({"tool", "def summarize(self, key): ...", {}, "call_1"});
  r.tools = json::array({{{"type", "function"},
                          {"function",
                           {{"name", "search_class"},
                            {"description", "a class"},
                            {"parameters",
                             {{"type", "object"},
                              {"properties", {{"class_name", {{"type", "string"}}}}},
                              {"required", {"class_name"}},
                              {"additionalProperties", false}}}}}}});
  r.tool_choice = "auto";
  GenerateResult g = b->generate(r);
  ASSERT_EQ(g.choices.size(), 1u);
  ASSERT_EQ(g.choices[0].tool_calls.size(), 1u);
  EXPECT_EQ(g.choices[0].tool_calls[0].id, "call_7");
  EXPECT_EQ(g.choices[0].tool_calls[0].name, "search_class");
  EXPECT_EQ(json::parse(g.choices[0].tool_calls[0].arguments)["class_name"], "Report");
  EXPECT_EQ(g.choices[0].text, "");
  std::lock_guard lk(mu);
  EXPECT_EQ(seen["tools"], r.tools);
  EXPECT_EQ(seen["tool_choice"], "auto");
  const json& ms = seen["messages"];
  ASSERT_EQ(ms.size(), 3u);
  EXPECT_EQ(ms[1]["tool_calls"][0]["id"], "call_1");
  EXPECT_EQ(ms[1]["tool_calls"][0]["type"], "function");
  EXPECT_EQ(ms[1]["tool_calls"][0]["function"]["name"], "search_method");
  EXPECT_EQ(ms[1]["tool_calls"][0]["function"]["arguments"], R"({"method_name":"summarize"})");
  EXPECT_EQ(ms[2]["role"], "tool");
  EXPECT_EQ(ms[2]["tool_call_id"], "call_1");
  EXPECT_FALSE(ms[0].contains("tool_calls"));
  // Tools are part of the cache key; a request without them keeps the key it always had.
  GenerateRequest plain = chat("find the report");
  EXPECT_FALSE(plain.to_json().contains("tools"));
  EXPECT_NE(r.to_json().dump(), plain.to_json().dump());
}

// llama-server's own tool calling (--jinja, with Qwen2.5's chat template, which has tools) and the tiny
// model: the server takes the request in the shape the ReAct agent sends on its second turn (tools, an
// assistant's earlier call, the tool's answer by call id) and answers in a shape the backend reads. A random
// model is not made to call a tool: the server's tool grammar lets text come before a call, and it writes
// text until max_tokens (the scripted server above checks the calls' shapes).
TEST(OpenAiToolCalls, LlamaServerTakesToolsAndToolMessages) {
  static LlamaServer jinja({"--jinja", "--chat-template-file", REPOCTX_TOOL_TEMPLATE, "-np", "1"});
  ASSERT_TRUE(jinja.ready()) << "llama-server --jinja did not start";
  auto b = make_openai_backend(opts({jinja.v1()}));
  GenerateRequest r = chat("Find the class Report.", 16);
  r.messages.push_back({"assistant", "", {{"call_1", "search_class", R"({"name":"Report"})"}}});
  r.messages.push_back({"tool", "class Report: ...", {}, "call_1"});
  r.tools = json::array();
  for (const char* name : {"search_class", "search_method"})
    r.tools.push_back({{"type", "function"},
                       {"function",
                        {{"name", name},
                         {"description", "search the code"},
                         {"parameters",
                          {{"type", "object"},
                           {"properties", {{"name", {{"type", "string"}, {"enum", {"Report", "summarize"}}}}}},
                           {"required", {"name"}},
                           {"additionalProperties", false}}}}}});
  for (const char* choice : {"auto", "required"}) {
    r.tool_choice = choice;
    GenerateResult g = b->generate(r);
    ASSERT_EQ(g.choices.size(), 1u) << choice;
    for (const auto& c : g.choices[0].tool_calls) {
      EXPECT_TRUE(c.name == "search_class" || c.name == "search_method") << c.name;
      EXPECT_TRUE(json::parse(c.arguments, nullptr, false).is_object()) << c.arguments;
    }
    EXPECT_GT(g.prompt_tokens, 0);
  }
  // With --no-jinja the server refuses tools: the error the ReAct agent falls back on.
  static LlamaServer no_jinja({"--no-jinja", "-np", "1"});
  ASSERT_TRUE(no_jinja.ready());
  GenerateRequest plain_server = r;
  auto o = opts({no_jinja.v1()});
  o.retries = 0;
  auto refusing = make_openai_backend(o);
  try {
    refusing->generate(plain_server);
    ADD_FAILURE() << "a server without --jinja took tools";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::llm);
    EXPECT_NE(std::string(e.what()).find("jinja"), std::string::npos) << e.what();
  }
}
