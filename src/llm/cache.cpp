#include "llm/cache.h"

#include <chrono>
#include <filesystem>

#include "util/hash.h"
#include "util/log.h"

namespace repoctx {

using nlohmann::json;

std::string LlmCache::default_path() {
  if (const char* p = std::getenv("REPOCTX_LLM_CACHE"); p && *p) return p;
  std::string base;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    base = std::string(x) + "/repoctx";
  else
    base = std::string(std::getenv("HOME") ? std::getenv("HOME") : "/tmp") + "/.cache/repoctx";
  return base + "/llm-cache.db";
}

static const std::string& with_parent_dir(const std::string& path) {
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  return path;
}

LlmCache::LlmCache(const std::string& path) : path_(path), db_(with_parent_dir(path)) {
  db_.set_damage_hint("delete it (and its -wal and -shm files): cached LLM results are then computed again");
  db_.exec("PRAGMA journal_mode=WAL");
  db_.exec("PRAGMA synchronous=NORMAL");
  db_.exec(R"SQL(CREATE TABLE IF NOT EXISTS llm_cache(
      key TEXT PRIMARY KEY, op TEXT NOT NULL, model TEXT NOT NULL, request TEXT NOT NULL, response BLOB NOT NULL,
      prompt_tokens INTEGER NOT NULL, completion_tokens INTEGER NOT NULL, ms REAL NOT NULL,
      created INTEGER NOT NULL))SQL");
}

std::optional<json> LlmCache::get(const std::string& key) {
  std::lock_guard lk(mu_);
  sql::Stmt s(db_, "SELECT response FROM llm_cache WHERE key=?");
  s.bind(1, key);
  if (!s.step()) {
    ++misses_;
    return std::nullopt;
  }
  auto blob = s.blob(0);
  json j = json::from_cbor(blob.begin(), blob.end(), true, false);
  if (j.is_discarded()) {
    ++misses_;
    log_warn("damaged LLM cache entry {} ignored (it will be recomputed)", key.substr(0, 12));
    return std::nullopt;
  }
  ++hits_;
  return j;
}

void LlmCache::put(const std::string& key, const std::string& op, const std::string& model, const json& request,
                   const json& response, int prompt_tokens, int completion_tokens, double ms) {
  auto cbor = json::to_cbor(response);
  std::lock_guard lk(mu_);
  sql::Stmt s(
      db_,
      "INSERT OR REPLACE INTO llm_cache(key,op,model,request,response,prompt_tokens,completion_tokens,ms,created) "
      "VALUES(?,?,?,?,?,?,?,?,?)");
  s.bind(1, key)
      .bind(2, op)
      .bind(3, model)
      .bind(4, request.dump(-1, ' ', false, json::error_handler_t::replace))
      .bind_blob(5, cbor.data(), cbor.size())
      .bind(6, prompt_tokens)
      .bind(7, completion_tokens)
      .bind(8, ms)
      .bind(9, static_cast<int64_t>(std::chrono::system_clock::now().time_since_epoch() / std::chrono::seconds(1)))
      .exec();
}

CacheStats LlmCache::stats() {
  CacheStats st;
  std::lock_guard lk(mu_);
  sql::Stmt s(db_,
              "SELECT op, model, count(*), sum(prompt_tokens), sum(completion_tokens), sum(ms) FROM llm_cache GROUP BY "
              "op, model");
  while (s.step()) {
    auto& r = st.by_op_model[s.str(0) + "\t" + s.str(1)];
    r.entries = s.i64(2);
    r.prompt_tokens = s.i64(3);
    r.completion_tokens = s.i64(4);
    r.ms = s.f64(5);
  }
  st.hits = hits_;
  st.misses = misses_;
  return st;
}

int64_t LlmCache::clear(const std::string& model_filter) {
  std::lock_guard lk(mu_);
  sql::Stmt s(db_, model_filter.empty() ? "DELETE FROM llm_cache" : "DELETE FROM llm_cache WHERE model=?");
  if (!model_filter.empty()) s.bind(1, model_filter);
  s.exec();
  return sqlite3_changes(db_.raw());
}

CachedBackend::CachedBackend(std::unique_ptr<LlmBackend> inner, std::shared_ptr<LlmCache> cache, bool read)
    : inner_(std::move(inner)), cache_(std::move(cache)), read_(read) {}

std::string CachedBackend::key_of(const json& request) const {
  // nlohmann's dump sorts object keys: the same request always gives the same text.
  return content_hash(inner_->identity() + "\x1f" + request.dump(-1, ' ', false, json::error_handler_t::replace));
}

