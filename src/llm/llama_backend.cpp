#include "llm/llama_backend.h"

#include <fcntl.h>
#include <ggml-backend.h>
#include <ggml.h>
#include <gguf.h>
#include <llama.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

#include "llm/gguf_matrix.h"
#include "llm/json_schema.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/hash.h"
#include "util/log.h"
#include "util/paths.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;

std::string model_file_identity(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0)
    throw Error(ExitCode::not_found, "model file '" + path + "' does not exist (pass a GGUF path with --model)");
  std::string memo_path = user_cache_dir() + "/model-ids.json";
  std::string abs = std::filesystem::absolute(path).string();
  std::string memo_key = abs + "|" + std::to_string(st.st_size) + "|" +
                         std::to_string(static_cast<int64_t>(st.st_mtim.tv_sec) * 1000000000LL + st.st_mtim.tv_nsec);
  json memo = json::object();
  {
    std::ifstream in(memo_path);
    if (in) memo = json::parse(in, nullptr, false);
    if (!memo.is_object()) memo = json::object();
  }
  if (memo.contains(memo_key)) return memo[memo_key].get<std::string>();
  // Stream the file through XXH3-128 in 16 MB blocks (models are gigabytes).
  int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) throw Error(ExitCode::not_found, "cannot read model file '" + path + "': " + std::strerror(errno));
  std::string h;
  {
    void* map = ::mmap(nullptr, static_cast<size_t>(st.st_size), PROT_READ, MAP_PRIVATE, fd, 0);
    if (map == MAP_FAILED) {
      ::close(fd);
      throw Error(ExitCode::bad_input, "cannot map model file '" + path + "'");
    }
    h = content_hash(std::string_view(static_cast<const char*>(map), static_cast<size_t>(st.st_size)));
    ::munmap(map, static_cast<size_t>(st.st_size));
    ::close(fd);
  }
  std::string id = "gguf:" + h;
  memo[memo_key] = id;
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(memo_path).parent_path(), ec);
  std::ofstream(memo_path) << memo.dump(1);
  return id;
}

namespace {

void quiet_log(ggml_log_level level, const char* text, void*) {
  if (level == GGML_LOG_LEVEL_ERROR) fmt::print(stderr, "llama.cpp: {}", text);
}

std::once_flag g_backend_once;

struct HiddenCapture {
  std::string tensor_name;  // "l_out-<n_layer-1>"
  bool active = false;
  int dim = 0;
  std::vector<float> rows;  // appended rows
};

// llama.cpp's eval callback: asked for every graph node; we take the last layer's output before the
// final norm. Returning true for that node only keeps the scheduler's extra work to one tensor.
bool eval_callback(struct ggml_tensor* t, bool ask, void* user) {
  auto* cap = static_cast<HiddenCapture*>(user);
  if (!cap->active) return false;
  if (std::strcmp(t->name, cap->tensor_name.c_str()) != 0) return false;
  if (ask) return true;
  int64_t d = t->ne[0], n = t->ne[1];
  if (t->type != GGML_TYPE_F32 || d != cap->dim) return true;
  size_t old = cap->rows.size();
  cap->rows.resize(old + static_cast<size_t>(d * n));
  ggml_backend_tensor_get(t, cap->rows.data() + old, 0, static_cast<size_t>(d * n) * sizeof(float));
  return true;
}

class LlamaBackend : public LlmBackend {
 public:
  explicit LlamaBackend(const LlamaOptions& o) : o_(o) {
    std::call_once(g_backend_once, [&] {
      if (!o.verbose) llama_log_set(quiet_log, nullptr);
      llama_backend_init();
    });
    identity_ = model_file_identity(o.model_path);
    auto mp = llama_model_default_params();
    mp.n_gpu_layers = o.gpu_layers;
    model_ = llama_model_load_from_file(o.model_path.c_str(), mp);
    if (!model_)
      throw Error(ExitCode::bad_input, "llama.cpp could not load '" + o.model_path +
                                           "' (not a GGUF model, or an architecture this llama.cpp does not know)");
    vocab_ = llama_model_get_vocab(model_);
    dim_ = llama_model_n_embd(model_);
    n_layer_ = llama_model_n_layer(model_);
    capture_.tensor_name = "l_out-" + std::to_string(n_layer_ - 1);
    capture_.dim = dim_;
    threads_ = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    char buf[256] = {0};
    if (llama_model_meta_val_str(model_, "general.name", buf, sizeof buf) > 0) name_ = buf;
    std::string lname = name_ + " " + o.model_path;
    std::transform(lname.begin(), lname.end(), lname.begin(), [](unsigned char c) { return std::tolower(c); });
    query_prefix_ = o.query_prefix;
    document_prefix_ = o.document_prefix;
    if (query_prefix_.empty() && document_prefix_.empty() && lname.find("embeddinggemma") != std::string::npos) {
      // The task prompts embeddinggemma was trained with (model card, "retrieval" task).
      query_prefix_ = "task: search result | query: ";
      document_prefix_ = "title: none | text: ";
    }
  }

