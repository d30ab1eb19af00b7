// The llama backend on the tiny random-weight model, with the real llama.cpp runtime.
#include <gtest/gtest.h>

#include <cmath>
#include <nlohmann/json.hpp>

#include <llama.h>
#include "helpers.h"
#include "llm/cache.h"

#include "llm/llama_backend.h"
#include "llm_fixtures.h"
#include "util/error.h"

using namespace repoctx;
using nlohmann::json;
using repoctx::testing::tiny_model_path;

namespace {

LlmBackend& tiny() {
  static std::unique_ptr<LlmBackend> b = [] {
    LlamaOptions o;
    o.model_path = tiny_model_path();
    o.threads = 2;
    o.ctx = 2048;
    return make_llama_backend(o);
  }();
  return *b;
}

GenerateRequest chat(const std::string& text, int max_tokens = 16) {
  GenerateRequest r;
  r.messages = {{"system", "You decompose functions into steps."}, {"user", text}};
  r.max_tokens = max_tokens;
  return r;
}

// W (vocab x d) of the tiny model, read through the backend's GGUF reader.
const std::vector<float>& unembedding(int64_t& vocab, int64_t& dim) {
  static std::vector<float> w;
  static int64_t v = 0, d = 0;
  if (w.empty()) {
    auto info = tiny().unembedding_info();
    v = info.vocab;
    d = info.dim;
    w.resize(static_cast<size_t>(v * d));
    tiny().read_unembedding(
        4096, [&](int64_t r0, int64_t n, const float* data) { std::copy(data, data + n * d, w.begin() + r0 * d); });
  }
  vocab = v;
  dim = d;
  return w;
}

// logits = W * (rmsnorm(h) * output_norm); output_norm is all ones in the test model.
std::vector<double> logits_from_hidden(const float* h) {
  int64_t V, D;
  const auto& W = unembedding(V, D);
  double ss = 0;
  for (int64_t i = 0; i < D; ++i) ss += static_cast<double>(h[i]) * h[i];
  double inv = 1.0 / std::sqrt(ss / static_cast<double>(D) + 1e-6);
  std::vector<double> z(static_cast<size_t>(V));
  for (int64_t v = 0; v < V; ++v) {
    double acc = 0;
    const float* row = W.data() + v * D;
    for (int64_t i = 0; i < D; ++i) acc += static_cast<double>(row[i]) * h[i] * inv;
    z[static_cast<size_t>(v)] = acc;
  }
  return z;
}

}  // namespace

TEST(LlamaBackend, GreedyGenerationIsDeterministic) {
  auto a = tiny().generate(chat("Decompose: def add(a, b): return a + b"));
  auto b = tiny().generate(chat("Decompose: def add(a, b): return a + b"));
  ASSERT_EQ(a.choices.size(), 1u);
  EXPECT_EQ(a.choices[0].tokens, b.choices[0].tokens);
  EXPECT_EQ(a.choices[0].text, b.choices[0].text);
  EXPECT_EQ(a.choices[0].completion_tokens, 16);
  EXPECT_GT(a.prompt_tokens, 10);
  // Sampling with seeds: reproducible per seed, n samples returned.
  auto s = chat("x", 8);
  s.temperature = 0.8;
  s.top_p = 0.95;
  s.n = 4;
  s.seed = 7;
  auto s1 = tiny().generate(s);
  auto s2 = tiny().generate(s);
  ASSERT_EQ(s1.choices.size(), 4u);
  for (int i = 0; i < 4; ++i) EXPECT_EQ(s1.choices[i].tokens, s2.choices[i].tokens);
  EXPECT_NE(s1.choices[0].tokens, s1.choices[1].tokens);
}

TEST(LlamaBackend, JsonSchemaConstrainedOutputAlwaysParses) {
  const std::string schema = R"({"type":"object","properties":{
      "steps":{"type":"array","minItems":1,"maxItems":3,"items":{"type":"object","properties":{
          "description":{"type":"string","maxLength":24},"snippet":{"type":"string","maxLength":24}},
          "required":["description","snippet"]}},
      "verdict":{"enum":["yes","no"]},
      "confidence":{"type":"integer","minimum":0,"maximum":10}},
      "required":["steps","verdict","confidence"]})";
  for (int seed = 0; seed < 4; ++seed) {
    auto r = chat("Decompose this function into steps: def f(x): return x * 2", 400);
    r.json_schema = schema;
    r.temperature = seed == 0 ? 0.0 : 0.9;
    r.seed = static_cast<uint64_t>(seed);
    auto g = tiny().generate(r);
    json j = json::parse(g.choices[0].text, nullptr, false);
    ASSERT_FALSE(j.is_discarded()) << "seed " << seed << ": " << g.choices[0].text;
    ASSERT_TRUE(j["steps"].is_array());
    EXPECT_GE(j["steps"].size(), 1u);
    EXPECT_LE(j["steps"].size(), 3u);
    EXPECT_TRUE(j["verdict"] == "yes" || j["verdict"] == "no");
    EXPECT_GE(j["confidence"].get<int>(), 0);
    EXPECT_LE(j["confidence"].get<int>(), 10);
  }
  auto bad = chat("x");
  bad.json_schema = "{not json";
  EXPECT_THROW(tiny().generate(bad), Error);
}

