#include "llm/config.h"

#include <fmt/format.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <type_traits>

#include "util/error.h"
#include "util/file_io.h"
#include "util/log.h"

namespace repoctx {

using nlohmann::json;

static std::string expand_home(std::string p) {
  if (!p.empty() && p[0] == '~') p = std::string(std::getenv("HOME") ? std::getenv("HOME") : "") + p.substr(1);
  return p;
}

namespace {

// Reads one object of the config file, naming the file, the key path and the expected type in every
// error; every key must be a known one (a misspelt key would otherwise be ignored without a word).
class ConfigObject {
 public:
  ConfigObject(const json& j, std::string where, std::string file, std::vector<std::string> keys)
      : j_(j), where_(std::move(where)), file_(std::move(file)), keys_(std::move(keys)) {
    if (!j_.is_object()) fail("must be an object");
    for (auto it = j_.begin(); it != j_.end(); ++it)
      if (std::find(keys_.begin(), keys_.end(), it.key()) == keys_.end()) {
        std::string known;
        for (const auto& k : keys_) known += (known.empty() ? "" : ", ") + k;
        throw Error(ExitCode::bad_input, file_ + ": unknown key \"" + prefix() + it.key() + "\" (known keys" +
                                             (where_.empty() ? "" : " of \"" + where_ + "\"") + ": " + known + ")");
      }
  }
  bool has(const char* k) const { return j_.contains(k); }
  const json& at(const char* k) const { return j_.at(k); }
  std::string str(const char* k, std::string fallback) const {
    if (!has(k)) return fallback;
    if (!j_.at(k).is_string()) fail_key(k, "a string");
    return j_.at(k).get<std::string>();
  }
  template <class T>
  T num(const char* k, T fallback) const {
    if (!has(k)) return fallback;
    const json& v = j_.at(k);
    if (!v.is_number() || (std::is_integral_v<T> && !v.is_number_integer()))
      fail_key(k, std::is_integral_v<T> ? "an integer" : "a number");
    return v.get<T>();
  }
  std::vector<std::string> strings(const char* k) const {
    const json& v = j_.at(k);
    if (!v.is_array()) fail_key(k, "an array of strings");
    std::vector<std::string> out;
    for (const auto& x : v) {
      if (!x.is_string()) fail_key(k, "an array of strings");
      out.push_back(x.get<std::string>());
    }
    return out;
  }
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(ExitCode::bad_input, file_ + ": \"" + (where_.empty() ? "(top level)" : where_) + "\" " + what);
  }
  [[noreturn]] void fail_key(const char* k, const char* type) const {
    throw Error(ExitCode::bad_input, file_ + ": \"" + prefix() + k + "\" must be " + type + ", not " + j_.at(k).dump());
  }

