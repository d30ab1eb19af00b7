// A recorded-response LLM backend for deterministic unit tests of pipeline logic: answers are chosen by the
// request's purpose (the pipeline stage) from handlers a test writes, hidden states and embeddings are
// bag-of-words vectors of the prompt (so steps with the same words are similar), and the unembedding
// matrix is a fixed random matrix with two dominant directions. It stands beside the tests against the
// real llama.cpp runtime and llama-server (test_llm_*.cpp, test_procedural.cpp's real-model tests).
#pragma once

#include <cmath>
#include <functional>
#include <map>
#include <mutex>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "llm/backend.h"

namespace repoctx::testing {

class ScriptedBackend : public LlmBackend {
 public:
  using Handler = std::function<std::string(const GenerateRequest&)>;
  static constexpr int kDim = 24;
  static constexpr int64_t kVocab = 96;

  std::map<std::string, Handler> answers;  // by purpose; a purpose without a handler answers "{}"
  // Hidden states of a reasoning prompt; empty = the model answered nothing (no response token).
  std::function<bool(const GenerateRequest&)> empty_hidden = [](const GenerateRequest&) { return false; };
  // Embedding of a text (default: one fixed direction, so every description/snippet pair agrees).
  std::function<std::vector<float>(const std::string&)> embed_fn;
  int fail_after = -1;               // generate() throws once this many calls were answered
  std::map<std::string, int> calls;  // by purpose
  int total_calls = 0;
  int embed_calls = 0;  // embed() requests answered
  std::string id = "scripted-v1";

  int context_tokens = 0;  // what context_length() reports (0: unknown, as the default backend)
  std::string identity() const override { return id; }
  int context_length() override { return context_tokens; }
  Capabilities capabilities() const override {
    Capabilities c;
    c.hidden_states = true;
    return c;
  }

  static std::vector<float> bag_of_words(const std::string& text) {
    // Words hash into the directions the subspace keeps (2..kDim-1); a shared offset makes raw vectors
    // anisotropic, as real hidden states are, which PCA debiasing must remove.
    std::vector<float> v(kDim, 0.0f);
    std::string w;
    auto flush = [&] {
      if (w.size() > 2) v[2 + std::hash<std::string>{}(w) % (kDim - 2)] += 1.0f;
      w.clear();
    };
    for (char c : text) {
      if (std::isalnum(static_cast<unsigned char>(c)))
        w.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
      else
        flush();
    }
    flush();
    for (int i = 2; i < kDim; ++i) v[i] += 3.0f;
    return v;
  }

  GenerateResult generate(const GenerateRequest& r) override {
    {
      std::lock_guard lk(mu_);
      if (fail_after >= 0 && total_calls >= fail_after) throw std::runtime_error("scripted backend: simulated crash");
      ++total_calls;
      ++calls[r.purpose];
    }
    GenerateResult g;
    Generation c;
    c.finish_reason = "stop";
    if (r.hidden_states) {
      if (!empty_hidden(r)) {
        // The reasoning about a step follows its description (the "Step: ..." line of step_reasoning.txt).
        std::string user = r.messages.empty() ? r.prompt : r.messages.back().content;
        auto at = user.find("Step: ");
        if (at != std::string::npos) user = user.substr(at + 6, user.find('\n', at) - at - 6);
        c.hidden = bag_of_words(user);
        c.hidden_dim = kDim;
        c.text = "reasoning";
        c.completion_tokens = 1;
      }
    } else {
      auto it = answers.find(r.purpose);
      c.text = it == answers.end() ? "{}" : it->second(r);
      c.completion_tokens = static_cast<int>(c.text.size() / 4) + 1;
    }
    g.prompt_tokens = 10;
    for (const auto& m : r.messages) g.prompt_tokens += static_cast<int>(m.content.size() / 4);
    for (int k = 1; k < r.n; ++k) g.choices.push_back(c);  // n samples (AlignCoder's query enhancement)
    g.choices.push_back(std::move(c));
    return g;
  }

  // Log-probabilities of a continuation after a prompt (unset: logprobs() throws "not scripted").
  std::function<LogprobResult(const LogprobRequest&)> logprob_fn;
  LogprobResult logprobs(const LogprobRequest& r) override {
    if (!logprob_fn) throw std::runtime_error("not scripted");
    return logprob_fn(r);
  }

  EmbedResult embed(const EmbedRequest& r) override {
    {
      std::lock_guard lk(mu_);
      ++embed_calls;
    }
    EmbedResult out;
    for (const auto& t : r.texts) {
      std::vector<float> v = embed_fn ? embed_fn(t) : std::vector<float>{1.0f, 0.0f, 0.0f};
      double n = 0;
      for (float x : v) n += x * x;
      for (auto& x : v) x = static_cast<float>(x / std::sqrt(n > 0 ? n : 1));
      out.vectors.push_back(v);
    }
    return out;
  }

  UnembeddingInfo unembedding_info() override { return {kVocab, kDim, false, "f32"}; }
  void read_unembedding(int64_t block_rows, const std::function<void(int64_t, int64_t, const float*)>& sink) override {
    std::mt19937 rng(7);
    std::normal_distribution<float> nd(0, 1);
    std::vector<float> w(static_cast<size_t>(kVocab * kDim));
    for (int64_t i = 0; i < kVocab; ++i)
      for (int j = 0; j < kDim; ++j) w[static_cast<size_t>(i * kDim + j)] = nd(rng) * (j < 2 ? 40.0f : 1.0f);
    for (int64_t a = 0; a < kVocab; a += block_rows) {
      int64_t n = std::min(block_rows, kVocab - a);
      sink(a, n, w.data() + a * kDim);
    }
  }
  int hidden_dim() const override { return kDim; }

 private:
  std::mutex mu_;
};

// The user message of a request (where prompts put the function, step and candidates).
inline std::string user_text(const GenerateRequest& r) {
  std::string s;
  for (const auto& m : r.messages) s += m.content + "\n";
  return s;
}

}  // namespace repoctx::testing