  ~LlamaBackend() override {
    if (gen_ctx_) llama_free(gen_ctx_);
    if (emb_ctx_) llama_free(emb_ctx_);
    if (model_) llama_model_free(model_);
  }

  std::string identity() const override { return identity_; }
  Capabilities capabilities() const override {
    Capabilities c;
    c.hidden_states = true;
    c.grammar = true;
    return c;
  }
  int hidden_dim() const override { return dim_; }
  int context_length() override { return std::min(o_.ctx, llama_model_n_ctx_train(model_)); }  // ensure_gen_ctx's

  GenerateResult generate(const GenerateRequest& r) override {
    if (!r.tools.empty())
      throw Error(ExitCode::usage,
                  "the in-process llama.cpp backend has no native tool calls: constrain the output with a JSON "
                  "schema instead (for the ReAct agents: --param tool_calls=schema), or serve the model with "
                  "llama-server --jinja");
    std::lock_guard lk(mu_);
    ensure_gen_ctx();
    std::string prompt = r.messages.empty() ? r.prompt : apply_template(r.messages);
    auto toks = tokenize(prompt, true);
    int n_ctx = static_cast<int>(llama_n_ctx(gen_ctx_));
    if (static_cast<int>(toks.size()) >= n_ctx)
      throw Error(ExitCode::bad_input, "prompt of " + std::to_string(toks.size()) +
                                           " tokens does not fit the context of " + std::to_string(n_ctx) +
                                           " tokens (raise ctx in the model configuration)");
    std::string grammar = r.grammar;
    if (grammar.empty() && !r.json_schema.empty()) grammar = json_schema_to_gbnf(r.json_schema);
    GenerateResult res;
    res.prompt_tokens = static_cast<int>(toks.size());
    for (int s = 0; s < std::max(1, r.n); ++s) {
      res.choices.push_back(generate_one(r, toks, grammar, r.seed + static_cast<uint64_t>(s), n_ctx));
    }
    return res;
  }

