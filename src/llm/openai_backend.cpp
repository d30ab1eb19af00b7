#include "llm/openai_backend.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <mutex>
#include <random>
#include <thread>

#include "util/cancel.h"
#include "util/dynlib.h"
#include "util/error.h"
#include "util/log.h"

namespace repoctx {

using nlohmann::json;

namespace {

// libcurl's entry points, resolved at first use (util/dynlib.h says why not at program start); the header
// gives their exact types. Constructing it runs curl_global_init once.
struct Curl {
  DynLib lib{{"libcurl.so.4"}, "install libcurl4 (apt)"};
  decltype(&curl_global_init) global_init = lib.function<decltype(curl_global_init)>("curl_global_init");
  decltype(&curl_easy_init) easy_init = lib.function<decltype(curl_easy_init)>("curl_easy_init");
  decltype(&curl_easy_setopt) easy_setopt = lib.function<decltype(curl_easy_setopt)>("curl_easy_setopt");
  decltype(&curl_easy_perform) easy_perform = lib.function<decltype(curl_easy_perform)>("curl_easy_perform");
  decltype(&curl_easy_getinfo) easy_getinfo = lib.function<decltype(curl_easy_getinfo)>("curl_easy_getinfo");
  decltype(&curl_easy_strerror) easy_strerror = lib.function<decltype(curl_easy_strerror)>("curl_easy_strerror");
  decltype(&curl_easy_cleanup) easy_cleanup = lib.function<decltype(curl_easy_cleanup)>("curl_easy_cleanup");
  decltype(&curl_slist_append) slist_append = lib.function<decltype(curl_slist_append)>("curl_slist_append");
  decltype(&curl_slist_free_all) slist_free_all = lib.function<decltype(curl_slist_free_all)>("curl_slist_free_all");
  Curl() { global_init(CURL_GLOBAL_DEFAULT); }
};

const Curl& curl() {
  static const Curl c;  // thread-safe initialisation
  return c;
}

struct HttpResponse {
  CURLcode curl = CURLE_OK;
  long status = 0;
  std::string body;
  double retry_after_s = -1;
  std::string error;
  std::string redirect;      // the Location of a 3xx answer (never followed)
  size_t max_body = 0;       // the cap on the body's size
  bool too_large = false;    // the body passed the cap: the transfer was aborted
  bool interrupted = false;  // SIGINT/SIGTERM during the transfer: aborted
};

size_t write_cb(char* ptr, size_t size, size_t nmemb, void* user) {
  auto* resp = static_cast<HttpResponse*>(user);
  size_t n = size * nmemb;
  if (resp->body.size() + n > resp->max_body) {
    resp->too_large = true;
    return 0;  // curl aborts the transfer (CURLE_WRITE_ERROR)
  }
  resp->body.append(ptr, n);
  return n;
}

// Called by curl about once a second and on every transfer event, also while a server sends nothing.
int progress_cb(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  if (!interrupted()) return 0;
  static_cast<HttpResponse*>(user)->interrupted = true;
  return 1;  // aborts the transfer (CURLE_ABORTED_BY_CALLBACK)
}

size_t header_cb(char* buf, size_t size, size_t n, void* user) {
  std::string line(buf, size * n);
  auto* resp = static_cast<HttpResponse*>(user);
  std::string lower = line;
  std::transform(lower.begin(), lower.end(), lower.begin(), [](unsigned char c) { return std::tolower(c); });
  if (lower.rfind("retry-after:", 0) == 0) {
    try {
      resp->retry_after_s = std::stod(line.substr(12));
    } catch (...) {
    }
  }
  return size * n;
}

// Sleeps `seconds` in short slices, so that SIGINT/SIGTERM stops a backoff at once.
void interruptible_sleep(double seconds) {
  auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < until) {
    throw_if_interrupted("the LLM results received so far are cached");
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// A response of the wrong shape: valid JSON, but not what the OpenAI API specifies. Never retried, never
// cached: the message names the endpoint and what was missing.
Error bad_shape(const std::string& where, const std::string& what, const json& j) {
  std::string sample = j.dump(-1, ' ', false, json::error_handler_t::replace);
  if (sample.size() > 300) sample = sample.substr(0, 300) + "...";
  return Error(ExitCode::llm, where + " answered JSON of an unexpected shape (" + what + "): " + sample +
                                  " -- is the endpoint an OpenAI-compatible /v1 URL?");
}

std::string trim_slash(std::string s) {
  while (!s.empty() && s.back() == '/') s.pop_back();
  return s;
}

// The server's root, where llama-server has /props, /tokenize and /detokenize beside /v1.
std::string server_root(const std::string& endpoint) {
  const std::string v1 = "/v1";
  if (endpoint.size() >= v1.size() && endpoint.compare(endpoint.size() - v1.size(), v1.size(), v1) == 0)
    return endpoint.substr(0, endpoint.size() - v1.size());
  return endpoint;
}

std::string lowercase(std::string s) {
  std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
  return s;
}

// The integer that follows `marker` in `text` (digits after optional spaces), else 0.
int number_after(const std::string& text, const std::string& marker) {
  size_t at = text.find(marker);
  if (at == std::string::npos) return 0;
  size_t i = at + marker.size();
  while (i < text.size() && text[i] == ' ') ++i;
  int n = 0;
  for (; i < text.size() && std::isdigit(static_cast<unsigned char>(text[i])) && n < 100000000; ++i)
    n = n * 10 + (text[i] - '0');
  return n;
}

// `text` cut to at most `bytes` bytes, not inside a UTF-8 sequence.
std::string cut_utf8(const std::string& text, size_t bytes) {
  if (text.size() <= bytes) return text;
  while (bytes > 0 && (static_cast<unsigned char>(text[bytes]) & 0xC0) == 0x80) --bytes;
  return text.substr(0, bytes);
}

// Tokens a server adds to an embedding input (BOS, EOS, separators) beyond the text's own.
constexpr int kSpecialTokens = 4;
// Bytes a token of code spans, at the low end (indented Python with qwen2's BPE: 4,200 bytes are 1,650
// tokens), for servers that do not tokenize for us.
constexpr double kBytesPerTokenLow = 2.0;

}  // namespace

InputTooLarge openai_input_too_large(long status, const std::string& body) {
  InputTooLarge out;
  if (status != 400 && status != 413 && status != 500) return out;
  std::string msg = body;
  json j = json::parse(body, nullptr, false);
  int n_ctx = 0;
  if (j.is_object() && j.contains("error")) {
    const json& e = j["error"];
    if (e.is_object() && e.contains("message") && e["message"].is_string()) msg = e["message"].get<std::string>();
    if (e.is_object() && e.contains("n_ctx") && e["n_ctx"].is_number_integer()) n_ctx = e["n_ctx"].get<int>();
  } else if (j.is_object() && j.contains("message") && j["message"].is_string()) {
    msg = j["message"].get<std::string>();  // vLLM's error shape
  }
  std::string m = lowercase(msg);
  // llama-server: "input (878 tokens) is too large to process. increase the physical batch size (current batch
  // size: 512)", "input (N tokens) is larger than the max context size (2048 tokens)", "request (3300 tokens)
  // exceeds the available context size (2048 tokens)"; vLLM: "This model's maximum context length is 512 tokens.
  // However, you requested 878 tokens ...".
  for (const char* marker : {"too large to process", "larger than the max context size",
                             "exceeds the available context size", "maximum context length"})
    if (m.find(marker) != std::string::npos) out.too_large = true;
  if (!out.too_large) return out;
  for (const char* marker :
       {"current batch size:", "max context size (", "available context size (", "maximum context length is"})
    if (int n = number_after(m, marker); n > 0) {
      out.limit = n;
      break;
    }
  if (out.limit == 0) out.limit = n_ctx;
  return out;
}

// One chat message in the API's shape: an assistant's tool calls as `tool_calls` (function name and
// arguments text), a tool's answer with its `tool_call_id`.
static json openai_message(const ChatMessage& m) {
  json j = {{"role", m.role}, {"content", m.content}};
  if (!m.tool_calls.empty()) {
    json calls = json::array();
    for (const auto& c : m.tool_calls)
      calls.push_back(
          {{"id", c.id}, {"type", "function"}, {"function", {{"name", c.name}, {"arguments", c.arguments}}}});
    j["tool_calls"] = calls;
  }
  if (!m.tool_call_id.empty()) j["tool_call_id"] = m.tool_call_id;
  return j;
}

// choices[0] of a completion: its text must be a string (a null or missing one is an error, not an empty
// answer that would be cached and served forever).
GenerateResult openai_generation_from_json(const json& j, const std::string& where, bool chat) {
  auto int_field = [](const json& o, const char* key) {
    auto it = o.find(key);
    return it != o.end() && it->is_number_integer() ? it->get<int>() : 0;
  };
  GenerateResult out;
  if (!j.is_object()) throw bad_shape(where, "not a JSON object", j);
  auto usage = j.find("usage");
  int completion = 0;
  if (usage != j.end() && usage->is_object()) {
    out.prompt_tokens = int_field(*usage, "prompt_tokens");
    completion = int_field(*usage, "completion_tokens");
  }
  auto choices = j.find("choices");
  if (choices == j.end() || !choices->is_array() || choices->empty()) throw bad_shape(where, "no \"choices\" array", j);
  const json& c = (*choices)[0];
  if (!c.is_object()) throw bad_shape(where, "choices[0] is not an object", j);
  const json* text = nullptr;
  Generation g;
  if (chat) {
    auto msg = c.find("message");
    if (msg == c.end() || !msg->is_object()) throw bad_shape(where, "choices[0] has no \"message\" object", j);
    auto content = msg->find("content");
    if (content != msg->end()) text = &*content;
    if (auto calls = msg->find("tool_calls"); calls != msg->end() && calls->is_array()) {
      for (const json& call : *calls) {
        const json* fn = call.is_object() && call.contains("function") ? &call["function"] : nullptr;
        if (!fn || !fn->is_object() || !fn->contains("name") || !(*fn)["name"].is_string())
          throw bad_shape(where, "a tool call has no function name", j);
        const json& args = fn->value("arguments", json(""));
        g.tool_calls.push_back({call.value("id", ""), (*fn)["name"].get<std::string>(),
                                args.is_string() ? args.get<std::string>() : args.dump()});
      }
    }
  } else if (auto t = c.find("text"); t != c.end()) {
    text = &*t;
  }
  // A message that calls tools may carry no text (content null).
  bool no_text_ok = !g.tool_calls.empty() && (!text || text->is_null());
  if (!no_text_ok && (!text || !text->is_string()))
    throw bad_shape(where, chat ? "choices[0].message.content is not a string" : "choices[0].text is not a string", j);
  if (!no_text_ok) g.text = text->get<std::string>();
  if (auto fr = c.find("finish_reason"); fr != c.end() && fr->is_string()) g.finish_reason = fr->get<std::string>();
  g.completion_tokens = completion;
  out.choices.push_back(std::move(g));
  return out;
}

namespace {

class OpenAiBackend : public LlmBackend {
 public:
  explicit OpenAiBackend(const OpenAiOptions& o) : o_(o) {
    curl();  // loads libcurl (and runs curl_global_init) before any request thread exists
    if (o_.endpoints.empty())
      throw Error(ExitCode::usage,
                  "the openai backend needs at least one endpoint URL (--endpoint http://host:port/v1)");
    for (auto& e : o_.endpoints) e = trim_slash(e);
    if (const char* k = std::getenv(o_.api_key_env.c_str()); k && *k) api_key_ = k;
    if (o_.model.empty()) o_.model = discover_model();
    identity_ = o_.identity.empty() ? "openai:" + o_.model : o_.identity;
  }

