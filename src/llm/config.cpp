#include "llm/config.h"

#include <filesystem>
#include <fstream>

#include "util/error.h"
#include "util/log.h"

namespace repoctx {

using nlohmann::json;

static std::string expand_home(std::string p) {
  if (!p.empty() && p[0] == '~') p = std::string(std::getenv("HOME") ? std::getenv("HOME") : "") + p.substr(1);
  return p;
}

static void model_from_json(ModelConfig& m, const json& j, const std::string& role) {
  if (!j.is_object()) throw Error(ExitCode::bad_input, "config: \"" + role + "\" must be an object");
  m.backend = j.value("backend", m.backend.empty() ? std::string("llama") : m.backend);
  if (m.backend != "llama" && m.backend != "openai")
    throw Error(ExitCode::bad_input,
                "config: " + role + ".backend must be \"llama\" or \"openai\", not \"" + m.backend + "\"");
  if (j.contains("model")) {
    std::string model = j["model"].get<std::string>();
    m.llama.model_path = expand_home(model);
    m.openai.model = model;
  }
  if (j.contains("endpoints")) m.openai.endpoints = j["endpoints"].get<std::vector<std::string>>();
  if (j.contains("endpoint")) m.openai.endpoints = {j["endpoint"].get<std::string>()};
  m.openai.api_key_env = j.value("api_key_env", m.openai.api_key_env);
  m.openai.timeout_s = j.value("timeout_s", m.openai.timeout_s);
  m.openai.retries = j.value("retries", m.openai.retries);
  m.openai.concurrency = j.value("concurrency", m.openai.concurrency);
  m.openai.identity = j.value("identity", m.openai.identity);
  m.llama.threads = j.value("threads", m.llama.threads);
  m.llama.ctx = j.value("ctx", m.llama.ctx);
  m.llama.batch = j.value("batch", m.llama.batch);
  m.llama.gpu_layers = j.value("gpu_layers", m.llama.gpu_layers);
  std::string qp = j.value("query_prefix", m.llama.query_prefix),
              dp = j.value("document_prefix", m.llama.document_prefix);
  m.llama.query_prefix = m.openai.query_prefix = qp;
  m.llama.document_prefix = m.openai.document_prefix = dp;
  if (m.backend == "llama" && m.llama.model_path.empty())
    throw Error(ExitCode::bad_input,
                "config: " + role + " uses the llama backend but names no model file (\"model\": \"path.gguf\")");
  if (m.backend == "openai" && m.openai.endpoints.empty())
    throw Error(ExitCode::bad_input, "config: " + role + " uses the openai backend but lists no \"endpoints\"");
}

void LlmConfig::apply_json(const json& j) {
  if (j.contains("llm")) model_from_json(llm, j["llm"], "llm");
  if (j.contains("embedding")) model_from_json(embedding, j["embedding"], "embedding");
  if (j.contains("hidden_states")) model_from_json(hidden_states, j["hidden_states"], "hidden_states");
  if (j.contains("cache")) cache_path = expand_home(j["cache"].get<std::string>());
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
    std::ifstream in(p);
    json j = json::parse(in, nullptr, false, true);
    if (j.is_discarded()) throw Error(ExitCode::bad_input, "config file '" + p + "' is not valid JSON");
    c.apply_json(j);
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

std::unique_ptr<LlmBackend> LlmSession::make(const ModelConfig& m) {
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
  if (!llm_) llm_ = make(cfg_.llm);
  return *llm_;
}

LlmBackend& LlmSession::hidden_states() {
  if (!cfg_.hidden_states.configured()) return llm();
  if (!hidden_) hidden_ = make(cfg_.hidden_states);
  return *hidden_;
}

LlmBackend& LlmSession::embedder() {
  if (!cfg_.embedding.configured()) return llm();
  if (!embedder_) embedder_ = make(cfg_.embedding);
  return *embedder_;
}

Models LlmSession::models(const ModelNeeds& needs) {
  Models m;
  if (needs.llm) m.llm = &llm();
  if (needs.hidden) m.hidden = &hidden_states();
  bool want_embedder = needs.embedder || (needs.embedder_optional && has_embedder());
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
  if (!f.hidden_model.empty()) apply(c.hidden_states, "llama", f.hidden_model, {});
  if (!f.cache.empty()) c.cache_path = f.cache;
  if (f.no_cache) c.cache_read = false;
  return c;
}

}  // namespace repoctx
