#include "llm/metered.h"

#include <chrono>

namespace repoctx {

using nlohmann::json;

namespace {
double since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}
json row_json(const LlmUsage::Row& r) {
  return {{"calls", r.calls},
          {"cached", r.cached},
          {"prompt_tokens", r.prompt_tokens},
          {"completion_tokens", r.completion_tokens},
          {"embedded_texts", r.embedded_texts},
          {"seconds", r.seconds}};
}
}  // namespace

LlmUsage::Row& LlmUsage::Row::operator+=(const Row& o) {
  calls += o.calls;
  cached += o.cached;
  prompt_tokens += o.prompt_tokens;
  completion_tokens += o.completion_tokens;
  embedded_texts += o.embedded_texts;
  seconds += o.seconds;
  return *this;
}

LlmUsage::Row LlmUsage::total() const {
  Row t;
  for (const auto& [k, r] : by_purpose) t += r;
  return t;
}

void LlmUsage::add(const LlmUsage& o) {
  for (const auto& [k, r] : o.by_purpose) by_purpose[k] += r;
}

LlmUsage LlmUsage::since(const LlmUsage& earlier) const {
  LlmUsage out;
  for (const auto& [k, r] : by_purpose) {
    Row d = r;
    if (auto it = earlier.by_purpose.find(k); it != earlier.by_purpose.end()) {
      d.calls -= it->second.calls;
      d.cached -= it->second.cached;
      d.prompt_tokens -= it->second.prompt_tokens;
      d.completion_tokens -= it->second.completion_tokens;
      d.embedded_texts -= it->second.embedded_texts;
      d.seconds -= it->second.seconds;
    }
    if (d.calls != 0 || d.embedded_texts != 0) out.by_purpose[k] = d;
  }
  return out;
}

json LlmUsage::to_json() const {
  json j = json::object();
  for (const auto& [k, r] : by_purpose) j[k.empty() ? "untagged" : k] = row_json(r);
  j["total"] = row_json(total());
  return j;
}

void MeteredBackend::record(const std::string& purpose, const GenerateResult& g, double seconds) {
  std::lock_guard lk(mu_);
  auto& row = usage_.by_purpose[purpose];
  ++row.calls;
  if (g.cached) ++row.cached;
  row.prompt_tokens += g.prompt_tokens;
  for (const auto& c : g.choices) row.completion_tokens += c.completion_tokens;
  row.seconds += seconds;
}

GenerateResult MeteredBackend::generate(const GenerateRequest& r) {
  auto t0 = std::chrono::steady_clock::now();
  GenerateResult g = inner_.generate(r);
  record(r.purpose, g, since(t0));
  return g;
}

std::vector<GenerateResult> MeteredBackend::generate_many(const std::vector<GenerateRequest>& rs,
                                                          const OnDone& on_done) {
  auto t0 = std::chrono::steady_clock::now();
  // Concurrent requests overlap, so per-request times do not add up to the wall time; the batch's wall
  // time is split evenly over its requests so that the column sums to the time actually spent.
  auto out = inner_.generate_many(rs, on_done);
  double each = rs.empty() ? 0 : since(t0) / static_cast<double>(rs.size());
  for (size_t i = 0; i < rs.size(); ++i) record(rs[i].purpose, out[i], each);
  return out;
}

LogprobResult MeteredBackend::logprobs(const LogprobRequest& r) {
  auto t0 = std::chrono::steady_clock::now();
  auto res = inner_.logprobs(r);
  std::lock_guard lk(mu_);
  auto& row = usage_.by_purpose["logprobs"];
  ++row.calls;
  row.completion_tokens += static_cast<int64_t>(res.logprobs.size());
  row.seconds += since(t0);
  return res;
}

EmbedResult MeteredBackend::embed(const EmbedRequest& r) {
  auto t0 = std::chrono::steady_clock::now();
  auto res = inner_.embed(r);
  std::lock_guard lk(mu_);
  auto& row = usage_.by_purpose[r.purpose.empty() ? "embed" : r.purpose];
  ++row.calls;
  if (res.cached == r.texts.size()) ++row.cached;
  row.embedded_texts += static_cast<int64_t>(r.texts.size());
  row.seconds += since(t0);
  return res;
}

LlmUsage MeteredBackend::usage() const {
  std::lock_guard lk(mu_);
  return usage_;
}

}  // namespace repoctx