  ~OpenAiBackend() override {
    if (size_t n = truncated_total_.load(); n > truncated_first_)
      log_warn("{} embedding inputs in all were truncated to what {} accepts", n, o_.endpoints[0]);
  }

  std::string identity() const override { return identity_; }

  // Asked once: llama-server reports its per-slot context in /props, vLLM its max_model_len in /v1/models
  // (llama-server there too, as meta.n_ctx). The config's "context_length" wins.
  int context_length() override {
    std::call_once(context_once_, [&] {
      context_length_ = o_.context_length > 0 ? o_.context_length : ask_context_length();
      log_debug("context length of {}: {} tokens", o_.endpoints[0], context_length_);
    });
    return context_length_;
  }

  Capabilities capabilities() const override {
    Capabilities c;
    c.hidden_states = false;
    c.grammar = true;  // llama-server and vLLM accept grammars / JSON schemas
    c.parallel = std::max(1, o_.concurrency);
    c.tool_calls = true;  // the API's tools; a server without them refuses the request (callers fall back)
    return c;
  }

  GenerateResult generate(const GenerateRequest& r) override {
    if (r.hidden_states)
      throw Error(ExitCode::usage, "hidden states are not available over the OpenAI API (endpoint " + o_.endpoints[0] +
                                       "): the step that needs them must run with the llama backend on a local GGUF "
                                       "(--backend llama --model path.gguf)");
    // n samples as n requests with consecutive seeds: works with every server, and each sample is
    // reproducible on its own.
    GenerateResult out;
    std::vector<GenerateRequest> parts;
    for (int i = 0; i < std::max(1, r.n); ++i) {
      GenerateRequest p = r;
      p.n = 1;
      p.seed = r.seed + static_cast<uint64_t>(i);
      parts.push_back(std::move(p));
    }
    auto results = run_concurrently(parts);
    for (auto& res : results) {
      out.prompt_tokens = res.prompt_tokens;
      for (auto& c : res.choices) out.choices.push_back(std::move(c));
    }
    return out;
  }