 private:
  std::string prefix() const { return where_.empty() ? "" : where_ + "."; }
  const json& j_;
  std::string where_, file_;
  std::vector<std::string> keys_;
};

void model_from_json(ModelConfig& m, const json& j, const std::string& role, const std::string& file) {
  ConfigObject o(j, role, file,
                 {"backend", "model", "endpoints", "endpoint", "api_key_env", "timeout_s", "retries", "concurrency",
                  "identity", "threads", "ctx", "batch", "gpu_layers", "query_prefix", "document_prefix",
                  "max_response_mb", "context_length", "embed_max_tokens"});
  // A role that names a server and no backend is an openai one.
  bool has_endpoints = o.has("endpoints") || o.has("endpoint");
  m.backend = o.str("backend", !m.backend.empty() ? m.backend : has_endpoints ? std::string("openai") : "llama");
  if (m.backend != "llama" && m.backend != "openai")
    o.fail("has backend \"" + m.backend + "\": it must be \"llama\" or \"openai\"");
  if (o.has("model")) {
    std::string model = o.str("model", "");
    m.llama.model_path = expand_home(model);
    m.openai.model = model;
  }
  if (o.has("endpoints")) m.openai.endpoints = o.strings("endpoints");
  if (o.has("endpoint")) m.openai.endpoints = {o.str("endpoint", "")};
  m.openai.api_key_env = o.str("api_key_env", m.openai.api_key_env);
  m.openai.timeout_s = o.num("timeout_s", m.openai.timeout_s);
  m.openai.retries = o.num("retries", m.openai.retries);
  m.openai.concurrency = o.num("concurrency", m.openai.concurrency);
  m.openai.identity = o.str("identity", m.openai.identity);
  m.openai.context_length = o.num("context_length", m.openai.context_length);
  m.openai.embed_max_tokens = o.num("embed_max_tokens", m.openai.embed_max_tokens);
  if (m.openai.context_length < 0 || m.openai.embed_max_tokens < 0)
    o.fail("has a negative \"context_length\" or \"embed_max_tokens\" (0 = ask the server)");
  m.llama.threads = o.num("threads", m.llama.threads);
  m.llama.ctx = o.num("ctx", m.llama.ctx);
  m.llama.batch = o.num("batch", m.llama.batch);
  m.llama.gpu_layers = o.num("gpu_layers", m.llama.gpu_layers);
  std::string qp = o.str("query_prefix", m.llama.query_prefix), dp = o.str("document_prefix", m.llama.document_prefix);
  m.llama.query_prefix = m.openai.query_prefix = qp;
  m.llama.document_prefix = m.openai.document_prefix = dp;
  if (o.has("max_response_mb")) {
    // Checked before the conversion: a value past size_t's range (or NaN) converts to nothing defined.
    double mb = o.num("max_response_mb", 0.0);
    if (!(mb > 0 && mb <= 1048576)) o.fail("has \"max_response_mb\" outside 0 < MB <= 1048576");
    m.openai.max_response_bytes = static_cast<size_t>(mb * 1048576.0);
  }
}

// Line and column of a byte offset, for parse errors a person can find.
std::pair<size_t, size_t> line_column(const std::string& text, size_t byte) {
  size_t line = 1, col = 1;
  for (size_t i = 0; i < byte && i < text.size(); ++i) {
    if (text[i] == '\n') {
      ++line;
      col = 1;
    } else {
      ++col;
    }
  }
  return {line, col};
}

}  // namespace

void ModelConfig::validate(const std::string& role, const std::string& source) const {
  std::string where = source.empty() ? "" : " (config " + source + ")";
  if (backend == "llama" && llama.model_path.empty())
    throw Error(ExitCode::usage,
                role + " uses the llama backend but names no model file: --model path.gguf or \"model\"" + where);
  if (backend == "openai" && openai.endpoints.empty())
    throw Error(ExitCode::usage,
                role + " uses the openai backend but names no server: --endpoint URL or \"endpoints\"" + where);
}

void LlmConfig::apply_json(const json& j, const std::string& file) {
  ConfigObject o(j, "", file, {"llm", "embedding", "snippet_embedding", "hidden_states", "cache", "python"});
  if (o.has("llm")) model_from_json(llm, o.at("llm"), "llm", file);
  if (o.has("embedding")) model_from_json(embedding, o.at("embedding"), "embedding", file);
  if (o.has("snippet_embedding"))
    model_from_json(snippet_embedding, o.at("snippet_embedding"), "snippet_embedding", file);
  if (o.has("hidden_states")) model_from_json(hidden_states, o.at("hidden_states"), "hidden_states", file);
  if (o.has("cache")) cache_path = expand_home(o.str("cache", ""));
  if (o.has("python")) python = expand_home(o.str("python", ""));
}

LlmConfig LlmConfig::load(const std::string& path) {
  LlmConfig c;
  std::vector<std::string> candidates;
  if (!path.empty())
    candidates = {path};
  else {
    if (const char* e = std::getenv("REPOCTX_CONFIG"); e && *e) candidates.push_back(e);
    candidates.push_back("repoctx.json");
    candidates.push_back(expand_home("~/.config/repoctx/config.json"));
  }
  for (const auto& p : candidates) {
    std::error_code ec;
    if (!std::filesystem::exists(p, ec)) {
      if (!path.empty()) throw Error(ExitCode::not_found, "config file '" + p + "' does not exist");
      continue;
    }
    std::string text = read_file(p, "config file");
    json j;
    try {
      j = json::parse(text, nullptr, true, true);  // comments allowed
    } catch (const json::parse_error& e) {
      auto [line, col] = line_column(text, e.byte > 0 ? e.byte - 1 : 0);
      std::string what = e.what();
      auto colon = what.find("syntax error");
      throw Error(ExitCode::bad_input, fmt::format("config file '{}' line {} column {}: not valid JSON ({})", p, line,
                                                   col, colon == std::string::npos ? what : what.substr(colon)));
    }
    c.apply_json(j, p);
    c.source = p;
    break;
  }
  return c;
}

LlmSession::LlmSession(LlmConfig cfg) : cfg_(std::move(cfg)) {}

