// `repoctx bench-llm`: costs of the LLM runtime, measured in one run on generated random-weight models
// (the tiny test model and one shaped like Qwen2.5-0.5B): prompt processing and generation tokens/s of
// the llama backend, the overhead of capturing hidden states versus plain decoding (same model, same
// prompt), and the openai backend's throughput against a real llama-server at several concurrencies.
// Backends are used without the cache: this measures the runtime, not cache hits.
#include "bench/llm.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <signal.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <thread>

#include "llm/llama_backend.h"
#include "llm/openai_backend.h"
#include "llm/test_model.h"
#include "util/error.h"
#include "util/log.h"
#include "util/temp_dir.h"

extern char** environ;
namespace fs = std::filesystem;
using nlohmann::json;

namespace repoctx {
namespace {

double now_s() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double median_of(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

std::string long_prompt(int words) {
  std::string p = "Explain step by step what this code does:\n";
  for (int i = 0; i < words; ++i)
    p += "value_" + std::to_string(i % 97) + " = compute(data, " + std::to_string(i) + ")\n";
  return p;
}

json bench_llama(const std::string& model, const BenchLlmOptions& o) {
  LlamaOptions lo;
  lo.model_path = model;
  lo.threads = o.threads;
  lo.ctx = 4096;
  auto b = make_llama_backend(lo);
  json j;
  // Prompt processing: a long prompt, one generated token.
  GenerateRequest pp;
  pp.prompt = long_prompt(120);
  pp.max_tokens = 1;
  b->generate(pp);  // warm-up
  std::vector<double> pps;
  int prompt_tokens = 0;
  for (int i = 0; i < o.repeat; ++i) {
    double t0 = now_s();
    auto r = b->generate(pp);
    pps.push_back(static_cast<double>(r.prompt_tokens) / (now_s() - t0));
    prompt_tokens = r.prompt_tokens;
  }
  j["prompt_tokens"] = prompt_tokens;
  j["prompt_tok_per_s"] = median_of(pps);
  // Generation with and without hidden states: same model, same prompt, same greedy tokens.
  GenerateRequest g;
  g.messages = {{"user", "Reason about the implementation of a function that validates its inputs."}};
  g.max_tokens = o.gen_tokens;
  std::vector<double> plain, hidden;
  int gen = 0;
  for (int i = 0; i < o.repeat; ++i) {
    for (bool h : {false, true}) {  // interleaved, so drift affects both alike
      g.hidden_states = h;
      double t0 = now_s();
      auto r = b->generate(g);
      double dt = now_s() - t0;
      gen = r.choices[0].completion_tokens;
      (h ? hidden : plain).push_back(static_cast<double>(gen) / dt);
    }
  }
  j["generated_tokens"] = gen;
  j["gen_tok_per_s"] = median_of(plain);
  j["gen_tok_per_s_hidden"] = median_of(hidden);
  j["hidden_overhead_pct"] = 100.0 * (median_of(plain) / median_of(hidden) - 1.0);
  j["hidden_dim"] = b->hidden_dim();
  return j;
}

struct Server {
  pid_t pid = -1;
  int port = 0;
  ~Server() {
    if (pid > 0) {
      kill(pid, SIGTERM);
      int st;
      waitpid(pid, &st, 0);
    }
  }
};

int pick_port() {
  return 20000 + static_cast<int>(getpid() % 20000);
}

// Starts llama-server on `model_path` with `slots` parallel slots, its output into `log`.
void start_server(Server& s, const BenchLlmOptions& o, const std::string& model_path, int slots,
                  const std::string& log) {
  std::vector<std::string> args = {o.server_bin,
                                   "-m",
                                   model_path,
                                   "--host",
                                   "127.0.0.1",
                                   "--port",
                                   std::to_string(s.port),
                                   "-c",
                                   std::to_string(512 * slots),
                                   "-np",
                                   std::to_string(slots),
                                   "-t",
                                   std::to_string(o.threads > 0 ? o.threads : 2),
                                   "--no-webui"};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, log.c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
  if (posix_spawn(&s.pid, argv[0], &fa, nullptr, argv.data(), environ) != 0)
    throw Error(ExitCode::not_found, "cannot start llama-server '" + o.server_bin + "'");
  posix_spawn_file_actions_destroy(&fa);
}

// Waits (up to a minute) for the server to answer a one-token completion.
void wait_for_server(const OpenAiOptions& oo, const std::string& log) {
  bool up = false;
  for (int i = 0; i < 300 && !up; ++i) {
    try {
      auto probe = make_openai_backend(oo);
      GenerateRequest r;
      r.prompt = "hi";
      r.max_tokens = 1;
      probe->generate(r);  // raw completion: see below
      up = true;
    } catch (...) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
    }
  }
  if (!up) throw Error(ExitCode::llm, "llama-server did not come up (log: " + log + ")");
}

// Completion throughput at each concurrency: requests per second and completion tokens per second.
json server_throughput(OpenAiOptions oo, const std::vector<int>& concurrency) {
  json th = json::array();
  for (int c : concurrency) {
    oo.concurrency = c;
    auto b = make_openai_backend(oo);
    std::vector<GenerateRequest> rs;
    for (int i = 0; i < std::max(16, 2 * c); ++i) {
      // Raw completions: llama-server's chat parser rejects a random model's output when a token cut
      // in the middle of a UTF-8 sequence ends it; /v1/completions does not parse.
      GenerateRequest r;
      r.prompt = "request " + std::to_string(i) + ": describe a step";
      r.max_tokens = 32;
      r.seed = static_cast<uint64_t>(i);
      rs.push_back(r);
    }
    double t0 = now_s();
    auto out = b->generate_many(rs);
    double dt = now_s() - t0;
    int tokens = 0;
    for (const auto& r : out) tokens += r.choices[0].completion_tokens;
    th.push_back({{"concurrency", c},
                  {"requests", rs.size()},
                  {"seconds", dt},
                  {"requests_per_s", rs.size() / dt},
                  {"completion_tok_per_s", tokens / dt}});
  }
  return th;
}

// llama-server through the OpenAI backend. The server gets the tiny model biased to ASCII tokens
// (llama-server rejects replies that end inside a UTF-8 sequence, which a random model's byte tokens often
// produce).
json bench_openai_server(const BenchLlmOptions& o, const fs::path& tmp, const TestModelSpec& tiny) {
  TestModelSpec tiny_ascii = tiny;
  tiny_ascii.out_path = (tmp / "tiny-ascii.gguf").string();
  tiny_ascii.ascii_only = true;
  write_test_model(tiny_ascii);
  Server s;
  s.port = pick_port();
  int slots = *std::max_element(o.concurrency.begin(), o.concurrency.end());
  std::string log = (tmp / "server.log").string();
  start_server(s, o, tiny_ascii.out_path, slots, log);
  OpenAiOptions oo;
  oo.endpoints = {"http://127.0.0.1:" + std::to_string(s.port) + "/v1"};
  oo.model = "tiny";
  oo.retries = 0;
  wait_for_server(oo, log);
  json th = server_throughput(oo, o.concurrency);
  return {{"model", "tiny"}, {"slots", slots}, {"runs", th}};
}

}  // namespace

json run_bench_llm(const BenchLlmOptions& o) {
  TempDir scratch("repoctx-bench-llm-");
  const fs::path& tmp = scratch.path();
  json rep;
  TestModelSpec tiny;
  tiny.vocab_path = default_vocab_path();
  tiny.out_path = (tmp / "tiny.gguf").string();
  write_test_model(tiny);
  log_info("bench-llm: tiny model (hidden {}, {} layers)", tiny.hidden, tiny.layers);
  rep["tiny"] = bench_llama(tiny.out_path, o);
  if (o.large) {
    TestModelSpec big = tiny;
    big.out_path = (tmp / "qwen2.5-0.5b-shaped.gguf").string();
    big.hidden = 896, big.layers = 24, big.heads = 14, big.kv_heads = 2, big.ff = 4864, big.f16 = true, big.tied = true;
    log_info("bench-llm: writing a random model shaped like Qwen2.5-0.5B (f16, ~1 GB)");
    write_test_model(big);
    rep["qwen2.5-0.5b-shaped"] = bench_llama(big.out_path, o);
  }
  if (!o.server_bin.empty()) rep["openai_llama_server"] = bench_openai_server(o, tmp, tiny);
  return rep;
}

std::string bench_llm_markdown(const json& r) {
  std::string out =
      "| model | prompt tok/s | gen tok/s | gen tok/s capturing hidden states | hidden-state overhead "
      "|\n|---|---|---|---|---|\n";
  for (const char* k : {"tiny", "qwen2.5-0.5b-shaped"}) {
    if (!r.contains(k)) continue;
    const json& m = r[k];
    out += fmt::format("| {} (hidden {}) | {:.0f} | {:.1f} | {:.1f} | {:+.1f}% |\n", k, m["hidden_dim"].get<int>(),
                       m["prompt_tok_per_s"].get<double>(), m["gen_tok_per_s"].get<double>(),
                       m["gen_tok_per_s_hidden"].get<double>(), m["hidden_overhead_pct"].get<double>());
  }
  if (r.contains("openai_llama_server")) {
    out += "\nopenai backend against llama-server (tiny model, " +
           std::to_string(r["openai_llama_server"]["slots"].get<int>()) + " slots, 32 tokens per request):\n\n";
    out += "| concurrency | requests | seconds | requests/s | completion tok/s |\n|---|---|---|---|---|\n";
    for (const auto& t : r["openai_llama_server"]["runs"])
      out += fmt::format("| {} | {} | {:.2f} | {:.1f} | {:.0f} |\n", t["concurrency"].get<int>(),
                         t["requests"].get<int>(), t["seconds"].get<double>(), t["requests_per_s"].get<double>(),
                         t["completion_tok_per_s"].get<double>());
  }
  return out;
}

}  // namespace repoctx