  LogprobResult logprobs(const LogprobRequest& r) override {
    std::lock_guard lk(mu_);
    ensure_gen_ctx();
    std::string ctx_text = r.messages.empty() ? r.prompt : apply_template(r.messages);
    auto ctx_toks = tokenize(ctx_text, true);
    std::vector<llama_token> cont =
        r.continuation_tokens.empty()
            ? tokenize(r.continuation, false)
            : std::vector<llama_token>(r.continuation_tokens.begin(), r.continuation_tokens.end());
    if (ctx_toks.empty()) ctx_toks.push_back(llama_vocab_bos(vocab_));
    std::vector<llama_token> all = ctx_toks;
    all.insert(all.end(), cont.begin(), cont.end());
    int n_ctx = static_cast<int>(llama_n_ctx(gen_ctx_));
    if (static_cast<int>(all.size()) > n_ctx)
      throw Error(ExitCode::bad_input, "context + continuation (" + std::to_string(all.size()) +
                                           " tokens) exceed the context of " + std::to_string(n_ctx));
    llama_memory_clear(llama_get_memory(gen_ctx_), true);
    LogprobResult out;
    const int n_vocab = llama_vocab_n_tokens(vocab_);
    size_t first_out = ctx_toks.size() - 1;  // the position whose logits predict the first continuation token
    int nb = o_.batch;
    for (size_t start = 0; start < all.size(); start += static_cast<size_t>(nb)) {
      size_t end = std::min(all.size(), start + static_cast<size_t>(nb));
      llama_batch b = llama_batch_init(static_cast<int32_t>(end - start), 0, 1);
      std::vector<size_t> outs;
      for (size_t i = start; i < end; ++i) {
        int k = b.n_tokens++;
        b.token[k] = all[i];
        b.pos[k] = static_cast<llama_pos>(i);
        b.n_seq_id[k] = 1;
        b.seq_id[k][0] = 0;
        bool want = i >= first_out && i + 1 < all.size();
        b.logits[k] = want ? 1 : 0;
        if (want) outs.push_back(i);
      }
      if (llama_decode(gen_ctx_, b) != 0) {
        llama_batch_free(b);
        decode_failed("while scoring a continuation");
      }
      for (size_t i : outs) {
        const float* logits = llama_get_logits_ith(gen_ctx_, static_cast<int32_t>(i - start));
        double mx = -INFINITY;
        for (int v = 0; v < n_vocab; ++v) mx = std::max(mx, static_cast<double>(logits[v]));
        double z = 0;
        for (int v = 0; v < n_vocab; ++v) z += std::exp(static_cast<double>(logits[v]) - mx);
        llama_token next = all[i + 1];
        out.logprobs.push_back(static_cast<double>(logits[next]) - mx - std::log(z));
        out.tokens.push_back(piece(next));
        out.token_ids.push_back(next);
      }
      llama_batch_free(b);
    }
    return out;
  }

  EmbedResult embed(const EmbedRequest& r) override {
    std::lock_guard lk(mu_);
    ensure_emb_ctx();
    EmbedResult out;
    const std::string& prefix = r.task == EmbedTask::query      ? query_prefix_
                                : r.task == EmbedTask::document ? document_prefix_
                                                                : empty_;
    int n_ctx = static_cast<int>(llama_n_ctx(emb_ctx_));
    for (const auto& text : r.texts) {
      throw_if_interrupted("earlier LLM results are cached");
      auto toks = tokenize(prefix + text, true);
      if (static_cast<int>(toks.size()) > n_ctx) toks.resize(static_cast<size_t>(n_ctx));  // embedding models truncate
      if (toks.empty()) toks.push_back(llama_vocab_bos(vocab_));
      llama_memory_clear(llama_get_memory(emb_ctx_), true);
      llama_batch b = llama_batch_init(static_cast<int32_t>(toks.size()), 0, 1);
      for (size_t i = 0; i < toks.size(); ++i) {
        int k = b.n_tokens++;
        b.token[k] = toks[i];
        b.pos[k] = static_cast<llama_pos>(i);
        b.n_seq_id[k] = 1;
        b.seq_id[k][0] = 0;
        b.logits[k] = 1;
      }
      int rc = llama_decode(emb_ctx_, b);
      llama_batch_free(b);
      if (rc != 0) decode_failed("while embedding");
      const float* e = llama_get_embeddings_seq(emb_ctx_, 0);
      if (!e) throw Error(ExitCode::llm, "the model returned no pooled embedding");
      std::vector<float> v(e, e + dim_);
      double n2 = 0;
      for (float x : v) n2 += static_cast<double>(x) * x;
      double inv = n2 > 0 ? 1.0 / std::sqrt(n2) : 0.0;
      for (float& x : v) x = static_cast<float>(x * inv);
      out.vectors.push_back(std::move(v));
    }
    return out;
  }

  UnembeddingInfo unembedding_info() override {
    auto m = gguf_unembedding_info(o_.model_path);
    UnembeddingInfo u;
    u.vocab = m.rows;
    u.dim = m.cols;
    u.tied = m.tied;
    u.tensor_type = m.type;
    return u;
  }

  void read_unembedding(int64_t block_rows, const std::function<void(int64_t, int64_t, const float*)>& sink) override {
    gguf_read_rows(o_.model_path, gguf_unembedding_info(o_.model_path), block_rows, sink);
  }