  std::vector<GenerateResult> generate_many(const std::vector<GenerateRequest>& rs, const OnDone& on_done) override {
    for (const auto& r : rs)
      if (r.hidden_states) return LlmBackend::generate_many(rs, on_done);  // throws the clear error above
    std::vector<GenerateRequest> flat;
    std::vector<size_t> owner;
    for (size_t i = 0; i < rs.size(); ++i)
      for (int k = 0; k < std::max(1, rs[i].n); ++k) {
        GenerateRequest p = rs[i];
        p.n = 1;
        p.seed = rs[i].seed + static_cast<uint64_t>(k);
        flat.push_back(std::move(p));
        owner.push_back(i);
      }
    // A request is done when all its samples are; report it then.
    std::vector<GenerateResult> out(rs.size());
    std::vector<int> remaining(rs.size());
    for (size_t j = 0; j < flat.size(); ++j) ++remaining[owner[j]];
    std::vector<std::vector<std::pair<size_t, GenerateResult>>> parts(rs.size());
    std::mutex mu;
    run_concurrently(flat, [&](size_t j, GenerateResult res) {
      std::lock_guard lk(mu);
      size_t i = owner[j];
      parts[i].emplace_back(j, std::move(res));
      if (--remaining[i] == 0) {
        // Samples in seed order, whatever order they finished in.
        std::sort(parts[i].begin(), parts[i].end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        for (auto& [jj, p] : parts[i]) {
          out[i].prompt_tokens = p.prompt_tokens;
          for (auto& c : p.choices) out[i].choices.push_back(std::move(c));
        }
        if (on_done) on_done(i, out[i]);
      }
    });
    return out;
  }

  LogprobResult logprobs(const LogprobRequest& r) override {
    return shape_checked("/completions (log-probabilities)", [&] { return logprobs_unchecked(r); });
  }

  EmbedResult embed(const EmbedRequest& r) override {
    return shape_checked("/embeddings", [&] { return embed_unchecked(r); });
  }

 private:
  // Reading a response through nlohmann's checked accessors: a field of the wrong type throws
  // json::exception, reported as an LLM backend error (exit 5) naming the endpoint, never as an internal
  // failure.
  template <class F>
  auto shape_checked(const std::string& what, F&& f) -> decltype(f()) {
    try {
      return f();
    } catch (const json::exception& e) {
      throw Error(ExitCode::llm, o_.endpoints[0] + what + " answered JSON of an unexpected shape (" + e.what() +
                                     ") -- is the endpoint an OpenAI-compatible /v1 URL?");
    }
  }

  LogprobResult logprobs_unchecked(const LogprobRequest& r) {
    if (!r.messages.empty())
      throw Error(ExitCode::usage,
                  "log-probabilities over the OpenAI API take a raw-text context (prompt), not chat messages");
    // OpenAI's legacy way (vLLM, OpenAI): echo the prompt with its token logprobs.
    json body = {{"model", o_.model}, {"prompt", r.prompt + r.continuation},
                 {"max_tokens", 0},   {"echo", true},
                 {"logprobs", 0},     {"temperature", 0}};
    HttpResponse resp = post_with_retries("/completions", body, /*retry_4xx=*/false, /*throw_4xx=*/false);
    if (resp.status == 200) {
      json j = json::parse(resp.body, nullptr, false);
      if (j.is_object() && j.contains("choices") && j["choices"].is_array() && !j["choices"].empty() &&
          j["choices"][0].is_object() && j["choices"][0].contains("logprobs") &&
          j["choices"][0]["logprobs"].is_object() && j["choices"][0]["logprobs"].contains("token_logprobs")) {
        const json& lp = j["choices"][0]["logprobs"];
        LogprobResult out;
        for (size_t i = 0; i < lp["tokens"].size(); ++i) {
          if (lp["text_offset"][i].get<size_t>() < r.prompt.size()) continue;
          out.tokens.push_back(lp["tokens"][i].get<std::string>());
          out.logprobs.push_back(lp["token_logprobs"][i].is_null() ? 0.0 : lp["token_logprobs"][i].get<double>());
        }
        return out;
      }
    }
    // llama-server has no echo: force the continuation with a one-string grammar and read the
    // (pre-grammar) log-probability of each forced token.
    std::string lit;
    for (unsigned char c : r.continuation) {
      if (c == '"' || c == '\\')
        lit += '\\', lit += static_cast<char>(c);
      else if (c == '\n')
        lit += "\\n";
      else if (c == '\r')
        lit += "\\r";
      else if (c == '\t')
        lit += "\\t";
      else
        lit += static_cast<char>(c);
    }
    json forced = {
        {"model", o_.model}, {"prompt", r.prompt}, {"max_tokens", static_cast<int>(r.continuation.size()) + 8},
        {"temperature", 0},  {"logprobs", 1},      {"grammar", "root ::= \"" + lit + "\""}};
    json j = call("/completions", forced);
    const json& lp = j.at("choices").at(0).value("logprobs", json());
    LogprobResult out;
    if (lp.is_object() && lp.contains("content")) {
      for (const auto& t : lp["content"]) {
        out.tokens.push_back(t.value("token", ""));
        out.logprobs.push_back(t.value("logprob", 0.0));
        if (t.contains("id")) out.token_ids.push_back(t["id"].get<int32_t>());
      }
    } else if (lp.is_object() && lp.contains("token_logprobs")) {
      for (size_t i = 0; i < lp["tokens"].size(); ++i) {
        out.tokens.push_back(lp["tokens"][i].get<std::string>());
        out.logprobs.push_back(lp["token_logprobs"][i].get<double>());
      }
    } else {
      throw Error(ExitCode::llm, "endpoint " + o_.endpoints[0] +
                                     " returned no log-probabilities (neither echo nor logprobs are supported)");
    }
    return out;
  }

  // Inputs longer than the server accepts are cut to its limit (known from the config, or learnt from its
  // "too large" answer, which names it) and sent again: one long document never fails a whole command.
  // The cache keeps the vector under the text as given, so a re-run is served from it.
  EmbedResult embed_unchecked(const EmbedRequest& r) {
    const std::string& prefix = r.task == EmbedTask::query      ? o_.query_prefix
                                : r.task == EmbedTask::document ? o_.document_prefix
                                                                : empty_;
    std::vector<std::string> inputs;
    for (const auto& t : r.texts) inputs.push_back(prefix + t);
    std::vector<char> cut(inputs.size(), 0);
    int limit = embed_limit_.load();
    if (limit > 0) fit_inputs(inputs, cut, limit);
    json j;
    for (int round = 0;; ++round) {
      HttpResponse resp = post_with_retries("/embeddings", {{"model", o_.model}, {"input", inputs}}, false, false);
      if (resp.status < 400) {
        j = json::parse(resp.body, nullptr, false);
        if (j.is_object() && j.contains("error"))
          throw Error(ExitCode::llm,
                      o_.endpoints[0] + "/embeddings: " +
                          j["error"].dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 400));
        break;
      }
      InputTooLarge tl = openai_input_too_large(resp.status, resp.body);
      if (!tl.too_large || round == 12)
        throw Error(ExitCode::llm, o_.endpoints[0] + "/embeddings rejected the request (HTTP " +
                                       std::to_string(resp.status) + "): " + resp.body.substr(0, 400));
      // A limit the server names is taken as it is; when the inputs were already cut to it (the tokenizer
      // estimate fell short) or it names none, the limit shrinks by a quarter.
      int told = tl.limit > 0 && (limit == 0 || tl.limit < limit) ? tl.limit : 0;
      int next = told > 0 ? told : limit > 0 ? limit * 3 / 4 : 0;
      if (next == 0) {
        // Nothing known: halve the longest input.
        size_t longest = 0;
        for (size_t i = 1; i < inputs.size(); ++i)
          if (inputs[i].size() > inputs[longest].size()) longest = i;
        inputs[longest] = cut_utf8(inputs[longest], inputs[longest].size() / 2);
        cut[longest] = 1;
        continue;
      }
      limit = std::max(8, next);
      if (told > 0) learn_embed_limit(limit);
      if (!fit_inputs(inputs, cut, limit) && told > 0) {
        // Every input fits the named limit by our count: the server counts more (its special tokens).
        limit = std::max(8, limit * 3 / 4);
        fit_inputs(inputs, cut, limit);
      }
    }
    if (size_t n = static_cast<size_t>(std::count(cut.begin(), cut.end(), 1)); n > 0) note_truncation(n, inputs.size());
    EmbedResult out;
    out.vectors.resize(r.texts.size());
    const json& data = j.at("data");
    if (!data.is_array() || data.size() != r.texts.size())
      throw Error(ExitCode::llm, "embedding endpoint returned " + std::to_string(data.size()) + " vectors for " +
                                     std::to_string(r.texts.size()) + " texts");
    for (size_t i = 0; i < data.size(); ++i) {
      size_t idx = data[i].value("index", i);
      std::vector<float> v = data[i].at("embedding").get<std::vector<float>>();
      if (v.empty()) throw Error(ExitCode::llm, o_.endpoints[0] + "/embeddings returned an empty vector");
      double n2 = 0;
      for (float x : v) n2 += static_cast<double>(x) * x;
      double inv = n2 > 0 ? 1.0 / std::sqrt(n2) : 0;
      for (float& x : v) x = static_cast<float>(x * inv);
      if (idx < out.vectors.size()) out.vectors[idx] = std::move(v);
    }
    for (const auto& v : out.vectors)
      if (v.empty() || v.size() != out.vectors[0].size())
        throw Error(ExitCode::llm, o_.endpoints[0] + "/embeddings returned vectors of different sizes or indices");
    return out;
  }

