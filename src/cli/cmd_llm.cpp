// llm generate|logprobs|embed|info, cache stats|clear, subspace, make-test-model: one LLM operation through
// the configured backend and cache, the cache itself, a model's reasoning subspace, and the random-weight
// test models.
#include <fmt/core.h>

#include <cmath>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "llm/test_model.h"
#include "projection/debias.h"
#include "projection/step_projector.h"
#include "projection/subspace.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/text.h"

using nlohmann::json;

namespace repoctx {
namespace {

json generation_json(const GenerateResult& r) {
  json j = {{"prompt_tokens", r.prompt_tokens}, {"choices", json::array()}};
  for (const auto& c : r.choices) {
    json cj = {{"text", sanitize_utf8(c.text)},
               {"finish_reason", c.finish_reason},
               {"completion_tokens", c.completion_tokens}};
    if (!c.hidden.empty()) {
      cj["hidden_dim"] = c.hidden_dim;
      cj["hidden_rows"] = c.hidden.size() / static_cast<size_t>(std::max(1, c.hidden_dim));
      double n2 = 0;
      for (float x : c.hidden) n2 += static_cast<double>(x) * x;
      cj["hidden_norm"] = std::sqrt(n2);
    }
    j["choices"].push_back(cj);
  }
  return j;
}

struct LlmCmd {
  OutputOptions out;
  ModelOptions models;
  GenerateRequest greq;
  std::vector<std::string> messages;
  std::string schema_file, schema_text;
  LogprobRequest lreq;
  std::vector<std::string> embed_texts;
  std::string embed_task = "none";
  std::string clear_model;

  int generate() {
    for (const auto& m : messages) {
      auto colon = m.find(':');
      if (colon == std::string::npos) throw Error(ExitCode::usage, "--message must be role:text, got '" + m + "'");
      greq.messages.push_back({m.substr(0, colon), m.substr(colon + 1)});
    }
    if (greq.messages.empty() && greq.prompt.empty()) throw Error(ExitCode::usage, "give --prompt or --message");
    if (!schema_file.empty()) {
      greq.json_schema = read_file(schema_file, "schema file");
    } else {
      greq.json_schema = schema_text;
    }
    LlmSession session(llm_config(models));
    auto r = session.llm().generate(greq);
    if (out.json)
      print_json(generation_json(r));
    else
      for (const auto& c : r.choices) std::cout << c.text << "\n";
    return 0;
  }

  int logprobs() {
    LlmSession session(llm_config(models));
    auto r = session.llm().logprobs(lreq);
    print_json({{"tokens", r.tokens}, {"logprobs", r.logprobs}, {"sum", r.sum()}, {"perplexity", r.perplexity()}});
    return 0;
  }

  int embed() {
    EmbedRequest er;
    er.texts = embed_texts;
    if (embed_task != "query" && embed_task != "document" && embed_task != "none")
      throw Error(ExitCode::usage, "--task must be query, document or none, not '" + embed_task + "'");
    er.task = embed_task == "query"      ? EmbedTask::query
              : embed_task == "document" ? EmbedTask::document
                                         : EmbedTask::none;
    LlmSession session(llm_config(models));
    auto r = session.embedder().embed(er);
    json j = json::array();
    for (const auto& v : r.vectors) j.push_back(v);
    std::cout << j.dump() << "\n";
    return 0;
  }

  int info() {
    LlmSession session(llm_config(models));
    auto& b = session.llm();
    auto caps = b.capabilities();
    json j = {{"identity", b.identity()},
              {"hidden_states", caps.hidden_states},
              {"grammar", caps.grammar},
              {"hidden_dim", b.hidden_dim()}};
    if (caps.hidden_states) {
      auto u = b.unembedding_info();
      j["unembedding"] = {{"vocab", u.vocab}, {"dim", u.dim}, {"tied", u.tied}, {"type", u.tensor_type}};
    }
    print_json(j);
    return 0;
  }