LlmCache& LlmSession::cache() {
  if (!cache_)
    cache_ = std::make_shared<LlmCache>(cfg_.cache_path.empty() ? LlmCache::default_path() : cfg_.cache_path);
  return *cache_;
}

std::unique_ptr<LlmBackend> LlmSession::make(const ModelConfig& m, const std::string& role) {
  m.validate(role, cfg_.source);
  std::unique_ptr<LlmBackend> inner;
  if (m.backend == "llama")
    inner = make_llama_backend(m.llama);
  else
    inner = make_openai_backend(m.openai);
  cache();
  return std::make_unique<CachedBackend>(std::move(inner), cache_, cfg_.cache_read);
}

LlmBackend& LlmSession::llm() {
  if (!cfg_.llm.configured())
    throw Error(ExitCode::usage,
                "this step needs an LLM: pass --model path.gguf (llama backend) or --endpoint URL "
                "(openai backend), or a config file (--config)");
  if (!llm_) llm_ = make(cfg_.llm, "the LLM");
  return *llm_;
}

LlmBackend& LlmSession::hidden_states() {
  if (!cfg_.hidden_states.configured()) return llm();
  if (!hidden_) hidden_ = make(cfg_.hidden_states, "the hidden-state model");
  return *hidden_;
}

LlmBackend& LlmSession::embedder() {
  if (!cfg_.embedding.configured()) return llm();
  if (!embedder_) embedder_ = make(cfg_.embedding, "the embedding model");
  return *embedder_;
}

LlmBackend& LlmSession::snippet_embedder() {
  if (!cfg_.snippet_embedding.configured()) return embedder();
  if (!snippet_embedder_) snippet_embedder_ = make(cfg_.snippet_embedding, "the snippet-embedding model");
  return *snippet_embedder_;
}

Models LlmSession::models(const ModelNeeds& needs) {
  Models m;
  if (needs.llm) m.llm = &llm();
  if (needs.hidden) m.hidden = &hidden_states();
  // Snippet validation with no snippet_embedding role configured uses the embedder (announced below).
  bool want_embedder = needs.embedder || (needs.embedder_optional && has_embedder()) ||
                       (needs.snippet_embedder && !cfg_.snippet_embedding.configured());
  if (want_embedder) {
    if (!cfg_.embedding.configured() && !embedder_warned_) {
      log_warn(
          "no embedding model configured: the LLM ({}) embeds, from its pooled hidden states; a dedicated "
          "embedding model (--embed-model, or \"embedding\" in the config) retrieves better",
          llm().identity());
      embedder_warned_ = true;
    }
    m.embedder = &embedder();
  }
  if (needs.snippet_embedder) m.snippet_embedder = &snippet_embedder();
  return m;
}

LlmConfig llm_config_from(const ModelFlags& f) {
  LlmConfig c = LlmConfig::load(f.config);
  auto apply = [&](ModelConfig& m, const std::string& backend, const std::string& model,
                   const std::vector<std::string>& eps) {
    if (!backend.empty())
      m.backend = backend;
    else if (m.backend.empty() && !eps.empty())
      m.backend = "openai";
    else if (m.backend.empty() && !model.empty())
      m.backend = "llama";
    if (!model.empty()) {
      m.llama.model_path = model;
      m.openai.model = model;
    }
    if (!eps.empty()) m.openai.endpoints = eps;
    if (f.threads) m.llama.threads = f.threads;
    if (f.ctx) m.llama.ctx = f.ctx;
    if (!m.backend.empty() && m.backend != "llama" && m.backend != "openai")
      throw Error(ExitCode::usage, "--backend must be llama or openai, not '" + m.backend + "'");
  };
  apply(c.llm, f.backend, f.model, f.endpoints);
  if (!f.embed_backend.empty() || !f.embed_model.empty() || !f.embed_endpoints.empty())
    apply(c.embedding, f.embed_backend, f.embed_model, f.embed_endpoints);
  if (!f.snippet_embed_backend.empty() || !f.snippet_embed_model.empty() || !f.snippet_embed_endpoints.empty())
    apply(c.snippet_embedding, f.snippet_embed_backend, f.snippet_embed_model, f.snippet_embed_endpoints);
  if (!f.hidden_model.empty()) apply(c.hidden_states, "llama", f.hidden_model, {});
  if (!f.cache.empty()) c.cache_path = f.cache;
  if (f.no_cache) c.cache_read = false;
  return c;
}

}  // namespace repoctx