TEST(LlamaBackend, HiddenStatesHaveTheModelWidthAndProduceTheGreedyTokens) {
  auto r = chat("Reason about the implementation of: validate the input shape", 12);
  r.hidden_states = true;
  auto g = tiny().generate(r).choices[0];
  int64_t V, D;
  unembedding(V, D);
  ASSERT_EQ(g.hidden_dim, tiny().hidden_dim());
  ASSERT_EQ(g.hidden_dim, D);
  ASSERT_EQ(g.hidden.size(), g.tokens.size() * static_cast<size_t>(D));
  // The captured state of response token i is the last layer's output before the final norm; through
  // the final RMS norm and the unembedding it must give the logits whose argmax greedy decoding chose
  // as token i+1.
  for (size_t i = 0; i + 1 < g.tokens.size(); ++i) {
    auto z = logits_from_hidden(g.hidden.data() + i * static_cast<size_t>(D));
    size_t arg = static_cast<size_t>(std::max_element(z.begin(), z.end()) - z.begin());
    EXPECT_EQ(static_cast<int32_t>(arg), g.tokens[i + 1]) << "position " << i;
  }
  // Capturing does not change what is generated.
  auto plain = chat("Reason about the implementation of: validate the input shape", 12);
  EXPECT_EQ(tiny().generate(plain).choices[0].tokens, g.tokens);
}

TEST(LlamaBackend, LogprobsAgreeWithADirectComputationFromTheLogits) {
  // Direct computation with llama.cpp's API in this test: tokenize prompt + continuation, one forward
  // pass with logits at every position, log-softmax of each next token.
  const std::string prompt = "def compute(values):\n    total = 0\n", cont = "    for v in values:\n        total += v";
  llama_model_params mp = llama_model_default_params();
  llama_model* model = llama_model_load_from_file(tiny_model_path().c_str(), mp);
  ASSERT_NE(model, nullptr);
  const llama_vocab* vocab = llama_model_get_vocab(model);
  auto tok = [&](const std::string& t, bool special) {
    int n = -llama_tokenize(vocab, t.data(), static_cast<int32_t>(t.size()), nullptr, 0, special, true);
    std::vector<llama_token> out(static_cast<size_t>(n));
    llama_tokenize(vocab, t.data(), static_cast<int32_t>(t.size()), out.data(), n, special, true);
    return out;
  };
  auto p = tok(prompt, true), c = tok(cont, false);
  std::vector<llama_token> all = p;
  all.insert(all.end(), c.begin(), c.end());
  llama_context_params cp = llama_context_default_params();
  cp.n_ctx = 512;
  llama_context* ctx = llama_init_from_model(model, cp);
  llama_batch b = llama_batch_init(static_cast<int32_t>(all.size()), 0, 1);
  for (size_t i = 0; i < all.size(); ++i) {
    b.token[i] = all[i];
    b.pos[i] = static_cast<llama_pos>(i);
    b.n_seq_id[i] = 1;
    b.seq_id[i][0] = 0;
    b.logits[i] = 1;
  }
  b.n_tokens = static_cast<int32_t>(all.size());
  ASSERT_EQ(llama_decode(ctx, b), 0);
  const int V = llama_vocab_n_tokens(vocab);
  std::vector<double> direct;
  for (size_t i = p.size() - 1; i + 1 < all.size(); ++i) {
    const float* z = llama_get_logits_ith(ctx, static_cast<int32_t>(i));
    double mx = *std::max_element(z, z + V), sum = 0;
    for (int v = 0; v < V; ++v) sum += std::exp(static_cast<double>(z[v]) - mx);
    direct.push_back(static_cast<double>(z[all[i + 1]]) - mx - std::log(sum));
  }
  llama_batch_free(b);
  llama_free(ctx);
  llama_model_free(model);

  LogprobRequest lr;
  lr.prompt = prompt;
  lr.continuation = cont;
  auto lp = tiny().logprobs(lr);
  ASSERT_EQ(lp.logprobs.size(), direct.size());
  ASSERT_EQ(lp.token_ids.size(), c.size());
  for (size_t i = 0; i < direct.size(); ++i) {
    EXPECT_EQ(lp.token_ids[i], c[i]);
    EXPECT_NEAR(lp.logprobs[i], direct[i], 1e-4) << "token " << i;
  }
  EXPECT_NEAR(lp.perplexity(), std::exp(-lp.sum() / static_cast<double>(lp.logprobs.size())), 1e-9);
  // Scoring given token ids gives the same numbers.
  lr.continuation_tokens.assign(c.begin(), c.end());
  auto by_ids = tiny().logprobs(lr);
  for (size_t i = 0; i < direct.size(); ++i) EXPECT_NEAR(by_ids.logprobs[i], lp.logprobs[i], 1e-9);
}