namespace {
// Only answers worth serving again are stored: an empty generation (a server that answered nothing) or
// an empty vector would otherwise be served forever.
// A stored entry decoded; nullopt (a miss: the result is computed again) when it does not have the shape
// its type writes, e.g. an entry damaged on disk or written by another version.
template <class R>
std::optional<R> decode_entry(const std::optional<json>& hit) {
  if (!hit) return std::nullopt;
  try {
    return R::from_json(*hit);
  } catch (const json::exception& e) {
    log_warn("damaged LLM cache entry ignored ({}); it will be recomputed", e.what());
    return std::nullopt;
  }
}
bool cacheable(const GenerateResult& r) {
  if (r.choices.empty()) return false;
  for (const auto& c : r.choices)
    if (c.text.empty()) return false;
  return true;
}
double ms_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
}
int completion_tokens(const GenerateResult& r) {
  int n = 0;
  for (const auto& c : r.choices) n += c.completion_tokens;
  return n;
}
}  // namespace

GenerateResult CachedBackend::generate(const GenerateRequest& r) {
  json req = r.to_json();
  std::string key = key_of(req);
  if (read_)
    if (auto res = decode_entry<GenerateResult>(cache_->get(key)); res && !res->choices.empty()) {
      res->cached = true;
      return *res;
    }
  auto t0 = std::chrono::steady_clock::now();
  GenerateResult res = inner_->generate(r);
  if (cacheable(res))
    cache_->put(key, "generate", identity(), req, res.to_json(), res.prompt_tokens, completion_tokens(res),
                ms_since(t0));
  else
    log_warn("the LLM answered an empty text: returned as it is, not cached");
  return res;
}

std::vector<GenerateResult> CachedBackend::generate_many(const std::vector<GenerateRequest>& rs,
                                                         const OnDone& on_done) {
  std::vector<GenerateResult> out(rs.size());
  std::vector<size_t> todo;
  std::vector<GenerateRequest> misses;
  std::vector<std::string> keys(rs.size());
  std::vector<json> reqs(rs.size());
  for (size_t i = 0; i < rs.size(); ++i) {
    reqs[i] = rs[i].to_json();
    keys[i] = key_of(reqs[i]);
    if (read_) {
      if (auto hit = decode_entry<GenerateResult>(cache_->get(keys[i])); hit && !hit->choices.empty()) {
        out[i] = std::move(*hit);
        out[i].cached = true;
        if (on_done) on_done(i, out[i]);
        continue;
      }
    }
    todo.push_back(i);
    misses.push_back(rs[i]);
  }
  if (misses.empty()) return out;
  auto t0 = std::chrono::steady_clock::now();
  std::mutex mu;
  // Each result is stored the moment it arrives: if a later request fails, the finished ones are kept.
  inner_->generate_many(misses, [&](size_t k, const GenerateResult& res) {
    size_t i = todo[k];
    std::lock_guard lk(mu);
    out[i] = res;
    if (cacheable(res))
      cache_->put(keys[i], "generate", identity(), reqs[i], res.to_json(), res.prompt_tokens, completion_tokens(res),
                  ms_since(t0));
    if (on_done) on_done(i, res);
  });
  return out;
}

LogprobResult CachedBackend::logprobs(const LogprobRequest& r) {
  json req = r.to_json();
  std::string key = key_of(req);
  if (read_)
    if (auto hit = decode_entry<LogprobResult>(cache_->get(key))) return *hit;
  auto t0 = std::chrono::steady_clock::now();
  LogprobResult res = inner_->logprobs(r);
  if (!res.logprobs.empty())
    cache_->put(key, "logprobs", identity(), req, res.to_json(), 0, static_cast<int>(res.logprobs.size()),
                ms_since(t0));
  return res;
}

EmbedResult CachedBackend::embed(const EmbedRequest& r) {
  // One cache entry per text: the same snippet embedded in another batch is not embedded again.
  EmbedResult out;
  out.vectors.resize(r.texts.size());
  std::vector<size_t> todo;
  EmbedRequest miss;
  miss.task = r.task;
  std::vector<std::string> keys(r.texts.size());
  std::vector<json> reqs(r.texts.size());
  for (size_t i = 0; i < r.texts.size(); ++i) {
    EmbedRequest one;
    one.task = r.task;
    one.texts = {r.texts[i]};
    reqs[i] = one.to_json();
    keys[i] = key_of(reqs[i]);
    if (read_)
      if (auto hit = decode_entry<EmbedResult>(cache_->get(keys[i])); hit && hit->vectors.size() == 1) {
        out.vectors[i] = std::move(hit->vectors[0]);
        ++out.cached;
        continue;
      }
    todo.push_back(i);
    miss.texts.push_back(r.texts[i]);
  }
  if (todo.empty()) return out;
  auto t0 = std::chrono::steady_clock::now();
  EmbedResult fresh = inner_->embed(miss);
  double ms = ms_since(t0) / static_cast<double>(todo.size());
  for (size_t k = 0; k < todo.size(); ++k) {
    size_t i = todo[k];
    out.vectors[i] = std::move(fresh.vectors.at(k));
    if (out.vectors[i].empty()) continue;  // never cached: it would be served forever
    EmbedResult one;
    one.vectors = {out.vectors[i]};
    cache_->put(keys[i], "embed", identity(), reqs[i], one.to_json(), 0, 0, ms);
  }
  return out;
}

}  // namespace repoctx