 private:
  static bool abort_on_interrupt(void*) { return interrupted(); }
  struct SamplerFree {
    void operator()(llama_sampler* s) const {
      if (s) llama_sampler_free(s);
    }
  };
  using SamplerPtr = std::unique_ptr<llama_sampler, SamplerFree>;

  // llama_decode returned non-zero: aborted by Ctrl-C (the abort callback), or a real failure.
  [[noreturn]] static void decode_failed(const char* where) {
    throw_if_interrupted("earlier LLM results are cached");
    throw Error(ExitCode::llm, std::string("llama_decode failed ") + where);
  }

  void ensure_gen_ctx() {
    if (gen_ctx_) return;
    auto cp = llama_context_default_params();
    cp.n_ctx = static_cast<uint32_t>(std::min(o_.ctx, llama_model_n_ctx_train(model_)));
    cp.n_batch = static_cast<uint32_t>(o_.batch);
    cp.n_ubatch = static_cast<uint32_t>(o_.batch);
    cp.n_threads = threads_;
    cp.n_threads_batch = threads_;
    cp.no_perf = true;
    cp.cb_eval = eval_callback;
    cp.cb_eval_user_data = &capture_;
    cp.abort_callback = abort_on_interrupt;  // Ctrl-C stops a long prompt between graph nodes
    cp.abort_callback_data = nullptr;
    gen_ctx_ = llama_init_from_model(model_, cp);
    if (!gen_ctx_) throw Error(ExitCode::llm, "llama.cpp could not create a context (out of memory? lower ctx)");
  }

  void ensure_emb_ctx() {
    if (emb_ctx_) return;
    auto cp = llama_context_default_params();
    cp.n_ctx = static_cast<uint32_t>(std::min(o_.ctx, llama_model_n_ctx_train(model_)));
    cp.n_batch = cp.n_ctx;  // a text is embedded in one batch
    cp.n_ubatch = cp.n_ctx;
    cp.n_threads = threads_;
    cp.n_threads_batch = threads_;
    cp.embeddings = true;
    cp.no_perf = true;
    cp.abort_callback = abort_on_interrupt;
    cp.abort_callback_data = nullptr;
    // Models that declare a pooling (embedding models) use it; generative models are mean-pooled.
    cp.pooling_type = LLAMA_POOLING_TYPE_UNSPECIFIED;
    emb_ctx_ = llama_init_from_model(model_, cp);
    if (emb_ctx_ && llama_pooling_type(emb_ctx_) == LLAMA_POOLING_TYPE_NONE) {
      llama_free(emb_ctx_);
      cp.pooling_type = LLAMA_POOLING_TYPE_MEAN;
      emb_ctx_ = llama_init_from_model(model_, cp);
    }
    if (!emb_ctx_) throw Error(ExitCode::llm, "llama.cpp could not create an embedding context");
  }

  std::string apply_template(const std::vector<ChatMessage>& ms) {
    const char* tmpl = llama_model_chat_template(model_, nullptr);
    if (!tmpl)
      throw Error(ExitCode::bad_input,
                  "model '" + o_.model_path + "' has no chat template: send raw prompts, or use an instruct model");
    std::vector<llama_chat_message> cm;
    for (const auto& m : ms) cm.push_back({m.role.c_str(), m.content.c_str()});
    std::vector<char> buf(4096);
    int n = llama_chat_apply_template(tmpl, cm.data(), cm.size(), true, buf.data(), static_cast<int32_t>(buf.size()));
    if (n > static_cast<int>(buf.size())) {
      buf.resize(static_cast<size_t>(n));
      n = llama_chat_apply_template(tmpl, cm.data(), cm.size(), true, buf.data(), static_cast<int32_t>(buf.size()));
    }
    if (n < 0) throw Error(ExitCode::bad_input, "llama.cpp does not support this model's chat template");
    return std::string(buf.data(), static_cast<size_t>(n));
  }