TEST(LlamaBackend, EmbeddingsAreNormalisedAndDeterministic) {
  EmbedRequest r;
  r.texts = {"parse a json file", "compute the mean of an array", "parse a json file"};
  r.task = EmbedTask::document;
  auto e = tiny().embed(r);
  ASSERT_EQ(e.vectors.size(), 3u);
  for (const auto& v : e.vectors) {
    ASSERT_EQ(static_cast<int>(v.size()), tiny().hidden_dim());
    double n = 0;
    for (float x : v) n += static_cast<double>(x) * x;
    EXPECT_NEAR(std::sqrt(n), 1.0, 1e-5);
  }
  EXPECT_EQ(e.vectors[0], e.vectors[2]);
  EXPECT_NE(e.vectors[0], e.vectors[1]);
}

TEST(LlamaBackend, UnembeddingIsReadInBlocksAndTiedModelsUseTokenEmbeddings) {
  int64_t V, D;
  const auto& W = unembedding(V, D);
  EXPECT_EQ(V, 151936);
  EXPECT_EQ(D, 64);
  // A block size that does not divide the vocabulary gives the same rows.
  std::vector<float> last(static_cast<size_t>(D));
  tiny().read_unembedding(1000, [&](int64_t r0, int64_t n, const float* data) {
    if (r0 + n == V) std::copy(data + (n - 1) * D, data + n * D, last.begin());
  });
  EXPECT_TRUE(std::equal(last.begin(), last.end(), W.begin() + (V - 1) * D));

  repoctx::testing::TempDir d;
  TestModelSpec s;
  s.vocab_path = default_vocab_path();
  s.out_path = d.str() + "/tied.gguf";
  s.tied = true;
  s.f16 = true;
  write_test_model(s);
  LlamaOptions o;
  o.model_path = s.out_path;
  auto tied = make_llama_backend(o);
  auto info = tied->unembedding_info();
  EXPECT_TRUE(info.tied);
  EXPECT_EQ(info.tensor_type, "f16");
  EXPECT_EQ(info.vocab, 151936);
  auto g = tied->generate(chat("hello", 4));
  EXPECT_EQ(g.choices[0].completion_tokens, 4);
}

TEST(LlamaBackend, BadModelFilesGiveClearErrors) {
  LlamaOptions o;
  o.model_path = "/nonexistent/model.gguf";
  try {
    make_llama_backend(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::not_found);
  }
  repoctx::testing::TempDir d;
  d.write("junk.gguf", "this is not a gguf file");
  o.model_path = d.str() + "/junk.gguf";
  try {
    make_llama_backend(o);
    FAIL();
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ExitCode::bad_input);
  }
  auto r = chat(std::string(20000, 'x'), 4);  // far beyond the 2048-token context
  EXPECT_THROW(tiny().generate(r), Error);
}