  // Cuts every input longer than `limit` tokens; marks the ones cut. Returns whether any was cut now.
  bool fit_inputs(std::vector<std::string>& inputs, std::vector<char>& cut, int limit) {
    bool any = false;
    for (size_t i = 0; i < inputs.size(); ++i)
      if (fit_to_tokens(inputs[i], limit)) {
        cut[i] = 1;
        any = true;
      }
    return any;
  }

  // Cuts `text` to `limit` tokens less the server's special tokens: exactly with llama-server's /tokenize
  // and /detokenize, else (a server without them) by a low estimate of bytes per token.
  bool fit_to_tokens(std::string& text, int limit) {
    size_t keep = static_cast<size_t>(std::max(1, limit - kSpecialTokens));
    if (text.size() <= keep) return false;  // a token spans at least one byte
    const std::string root = server_root(o_.endpoints[0]);
    if (has_tokenizer_.load() != 0) {
      json toks = post_json(root + "/tokenize", {{"content", text}, {"add_special", false}}, "tokens");
      has_tokenizer_ = toks.is_array() ? 1 : 0;
      if (toks.is_array()) {
        if (toks.size() <= keep) return false;
        json prefix(toks.begin(), toks.begin() + static_cast<std::ptrdiff_t>(keep));
        json back = post_json(root + "/detokenize", {{"tokens", prefix}}, "content");
        if (back.is_string() && back.get<std::string>().size() < text.size()) {
          text = back.get<std::string>();
          return true;
        }
      }
    }
    size_t bytes = static_cast<size_t>(static_cast<double>(keep) * kBytesPerTokenLow);
    if (text.size() <= bytes) return false;
    text = cut_utf8(text, bytes);
    return true;
  }