  int cache_stats() {
    LlmSession session(llm_config(models));
    auto st = session.cache().stats();
    json j = json::array();
    for (const auto& [k, r] : st.by_op_model)
      j.push_back({{"op", k.substr(0, k.find('\t'))},
                   {"model", k.substr(k.find('\t') + 1)},
                   {"entries", r.entries},
                   {"prompt_tokens", r.prompt_tokens},
                   {"completion_tokens", r.completion_tokens},
                   {"ms", r.ms}});
    if (out.json) {
      print_json({{"path", session.cache().path()}, {"rows", j}});
      return 0;
    }
    fmt::print("{}\n", session.cache().path());
    for (const auto& r : j)
      fmt::print("{:<10} {:<50} {:>8} entries {:>10} prompt tok {:>10} completion tok {:>10.0f} ms\n",
                 r["op"].get<std::string>(), r["model"].get<std::string>(), r["entries"].get<int64_t>(),
                 r["prompt_tokens"].get<int64_t>(), r["completion_tokens"].get<int64_t>(), r["ms"].get<double>());
    return 0;
  }

  int cache_clear() {
    LlmSession session(llm_config(models));
    auto n = session.cache().clear(clear_model);
    if (out.json)
      print_json({{"deleted", n}});
    else
      fmt::print("{} entries deleted\n", n);
    return 0;
  }
};

// `repoctx subspace`: the reasoning subspace of a model, its energy curve, and (with steps) the
// anisotropy of their projections before and after debiasing.
struct SubspaceCmd {
  OutputOptions out;
  ModelOptions models;
  SubspaceOptions so;
  std::string energy = "squared", steps_file, dump_basis;
  int max_tokens = 128;
  bool fresh = false;

  std::vector<std::pair<std::string, std::string>> read_steps() const {
    std::ifstream in(steps_file);
    if (!in) throw Error(ExitCode::not_found, "cannot read steps file '" + steps_file + "'");
    std::vector<std::pair<std::string, std::string>> steps;
    int n = 0;
    for (std::string line; std::getline(in, line);) {
      ++n;
      if (trim(line).empty()) continue;
      json s = json::parse(line, nullptr, false);
      if (s.is_discarded() || !s.is_object() || !s.contains("description") || !s["description"].is_string())
        throw Error(ExitCode::bad_input, fmt::format("{} line {}: each line must be JSON with a string "
                                                     "\"description\" (and \"snippet\")",
                                                     steps_file, n));
      steps.emplace_back(s["description"].get<std::string>(), s.value("snippet", ""));
    }
    return steps;
  }

  json anisotropy(LlmBackend& model, const ReasoningSubspace& sub) const {
    StepProjectionOptions po;
    po.max_tokens = max_tokens;
    StepProjector proj(model, sub, po);
    auto P = proj.project_many(read_steps());
    auto m = build_mu_pc1(P);
    std::vector<std::vector<float>> D;
    for (const auto& p : P) D.push_back(debias(p, m));
    return {{"steps", P.size()},
            {"mean_pairwise_cosine_raw", mean_pairwise_cosine(P)},
            {"mean_pairwise_cosine_debiased", mean_pairwise_cosine(D)},
            {"pc1_explained_variance", m.explained}};
  }

  void print_text(const ReasoningSubspace& sub, const json& j) const {
    auto curve = sub.energy_curve();
    fmt::print("model      {}\nW          vocab x d = {} (energy = {})\n", j["model"].get<std::string>(), sub.dim(),
               j["energy"].get<std::string>());
    fmt::print("threshold  {:.3f}: k = {} dominant directions, reasoning subspace d - k = {} ({:.1f}% of d){}\n",
               sub.threshold(), sub.k(), sub.reasoning_dim(), 100.0 * sub.reasoning_fraction(),
               sub.from_cache() ? " [cached]" : fmt::format(" [computed in {:.1f}s]", sub.seconds()));
    fmt::print("\n threshold      k   (d-k)/d\n");
    for (const auto& r : j["thresholds"])
      fmt::print(" {:9.3f} {:6d}   {:6.1f}%\n", r["threshold"].get<double>(), r["k"].get<int>(),
                 100.0 * r["reasoning_fraction"].get<double>());
    fmt::print("\n energy curve (cumulative share by number of directions)\n");
    for (int row = 0; row <= 10; ++row) {
      size_t i = static_cast<size_t>(std::min(sub.dim() - 1, row * (sub.dim() - 1) / 10));
      int bar = static_cast<int>(curve[i] * 50);
      fmt::print(" k={:5d} {:6.3f} |{}\n", i + 1, curve[i], std::string(static_cast<size_t>(bar), '#'));
    }
    if (j.contains("steps"))
      fmt::print(
          "\n{} steps: mean pairwise cosine {:.3f} raw -> {:.3f} debiased (PC1 explains {:.1f}% of the variance)\n",
          j["steps"].get<size_t>(), j["mean_pairwise_cosine_raw"].get<double>(),
          j["mean_pairwise_cosine_debiased"].get<double>(), 100.0 * j["pc1_explained_variance"].get<double>());
  }