TEST(LlmCache, ARerunRepeatsNoWork) {
  repoctx::testing::TempDir d;
  LlamaOptions o;
  o.model_path = tiny_model_path();
  auto cache = std::make_shared<LlmCache>(d.str() + "/cache.db");
  CachedBackend cb(make_llama_backend(o), cache);
  auto r = chat("cache me", 6);
  r.hidden_states = true;
  auto first = cb.generate(r);
  auto st1 = cache->stats();
  EXPECT_EQ(st1.misses, 1);
  auto second = cb.generate(r);
  auto st2 = cache->stats();
  EXPECT_EQ(st2.hits, 1);
  EXPECT_EQ(first.choices[0].tokens, second.choices[0].tokens);
  EXPECT_EQ(first.choices[0].hidden, second.choices[0].hidden);  // hidden states survive the cache
  EmbedRequest er;
  er.texts = {"a", "b"};
  cb.embed(er);
  er.texts = {"b", "c"};  // "b" comes from the cache, only "c" is embedded
  cb.embed(er);
  auto st3 = cache->stats();
  EXPECT_EQ(st3.by_op_model["embed\t" + cb.identity()].entries, 3);
  // A new process (new cache object) sees everything.
  LlmCache again(d.str() + "/cache.db");
  EXPECT_TRUE(again.get(cb.key_of(r.to_json())).has_value());
}

#include "index/embedding_store.h"
#include "projection/debias.h"
#include "projection/step_projector.h"
#include "projection/subspace.h"
#include "projection/vector_store.h"
#include "util/hash.h"

TEST(ProjectionEndToEnd, StepsInDebiasedVectorsOutStoredAndSearched) {
  repoctx::testing::TempDir d;
  SubspaceOptions so;
  so.cache_dir = d.str() + "/subspaces";
  // A random matrix has a flat spectrum: at 0.98 only one direction is left. 0.6 keeps a space wide
  // enough for distinct steps to stay distinct.
  so.energy_threshold = 0.6;
  auto sub = ReasoningSubspace::compute(tiny(), so);
  EXPECT_EQ(sub.dim(), 64);
  EXPECT_GT(sub.reasoning_dim(), 10);
  EXPECT_FALSE(sub.from_cache());
  auto again = ReasoningSubspace::compute(tiny(), so);  // cached per model file and threshold
  EXPECT_TRUE(again.from_cache());
  EXPECT_EQ(again.k(), sub.k());
  EXPECT_EQ(again.basis(), sub.basis());

  StepProjectionOptions po;
  po.max_tokens = 16;
  StepProjector proj(tiny(), sub, po);
  std::vector<std::pair<std::string, std::string>> steps = {
      {"Validate that the input array is not empty", "if len(x) == 0:\n    raise ValueError('empty')"},
      {"Check the shape of the input and raise on mismatch", "if a.shape != b.shape:\n    raise ValueError"},
      {"Sum the values of the list", "total = sum(values)"},
      {"Compute the mean of the values", "mean = total / len(values)"},
      {"Open the file and read its lines", "with open(p) as f:\n    lines = f.readlines()"},
      {"Return the result as a dictionary", "return {'mean': mean}"}};
  auto P = proj.project_many(steps);
  ASSERT_EQ(P.size(), steps.size());
  for (const auto& p : P) EXPECT_EQ(static_cast<int>(p.size()), sub.reasoning_dim());
  // The same step again: identical (greedy decoding).
  auto p0 = proj.project(steps[0].first, steps[0].second);
  EXPECT_EQ(p0, P[0]);
  auto m = build_mu_pc1(P);
  std::vector<std::vector<float>> D;
  for (const auto& p : P) D.push_back(debias(p, m));
  EXPECT_LT(std::fabs(mean_pairwise_cosine(D)), std::fabs(mean_pairwise_cosine(P)) + 1e-9);

  // Stored by content hash, read back exactly.
  EmbeddingStore store(d.str() + "/index.db", "step_projections");
  std::vector<std::pair<std::string, std::vector<float>>> rows;
  for (size_t i = 0; i < steps.size(); ++i)
    rows.emplace_back(content_hash(steps[i].first + "\x1f" + steps[i].second), P[i]);
  store.put(sub.id(), rows);
  auto back = store.get(sub.id(), {rows[2].first});
  ASSERT_EQ(back.size(), 1u);
  EXPECT_EQ(back[rows[2].first], P[2]);

  // Searched: each debiased vector is its own nearest neighbour (cosine 1).
  auto vs = make_vector_store("flat", sub.reasoning_dim());
  for (size_t i = 0; i < D.size(); ++i) vs->add(static_cast<int64_t>(i), D[i].data());
  for (size_t i = 0; i < D.size(); ++i) {
    auto top = vs->search(D[i].data(), D.size());
    auto self = std::find_if(top.begin(), top.end(), [&](const auto& s) { return s.first == static_cast<int64_t>(i); });
    ASSERT_NE(self, top.end());
    EXPECT_NEAR(self->second, 1.0f, 1e-4);
    EXPECT_NEAR(top[0].second, 1.0f, 1e-4);
  }
}