  // POSTs to a helper endpoint outside the OpenAI API (no retries: its absence is an answer) and returns
  // the answer's `field`, or null.
  json post_json(const std::string& url, const json& body, const char* field) {
    HttpResponse r = request("POST", url, body.dump(-1, ' ', false, json::error_handler_t::replace));
    if (r.interrupted) check_final(r, url);
    if (r.curl != CURLE_OK || r.status != 200) return nullptr;
    json j = json::parse(r.body, nullptr, false);
    return j.is_object() && j.contains(field) ? j[field] : json();
  }

  void learn_embed_limit(int limit) {
    int cur = embed_limit_.load();
    while ((cur == 0 || limit < cur) && !embed_limit_.compare_exchange_weak(cur, limit)) {
    }
  }

  void note_truncation(size_t n, size_t of) {
    if (truncated_total_.fetch_add(n) == 0) {
      truncated_first_ = n;
      log_warn(
          "{} of {} embedding inputs are longer than {} accepts ({} tokens) and were cut to that length; to embed "
          "them whole, start llama-server with a larger physical batch (-ub N -b N, N up to its -c) or set "
          "\"embed_max_tokens\" (docs/LLM.md)",
          n, of, o_.endpoints[0], embed_limit_.load() > 0 ? std::to_string(embed_limit_.load()) : std::string("?"));
    }
  }