  std::vector<llama_token> tokenize(const std::string& text, bool add_special) {
    int n = -llama_tokenize(vocab_, text.data(), static_cast<int32_t>(text.size()), nullptr, 0, add_special, true);
    std::vector<llama_token> t(static_cast<size_t>(std::max(n, 0)));
    if (n > 0) llama_tokenize(vocab_, text.data(), static_cast<int32_t>(text.size()), t.data(), n, add_special, true);
    return t;
  }

  std::string piece(llama_token t) {
    char buf[256];
    int n = llama_token_to_piece(vocab_, t, buf, sizeof buf, 0, false);
    if (n < 0) {
      std::string big(static_cast<size_t>(-n), '\0');
      n = llama_token_to_piece(vocab_, t, big.data(), -n, 0, false);
      return big.substr(0, static_cast<size_t>(std::max(n, 0)));
    }
    return std::string(buf, static_cast<size_t>(n));
  }

  bool decode_tokens(const std::vector<llama_token>& toks, size_t pos0) {
    for (size_t start = 0; start < toks.size(); start += static_cast<size_t>(o_.batch)) {
      size_t end = std::min(toks.size(), start + static_cast<size_t>(o_.batch));
      llama_batch b = llama_batch_init(static_cast<int32_t>(end - start), 0, 1);
      for (size_t i = start; i < end; ++i) {
        int k = b.n_tokens++;
        b.token[k] = toks[i];
        b.pos[k] = static_cast<llama_pos>(pos0 + i);
        b.n_seq_id[k] = 1;
        b.seq_id[k][0] = 0;
        b.logits[k] = i + 1 == toks.size() ? 1 : 0;
      }
      int rc = llama_decode(gen_ctx_, b);
      llama_batch_free(b);
      if (rc != 0) return false;
    }
    return true;
  }

  Generation generate_one(const GenerateRequest& r, const std::vector<llama_token>& prompt, const std::string& grammar,
                          uint64_t seed, int n_ctx) {
    llama_memory_clear(llama_get_memory(gen_ctx_), true);
    capture_.active = false;
    capture_.rows.clear();
    if (!decode_tokens(prompt, 0)) decode_failed("on the prompt");
    auto sp = llama_sampler_chain_default_params();
    sp.no_perf = true;
    SamplerPtr chain(llama_sampler_chain_init(sp)), grammar_sampler;
    llama_sampler* smpl = chain.get();
    llama_sampler* gram = nullptr;
    if (!grammar.empty()) {
      grammar_sampler.reset(llama_sampler_init_grammar(vocab_, grammar.c_str(), "root"));
      gram = grammar_sampler.get();
      if (!gram) throw Error(ExitCode::bad_input, "invalid grammar for constrained generation");
    }
    if (r.temperature <= 0) {
      llama_sampler_chain_add(smpl, llama_sampler_init_greedy());
    } else {
      if (r.top_p < 1.0) llama_sampler_chain_add(smpl, llama_sampler_init_top_p(static_cast<float>(r.top_p), 1));
      llama_sampler_chain_add(smpl, llama_sampler_init_temp(static_cast<float>(r.temperature)));
      llama_sampler_chain_add(smpl, llama_sampler_init_dist(static_cast<uint32_t>(seed)));
    }
    Generation g;
    capture_.active = r.hidden_states;
    size_t pos = prompt.size();
    int budget = std::min(r.max_tokens, n_ctx - static_cast<int>(prompt.size()) - 1);
    g.finish_reason = "length";
    struct CaptureOff {  // the eval callback stops capturing however the loop ends
      HiddenCapture& c;
      ~CaptureOff() { c.active = false; }
    } capture_off{capture_};
    for (int i = 0; i < budget; ++i) {
      throw_if_interrupted("LLM answers finished so far are cached; re-run to resume");
      llama_token t = gram ? sample_constrained(smpl, gram) : llama_sampler_sample(smpl, gen_ctx_, -1);
      if (llama_vocab_is_eog(vocab_, t)) {
        g.finish_reason = "stop";
        break;
      }
      g.tokens.push_back(t);
      g.text += piece(t);
      // Feed the token back: this computes the next logits and, when capturing, this token's state.
      std::vector<llama_token> one{t};
      if (!decode_tokens(one, pos)) decode_failed("during generation (context full?)");
      ++pos;
      bool stopped = false;
      for (const auto& s : r.stop) {
        if (!s.empty() && ends_with(g.text, s)) {
          g.text.resize(g.text.size() - s.size());
          stopped = true;
        }
      }
      if (stopped) {
        g.finish_reason = "stop";
        break;
      }
    }
    capture_.active = false;
    g.completion_tokens = static_cast<int>(g.tokens.size());
    if (r.hidden_states) {
      g.hidden_dim = dim_;
      g.hidden = std::move(capture_.rows);
      g.hidden.resize(std::min(g.hidden.size(), g.tokens.size() * static_cast<size_t>(dim_)));
      capture_.rows.clear();
      if (r.hidden_pool == "mean" && !g.hidden.empty()) {
        size_t rows = g.hidden.size() / static_cast<size_t>(dim_);
        std::vector<double> acc(static_cast<size_t>(dim_), 0.0);
        for (size_t t = 0; t < rows; ++t)
          for (int i = 0; i < dim_; ++i)
            acc[static_cast<size_t>(i)] += g.hidden[t * static_cast<size_t>(dim_) + static_cast<size_t>(i)];
        g.hidden.assign(static_cast<size_t>(dim_), 0.0f);
        for (int i = 0; i < dim_; ++i)
          g.hidden[static_cast<size_t>(i)] =
              static_cast<float>(acc[static_cast<size_t>(i)] / static_cast<double>(rows));
      } else if (!r.hidden_pool.empty() && r.hidden_pool != "mean") {
        throw Error(ExitCode::usage, "hidden_pool must be empty or \"mean\"");
      }
    }
    return g;
  }