  int run() {
    if (energy != "squared" && energy != "linear") throw Error(ExitCode::usage, "--energy must be squared or linear");
    so.energy = energy == "squared" ? EnergyDefinition::squared : EnergyDefinition::linear;
    so.use_cache = !fresh;
    LlmSession session(llm_config(models));
    auto& model = session.llm();
    auto sub = ReasoningSubspace::compute(model, so);
    if (!dump_basis.empty())  // raw float32, column-major d x (d - k): column j is the j-th reasoning direction
      write_file(dump_basis,
                 std::string(reinterpret_cast<const char*>(sub.basis().data()), sub.basis().size() * sizeof(float)));
    json j = {{"model", model.identity()},
              {"d", sub.dim()},
              {"k", sub.k()},
              {"reasoning_dim", sub.reasoning_dim()},
              {"reasoning_fraction", sub.reasoning_fraction()},
              {"threshold", sub.threshold()},
              {"energy",
               so.energy == EnergyDefinition::squared ? "sum of squared singular values" : "sum of singular values"},
              {"seconds", sub.seconds()},
              {"cached", sub.from_cache()}};
    auto curve = sub.energy_curve();
    json table = json::array();
    for (double t : {0.5, 0.8, 0.9, 0.95, 0.98, 0.99, 0.995, 0.999}) {
      int k = sub.dim();
      for (int i = 0; i < sub.dim(); ++i)
        if (curve[static_cast<size_t>(i)] >= t - 1e-12) {
          k = i + 1;
          break;
        }
      table.push_back(
          {{"threshold", t}, {"k", k}, {"reasoning_fraction", static_cast<double>(sub.dim() - k) / sub.dim()}});
    }
    j["thresholds"] = table;
    j["singular_values"] = sub.singular_values();
    if (!steps_file.empty()) j.update(anisotropy(model, sub));
    if (out.json)
      print_json(j);
    else
      print_text(sub, j);
    return 0;
  }
};

void add_llm_group(CLI::App& app, Commands& out) {
  auto l = std::make_shared<LlmCmd>();
  auto* llm = app.add_subcommand("llm", "run one LLM operation through the configured backend and cache");
  llm->require_subcommand(1);
  auto* c = llm->add_subcommand("generate", "chat or completion (optionally JSON-schema constrained)");
  add_model_options(c, l->models);
  add_output_options(c, l->out);
  c->add_option("--prompt", l->greq.prompt, "raw text to complete");
  c->add_option("--message", l->messages, "chat message as role:text (repeatable, e.g. --message 'user:hello')");
  c->add_option("--schema", l->schema_file, "JSON schema file constraining the output");
  c->add_option("--schema-json", l->schema_text, "JSON schema text constraining the output");
  c->add_option("--temperature", l->greq.temperature, "0 = greedy")->capture_default_str();
  c->add_option("--top-p", l->greq.top_p)->capture_default_str();
  c->add_option("--max-tokens", l->greq.max_tokens)->capture_default_str();
  c->add_option("-n", l->greq.n, "samples")->capture_default_str();
  c->add_option("--seed", l->greq.seed)->capture_default_str();
  c->add_option("--stop", l->greq.stop, "stop string (repeatable)");
  c->add_flag("--hidden", l->greq.hidden_states, "capture last-layer hidden states of the response tokens");
  out.push_back({c, [l] { return l->generate(); }});

  c = llm->add_subcommand("logprobs", "log-probabilities and perplexity of a continuation given a prompt");
  add_model_options(c, l->models);
  add_output_options(c, l->out, false);  // JSON always
  c->add_option("--prompt", l->lreq.prompt, "context (raw text)")->required();
  c->add_option("--continuation", l->lreq.continuation, "text to score")->required();
  out.push_back({c, [l] { return l->logprobs(); }});

  c = llm->add_subcommand("embed", "embed texts (L2-normalised vectors, JSON)");
  add_model_options(c, l->models);
  add_output_options(c, l->out, false);
  c->add_option("texts", l->embed_texts, "texts")->required();
  c->add_option("--task", l->embed_task, "query, document or none (adds the model's task prompt)")
      ->capture_default_str();
  out.push_back({c, [l] { return l->embed(); }});

  c = llm->add_subcommand("info", "model identity, capabilities, hidden size, unembedding matrix (JSON)");
  add_model_options(c, l->models);
  add_output_options(c, l->out, false);
  out.push_back({c, [l] { return l->info(); }});

  auto* cache = app.add_subcommand("cache", "LLM cache statistics and maintenance");
  cache->require_subcommand(1);
  c = cache->add_subcommand("stats", "entries, tokens and time by operation and model");
  add_model_options(c, l->models);
  add_output_options(c, l->out);
  out.push_back({c, [l] { return l->cache_stats(); }});
  c = cache->add_subcommand("clear", "delete cached results");
  add_model_options(c, l->models);
  add_output_options(c, l->out);
  c->add_option("--model-id", l->clear_model, "only this model identity");
  out.push_back({c, [l] { return l->cache_clear(); }});
}

}  // namespace

void add_llm_commands(CLI::App& app, Commands& out) {
  add_llm_group(app, out);

  auto s = std::make_shared<SubspaceCmd>();
  auto* c =
      app.add_subcommand("subspace", "the reasoning subspace of a model: k, d, (d-k)/d, energy curve, anisotropy");
  add_model_options(c, s->models);
  add_output_options(c, s->out);
  c->add_option("--threshold", s->so.energy_threshold, "energy threshold")->capture_default_str();
  c->add_option("--energy", s->energy, "squared (sum of s^2) or linear (sum of s)")->capture_default_str();
  c->add_option("--steps", s->steps_file, "JSONL of {description, snippet}: report anisotropy before/after debiasing");
  c->add_option("--max-tokens", s->max_tokens, "response tokens pooled per step")->capture_default_str();
  c->add_flag("--fresh", s->fresh, "recompute instead of reading the subspace cache");
  c->add_option("--dump-basis", s->dump_basis, "write V_R (float32, column-major d x (d-k)) to this file");
  out.push_back({c, [s] { return s->run(); }});

#ifdef REPOCTX_WITH_LLAMA
  struct MakeModel {
    OutputOptions out;
    TestModelSpec tm;
    std::string shape = "tiny";
  };
  auto m = std::make_shared<MakeModel>();
  c = app.add_subcommand("make-test-model", "write a random-weight GGUF (qwen2 architecture) for tests and benchmarks");
  c->add_option("--out", m->tm.out_path, "output GGUF path")->required();
  c->add_option("--shape", m->shape, "tiny (hidden 64, 2 layers) or qwen2.5-0.5b (hidden 896, 24 layers)")
      ->capture_default_str();
  c->add_option("--vocab", m->tm.vocab_path, "vocab-only GGUF (default: llama.cpp's ggml-vocab-qwen2.gguf)");
  c->add_option("--hidden", m->tm.hidden);
  c->add_option("--layers", m->tm.layers);
  c->add_flag("--tied", m->tm.tied, "no output.weight (tied unembedding)");
  c->add_flag("--f16", m->tm.f16, "float16 weights");
  c->add_flag("--ascii-only", m->tm.ascii_only,
              "bias the output to printable-ASCII tokens (valid UTF-8 for servers' parsers)");
  c->add_option("--seed", m->tm.seed)->capture_default_str();
  add_output_options(c, m->out, false);
  out.push_back({c, [m] {
                   auto& tm = m->tm;
                   if (tm.vocab_path.empty()) tm.vocab_path = default_vocab_path();
                   if (m->shape == "qwen2.5-0.5b") {
                     tm.hidden = 896, tm.layers = 24, tm.heads = 14, tm.kv_heads = 2, tm.ff = 4864, tm.context = 32768;
                   } else if (m->shape != "tiny") {
                     throw Error(ExitCode::usage, "--shape must be tiny or qwen2.5-0.5b");
                   }
                   write_test_model(tm);
                   if (!m->out.quiet) fmt::print(stderr, "wrote {}\n", tm.out_path);
                   return 0;
                 }});
#endif
}

}  // namespace repoctx