  int ask_context_length() {
    const std::string props = server_root(o_.endpoints[0]) + "/props";
    HttpResponse r = request("GET", props, "");
    if (r.interrupted) check_final(r, props);
    if (r.curl == CURLE_OK && r.status == 200) {
      json j = json::parse(r.body, nullptr, false);
      if (j.is_object() && j.contains("default_generation_settings") && j["default_generation_settings"].is_object()) {
        const json& d = j["default_generation_settings"];
        if (d.contains("n_ctx") && d["n_ctx"].is_number_integer() && d["n_ctx"].get<int>() > 0)
          return d["n_ctx"].get<int>();
      }
    }
    const std::string models = o_.endpoints[0] + "/models";
    r = request("GET", models, "");
    if (r.interrupted) check_final(r, models);
    json j = r.curl == CURLE_OK && r.status == 200 ? json::parse(r.body, nullptr, false) : json();
    if (!j.is_object() || !j.contains("data") || !j["data"].is_array()) return 0;
    for (const auto& m : j["data"]) {
      if (!m.is_object() || (j["data"].size() > 1 && m.value("id", json()) != json(o_.model))) continue;
      if (m.contains("max_model_len") && m["max_model_len"].is_number_integer()) return m["max_model_len"].get<int>();
      if (m.contains("meta") && m["meta"].is_object() && m["meta"].contains("n_ctx") &&
          m["meta"]["n_ctx"].is_number_integer())
        return m["meta"]["n_ctx"].get<int>();
    }
    return 0;
  }

  std::string discover_model() {
    HttpResponse r = request("GET", o_.endpoints[0] + "/models", "");
    check_final(r, o_.endpoints[0] + "/models");
    if (r.curl != CURLE_OK || r.status != 200)
      throw Error(ExitCode::llm, "cannot list models at " + o_.endpoints[0] + "/models (" +
                                     (r.curl != CURLE_OK ? r.error : "HTTP " + std::to_string(r.status)) +
                                     "); pass the model name with --llm-model");
    json j = json::parse(r.body, nullptr, false);
    if (!j.is_object() || !j.contains("data") || !j["data"].is_array() || j["data"].empty() ||
        !j["data"][0].is_object() || !j["data"][0].contains("id") || !j["data"][0]["id"].is_string())
      throw Error(ExitCode::llm,
                  "the endpoint " + o_.endpoints[0] + " lists no models; pass the model name explicitly");
    return j["data"][0]["id"].get<std::string>();
  }