  // Grammar-constrained sampling as llama.cpp's common sampler does it: sample unconstrained, keep the
  // token if the grammar accepts it, otherwise apply the grammar to every candidate and sample again.
  // Checking one token is cheap; checking 152k candidates each step is what made constrained output slow.
  llama_token sample_constrained(llama_sampler* chain, llama_sampler* gram) {
    const float* logits = llama_get_logits_ith(gen_ctx_, -1);
    const int n_vocab = llama_vocab_n_tokens(vocab_);
    cand_.resize(static_cast<size_t>(n_vocab));
    for (int v = 0; v < n_vocab; ++v) cand_[static_cast<size_t>(v)] = {v, logits[v], 0.0f};
    llama_token_data_array arr{cand_.data(), cand_.size(), -1, false};
    llama_sampler_apply(chain, &arr);
    llama_token t = arr.data[arr.selected].id;
    llama_token_data single{t, 1.0f, 0.0f};
    llama_token_data_array one{&single, 1, -1, false};
    llama_sampler_apply(gram, &one);
    if (std::isfinite(one.data[0].logit)) {
      llama_sampler_accept(gram, t);
      llama_sampler_accept(chain, t);
      return t;
    }
    for (int v = 0; v < n_vocab; ++v) cand_[static_cast<size_t>(v)] = {v, logits[v], 0.0f};
    llama_token_data_array all{cand_.data(), cand_.size(), -1, false};
    llama_sampler_apply(gram, &all);
    llama_sampler_apply(chain, &all);
    t = all.data[all.selected].id;
    llama_sampler_accept(gram, t);
    llama_sampler_accept(chain, t);
    return t;
  }

  LlamaOptions o_;
  std::string identity_, name_, query_prefix_, document_prefix_, empty_;
  llama_model* model_ = nullptr;
  const llama_vocab* vocab_ = nullptr;
  llama_context* gen_ctx_ = nullptr;
  llama_context* emb_ctx_ = nullptr;
  int dim_ = 0, n_layer_ = 0, threads_ = 1;
  HiddenCapture capture_;
  std::vector<llama_token_data> cand_;
  std::mutex mu_;
};

}  // namespace

std::unique_ptr<LlmBackend> make_llama_backend(const LlamaOptions& o) {
  return std::make_unique<LlamaBackend>(o);
}

}  // namespace repoctx