  GenerateResult generate_single(const GenerateRequest& r) {
    json body = {{"model", o_.model},
                 {"temperature", r.temperature},
                 {"top_p", r.top_p},
                 {"max_tokens", r.max_tokens},
                 {"seed", r.seed}};
    if (!r.stop.empty()) body["stop"] = r.stop;
    if (!r.json_schema.empty()) {
      json schema = json::parse(r.json_schema, nullptr, false);
      if (schema.is_discarded()) throw Error(ExitCode::bad_input, "the JSON schema of a request is not valid JSON");
      body["response_format"] = {{"type", "json_schema"},
                                 {"json_schema", {{"name", "output"}, {"strict", true}, {"schema", schema}}}};
    } else if (!r.grammar.empty()) {
      body["grammar"] = r.grammar;
    }
    bool chat = !r.messages.empty();
    if (chat) {
      json ms = json::array();
      for (const auto& m : r.messages) ms.push_back(openai_message(m));
      body["messages"] = ms;
      if (!r.tools.empty()) {
        body["tools"] = r.tools;
        if (!r.tool_choice.empty()) body["tool_choice"] = r.tool_choice;
      }
    } else {
      body["prompt"] = r.prompt;
    }
    std::string path = chat ? "/chat/completions" : "/completions";
    return openai_generation_from_json(call(path, body), o_.endpoints[0] + path, chat);
  }

  // At most `concurrency` requests in flight; `done(i, result)` as each finishes. The first error is
  // rethrown after every request has been tried (the others are not lost: each answer is cached as it
  // arrives), which is why this loop is not util's parallel_for (that one stops at the first error).
  std::vector<GenerateResult> run_concurrently(const std::vector<GenerateRequest>& rs,
                                               const std::function<void(size_t, GenerateResult)>& done = {}) {
    std::vector<GenerateResult> out(rs.size());
    std::vector<std::exception_ptr> errs(rs.size());
    std::atomic<size_t> next{0};
    int workers = std::max(1, std::min<int>(o_.concurrency, static_cast<int>(rs.size())));
    auto work = [&] {
      for (;;) {
        size_t i = next.fetch_add(1);
        if (i >= rs.size()) return;
        try {
          throw_if_interrupted("the LLM results received so far are cached");
          out[i] = generate_single(rs[i]);
          if (done) done(i, out[i]);
        } catch (...) {
          errs[i] = std::current_exception();
        }
      }
    };
    if (workers == 1) {
      work();
    } else {
      std::vector<std::thread> ts;
      for (int w = 0; w < workers; ++w) ts.emplace_back(work);
      for (auto& t : ts) t.join();
    }
    for (auto& e : errs)
      if (e) std::rethrow_exception(e);
    return out;
  }

  HttpResponse request(const char* method, const std::string& url, const std::string& body) {
    HttpResponse r;
    const Curl& api = curl();
    CURL* c = api.easy_init();
    if (!c) {
      r.curl = CURLE_FAILED_INIT;
      r.error = "curl init failed";
      return r;
    }
    struct curl_slist* hdrs = nullptr;
    hdrs = api.slist_append(hdrs, "Content-Type: application/json");
    std::string auth;
    if (!api_key_.empty()) {
      auth = "Authorization: Bearer " + api_key_;
      hdrs = api.slist_append(hdrs, auth.c_str());
    }
    api.easy_setopt(c, CURLOPT_URL, url.c_str());
    api.easy_setopt(c, CURLOPT_HTTPHEADER, hdrs);
    api.easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    api.easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(o_.timeout_s * 1000));
    api.easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, static_cast<long>(o_.connect_timeout_s * 1000));
    r.max_body = o_.max_response_bytes;
    api.easy_setopt(c, CURLOPT_WRITEFUNCTION, write_cb);
    api.easy_setopt(c, CURLOPT_WRITEDATA, &r);
    api.easy_setopt(c, CURLOPT_HEADERFUNCTION, header_cb);
    api.easy_setopt(c, CURLOPT_HEADERDATA, &r);
    api.easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
    api.easy_setopt(c, CURLOPT_XFERINFOFUNCTION, progress_cb);
    api.easy_setopt(c, CURLOPT_XFERINFODATA, &r);
    api.easy_setopt(c, CURLOPT_FOLLOWLOCATION, 0L);  // a redirect is reported, not followed
    if (std::string(method) == "POST") {
      api.easy_setopt(c, CURLOPT_POST, 1L);
      api.easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
      api.easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    }
    r.curl = api.easy_perform(c);
    if (r.curl != CURLE_OK) r.error = api.easy_strerror(r.curl);
    api.easy_getinfo(c, CURLINFO_RESPONSE_CODE, &r.status);
    if (char* loc = nullptr; api.easy_getinfo(c, CURLINFO_REDIRECT_URL, &loc) == CURLE_OK && loc) r.redirect = loc;
    api.slist_free_all(hdrs);
    api.easy_cleanup(c);
    return r;
  }

  // Retries transient failures on the next endpoint (failover), with exponential backoff and jitter.
  HttpResponse post_with_retries(const std::string& path, const json& body, bool retry_4xx, bool throw_4xx) {
    std::string payload = body.dump(-1, ' ', false, json::error_handler_t::replace);
    size_t start = rr_.fetch_add(1);
    std::string last;
    thread_local std::mt19937 rng(std::random_device{}());
    for (int attempt = 0; attempt <= o_.retries; ++attempt) {
      const std::string& ep = o_.endpoints[(start + static_cast<size_t>(attempt)) % o_.endpoints.size()];
      throw_if_interrupted("the LLM results received so far are cached");
      HttpResponse r = request("POST", ep + path, payload);
      check_final(r, ep + path);
      bool transient = false;
      if (r.curl != CURLE_OK) {
        last = ep + path + ": " + r.error;
        transient = true;
      } else if (r.status == 501) {
        // Not Implemented is permanent (llama-server answers it for /embeddings unless started with
        // --embeddings): no retry can change it.
        throw Error(ExitCode::llm, ep + path + " does not implement this request (HTTP 501): " + r.body.substr(0, 300) +
                                       (path == "/embeddings" ? "; a llama-server must be started with --embeddings "
                                                                "--pooling mean (docs/LLM.md)"
                                                              : ""));
      } else if (InputTooLarge tl = openai_input_too_large(r.status, r.body); tl.too_large) {
        // Longer than the server accepts: the same request fails again on every retry.
        if (!throw_4xx) return r;
        throw Error(ExitCode::llm,
                    ep + path + " rejected an input longer than it accepts (HTTP " + std::to_string(r.status) +
                        "): " + r.body.substr(0, 300) +
                        (path == "/embeddings" ? std::string()
                                               : "; give the server a larger context (llama-server -c N, vLLM "
                                                 "--max-model-len N) or lower --budget (docs/LLM.md)"));
      } else if (r.status == 408 || r.status == 429 || r.status >= 500) {
        last = ep + path + ": HTTP " + std::to_string(r.status) + " " + r.body.substr(0, 200);
        transient = true;
      } else if (r.status >= 400) {
        if (retry_4xx) {
          last = ep + path + ": HTTP " + std::to_string(r.status);
          transient = true;
        } else if (throw_4xx) {
          throw Error(ExitCode::llm, ep + path + " rejected the request (HTTP " + std::to_string(r.status) +
                                         "): " + r.body.substr(0, 400));
        } else {
          return r;
        }
      } else {
        json j = json::parse(r.body, nullptr, false);
        if (j.is_discarded()) {
          last = ep + path + ": malformed or truncated JSON body (" + std::to_string(r.body.size()) + " bytes)";
          transient = true;
        } else {
          return r;
        }
      }
      if (!transient || attempt == o_.retries) break;
      double delay = std::min(o_.backoff_max_s, o_.backoff_s * std::pow(2.0, attempt));
      if (r.retry_after_s >= 0) delay = std::min(o_.backoff_max_s, std::max(delay, r.retry_after_s));
      delay *= std::uniform_real_distribution<double>(1.0, 1.25)(rng);
      log_warn("LLM request failed ({}); retry {}/{} in {:.1f}s", last, attempt + 1, o_.retries, delay);
      interruptible_sleep(delay);
    }
    throw Error(ExitCode::llm, "LLM request failed after " + std::to_string(o_.retries + 1) + " attempts: " + last);
  }

  // Answers no retry can change: an interrupt, a body over the size cap, a redirect.
  void check_final(const HttpResponse& r, const std::string& url) const {
    if (r.interrupted || (r.curl == CURLE_ABORTED_BY_CALLBACK && interrupted()))
      throw Error(ExitCode::interrupted,
                  "interrupted during a request to " + url + "; the LLM results received so far are cached");
    if (r.too_large)
      throw Error(ExitCode::llm, url + " sent a response larger than " + std::to_string(o_.max_response_bytes >> 20) +
                                     " MiB: transfer aborted (raise \"max_response_mb\" in the config if that is "
                                     "expected)");
    if (r.curl == CURLE_OK && r.status >= 300 && r.status < 400)
      throw Error(ExitCode::llm, url + " answered HTTP " + std::to_string(r.status) + ": a redirect to " +
                                     (r.redirect.empty() ? std::string("(no Location)") : r.redirect) +
                                     " (not followed: give the final URL as the endpoint)");
  }

  json call(const std::string& path, const json& body) {
    HttpResponse r = post_with_retries(path, body, false, true);
    json j = json::parse(r.body, nullptr, false);
    if (j.is_object() && j.contains("error"))
      throw Error(ExitCode::llm,
                  path + ": " + j["error"].dump(-1, ' ', false, json::error_handler_t::replace).substr(0, 400));
    return j;
  }

  OpenAiOptions o_;
  std::string api_key_, identity_, empty_;
  std::atomic<size_t> rr_{0};
  std::once_flag context_once_;
  int context_length_ = 0;
  std::atomic<int> embed_limit_{o_.embed_max_tokens};  // tokens of one embedding input; 0 = not known yet
  std::atomic<int> has_tokenizer_{-1};                 // /tokenize answers: -1 not asked yet, 0 no, 1 yes
  std::atomic<size_t> truncated_total_{0};
  size_t truncated_first_ = 0;
};

}  // namespace

std::unique_ptr<LlmBackend> make_openai_backend(const OpenAiOptions& o) {
  return std::make_unique<OpenAiBackend>(o);
}

}  // namespace repoctx
