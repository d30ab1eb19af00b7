// repoctx command line: index, inspect and retrieve from a repository.
#include <fmt/core.h>
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <mimalloc.h>

#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <sstream>

#include "eval/bench.h"
#include "eval/bench_agent_tools.h"
#include "eval/rq2.h"
#include "eval/runner.h"
#include "eval/task_builder.h"
#include "generate/generator.h"
#include "generate/static_checks.h"
#include "util/subprocess.h"
#ifdef REPOCTX_WITH_LLAMA
#include "eval/bench_llm.h"
#include "eval/bench_projection.h"
#endif
#include "eval/retrieval_eval.h"
#include "eval/train_structural.h"
#include "index/index.h"
#include "index/schema.h"
#include "index/store.h"
#include "llm/config.h"
#include "llm/prompts.h"
#include "llm/test_model.h"
#include "projection/debias.h"
#include "projection/step_projector.h"
#include "projection/subspace.h"
#include "repo/parser.h"
#include "retrieve/aligncoder_snippets.h"
#include "retrieve/function_selection.h"
#include "retrieve/retriever.h"
#include "util/error.h"
#include "util/log.h"
#include "util/memory.h"
#include "util/text.h"

using nlohmann::json;
namespace fs = std::filesystem;

namespace repoctx {
namespace {

struct Common {
  std::string repo;
  std::string db;
  bool quiet = false;
  bool verbose = false;
  bool json_out = false;
  bool no_refresh = false;
  double max_file_mb = 4.0;
  bool follow_symlinks = false;
  bool keep_vendored = false;
  bool keep_generated = false;
  int threads = 0;
  int snippet_lines = 15;
};

void add_common(CLI::App* c, Common& o, bool with_index_opts) {
  c->add_option("repo", o.repo, "repository root (a folder of Python or Java sources)")->required();
  c->add_option("--db", o.db,
                "index database (default: <repo>/.repoctx/index.db for git trees, else ~/.cache/repoctx/indexes/...)");
  c->add_flag("-q,--quiet", o.quiet, "only warnings and errors on stderr");
  c->add_flag("-v,--verbose", o.verbose, "debug messages (timings) on stderr");
  c->add_flag("--json", o.json_out, "machine-readable output on stdout");
  if (with_index_opts) {
    c->add_option("--max-file-mb", o.max_file_mb, "skip (with a warning) source files larger than this")
        ->capture_default_str();
    c->add_flag("--follow-symlinks", o.follow_symlinks, "follow directory symlinks (loops are detected)");
    c->add_flag("--keep-vendored", o.keep_vendored, "index vendored trees (vendor/, third_party/, extern/, ...)");
    c->add_flag("--keep-generated", o.keep_generated, "index files marked as generated (\"do not edit\", *_pb2.py)");
    c->add_option("--threads", o.threads, "parser threads (0 = all cores)")->capture_default_str();
    c->add_option("--snippet-lines", o.snippet_lines, "AlignCoder split-aggregate snippet length L")
        ->capture_default_str();
  }
}

IndexOptions index_options(const Common& o) {
  IndexOptions io;
  io.db_path = o.db;
  io.threads = o.threads;
  io.snippet_lines = o.snippet_lines;
  io.walk.max_file_bytes = static_cast<uint64_t>(o.max_file_mb * 1048576.0);
  io.walk.follow_symlinks = o.follow_symlinks;
  io.walk.skip_vendored = !o.keep_vendored;
  io.walk.skip_generated = !o.keep_generated;
  io.progress = !o.quiet;
  return io;
}

std::string db_path_for(const Common& o) {
  return o.db.empty() ? default_index_path(o.repo) : o.db;
}

// Queries see the tree as it is now: an incremental index run first (cheap when nothing changed).
std::unique_ptr<Engine> open_engine(const Common& o) {
  if (!fs::exists(o.repo)) throw Error(ExitCode::not_found, "repository path '" + o.repo + "' does not exist");
  std::string db = db_path_for(o);
  if (!o.no_refresh) {
    IndexOptions io = index_options(o);
    io.progress = false;
    IndexStats st = build_index(o.repo, io);
    if (st.parsed > 0 && !o.quiet) log_info("index refreshed: {} files re-parsed", st.parsed);
  }
  return Engine::open(db);
}

json hit_json(const Engine& e, const Hit& h, int rank, bool with_text, const TargetContext* ctx) {
  const auto& v = e.view();
  json j;
  j["rank"] = rank;
  j["type"] = h.type == Hit::Type::entity ? "entity" : h.type == Hit::Type::snippet ? "snippet" : "file";
  j["file"] = h.file >= 0 ? v.files()[h.file].path : "";
  if (h.entity >= 0) {
    const auto& en = v.entities()[h.entity];
    j["qualname"] = en.qualname;
    j["kind"] = kind_name(en.kind);
    j["target"] = e.target_name(h.entity);
  }
  j["start_line"] = h.start_line;
  j["end_line"] = h.end_line;
  j["score"] = h.score;
  if (!h.label.empty()) j["label"] = h.label;
  if (!h.features.empty()) j["features"] = h.features;
  if (with_text) {
    std::string text = h.text;
    if (text.empty() && h.file >= 0) {
      bool masked = ctx && h.file == ctx->target.file;
      const std::string& content = masked ? ctx->masked_content : v.content(h.file);
      auto starts = line_starts(content);
      text = std::string(line_range(content, starts, h.start_line, h.end_line));
    }
    j["text"] = sanitize_utf8(text);
  }
  return j;
}

// ---------------------------------------------------------------------------------------- LLM flags
struct LlmFlags {
  std::string config, backend, model, embed_backend, embed_model, hidden_model, cache;
  std::vector<std::string> endpoints, embed_endpoints;
  int threads = 0, ctx = 0;
  bool no_cache = false;
};

void add_llm_flags(CLI::App* c, LlmFlags& f) {
  c->add_option("--config", f.config, "model configuration file (JSON; see docs/LLM.md)");
  c->add_option("--backend", f.backend, "llama (in-process GGUF) or openai (OpenAI-compatible server)");
  c->add_option("--model", f.model, "GGUF file (llama) or model name (openai)");
  c->add_option("--endpoint", f.endpoints,
                "OpenAI-compatible base URL, e.g. http://127.0.0.1:8080/v1 (repeatable: round-robin with failover)");
  c->add_option("--embed-backend", f.embed_backend, "backend of the embedding model (default: as --backend)");
  c->add_option("--embed-model", f.embed_model, "embedding model (GGUF file or model name); default: the LLM");
  c->add_option("--embed-endpoint", f.embed_endpoints, "embedding server base URL (repeatable)");
  c->add_option(
      "--hidden-model", f.hidden_model,
      "GGUF file whose hidden states project steps (procedural; default: the LLM, which must then be a GGUF)");
  c->add_option("--llm-threads", f.threads, "llama backend threads (0 = all cores)");
  c->add_option("--ctx", f.ctx, "llama backend context length");
  c->add_option("--cache", f.cache, "LLM cache database (default ~/.cache/repoctx/llm-cache.db)");
  c->add_flag("--no-cache", f.no_cache, "do not read cached LLM results (fresh results are still stored)");
}

LlmConfig llm_config(const LlmFlags& f) {
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
  c.validate();
  return c;
}

int cmd_index(const Common& o, bool force, bool rebuild) {
  IndexOptions io = index_options(o);
  io.force = force;
  io.rebuild = rebuild;
  io.verify = true;  // the command that writes into the file checks it first (PRAGMA quick_check)
  IndexStats st = build_index(o.repo, io);
  if (o.json_out) {
    json j = {{"db", st.db_path},
              {"files", st.files_seen},
              {"parsed", st.parsed},
              {"unchanged", st.unchanged},
              {"touched", st.touched},
              {"removed", st.removed},
              {"skipped", st.skipped},
              {"partial", st.partial},
              {"with_errors", st.files_with_errors},
              {"bytes", st.bytes_parsed},
              {"entities", st.entities},
              {"references", st.references},
              {"snippets", st.snippets},
              {"seconds", st.seconds},
              {"complete", st.complete},
              {"peak_rss_mb", peak_rss_mb()}};
    std::cout << j.dump(2) << "\n";
  } else if (!o.quiet) {
    fmt::print(stderr,
               "indexed {} in {:.2f}s: {} files ({} parsed, {} unchanged, {} removed, {} skipped{}), {} entities, {} "
               "references, {} snippets{}\n  index: {}\n",
               o.repo, st.seconds, st.files_seen, st.parsed, st.unchanged, st.removed, st.skipped,
               st.partial ? fmt::format(", {} partly indexed", st.partial) : "", st.entities, st.references,
               st.snippets, st.complete ? "" : " (interrupted: run again to finish)", st.db_path);
  }
  return st.complete ? 0 : static_cast<int>(ExitCode::interrupted);
}

int cmd_symbols(const Common& o, const std::string& kind, const std::string& file, bool jsonl) {
  auto eng = open_engine(o);
  const auto& v = eng->view();
  json arr = json::array();
  for (const auto& e : v.entities()) {
    const auto& f = v.files()[e.file];
    if (!kind.empty() && kind != kind_name(e.kind)) continue;
    if (!file.empty() && f.path != file) continue;
    json j = {{"file", f.path},
              {"module", f.module},
              {"qualname", e.qualname},
              {"kind", kind_name(e.kind)},
              {"start_line", e.start_line},
              {"end_line", e.end_line},
              {"decorated_start_line", e.decorated_start_line},
              {"signature", sanitize_utf8(e.signature)}};
    if (jsonl)
      std::cout << j.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
    else if (o.json_out)
      arr.push_back(std::move(j));
    else
      fmt::print("{}:{}-{}  {:<9} {}\n", f.path, e.start_line, e.end_line, kind_name(e.kind), e.qualname);
  }
  if (o.json_out && !jsonl) std::cout << arr.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  return 0;
}

// `files --skipped`: what the walk skipped (meta "skipped") and the files indexed only in part (a
// "partial" entry in their errors), each with its reason.
json skipped_files(const RepoView& v) {
  json out = json::array();
  auto db = open_index_for_reading(v.db_path());
  auto sk = json::parse(meta_get(*db, "skipped", "[]"), nullptr, false);
  if (sk.is_array())
    for (const auto& row : sk)
      if (row.is_array() && row.size() == 2 && row[0].is_string() && row[1].is_string()) out.push_back(row);
  sql::Stmt s(*db, "SELECT path, errors FROM files WHERE errors LIKE '%\"partial\"%' ORDER BY path");
  while (s.step()) {
    auto errs = json::parse(s.str(1), nullptr, false);
    if (!errs.is_array()) continue;
    for (const auto& e : errs)
      if (e.is_array() && e.size() == 4 && e[3] == "partial" && e[2].is_string())
        out.push_back({s.str(0), "partly indexed: " + e[2].get<std::string>()});
  }
  return out;
}

int cmd_files(const Common& o, bool errors_only, bool skipped) {
  auto eng = open_engine(o);
  const auto& v = eng->view();
  // File names are bytes: one that is not UTF-8 is shown with U+FFFD (JSON must be UTF-8).
  const auto replace = json::error_handler_t::replace;
  if (skipped) {
    json sk = skipped_files(v);
    if (o.json_out) {
      std::cout << sk.dump(2, ' ', false, replace) << "\n";
    } else {
      for (const auto& row : sk)
        fmt::print("{}  ({})\n", sanitize_utf8(row[0].get<std::string>()), sanitize_utf8(row[1].get<std::string>()));
    }
    return 0;
  }
  json arr = json::array();
  for (const auto& f : v.files()) {
    if (errors_only && f.n_errors == 0) continue;
    if (o.json_out)
      arr.push_back({{"path", f.path},
                     {"module", f.module},
                     {"language", language_name(f.language)},
                     {"lines", f.line_count},
                     {"entities", f.n_entities},
                     {"syntax_errors", f.n_errors}});
    else
      fmt::print("{}  {}  {} lines  {} entities{}\n", f.path, f.module, f.line_count, f.n_entities,
                 f.n_errors ? fmt::format("  {} syntax error regions", f.n_errors) : "");
  }
  if (o.json_out) std::cout << arr.dump(2, ' ', false, replace) << "\n";
  return 0;
}

// An embedding model for the dense side when one is configured (flags or config file).
std::unique_ptr<LlmSession> attach_embedder(Engine& eng, const LlmFlags& lf) {
  LlmConfig cfg = llm_config(lf);
  if (!cfg.llm.configured() && !cfg.embedding.configured()) return nullptr;
  auto session = std::make_unique<LlmSession>(std::move(cfg));
  eng.set_embedder(&session->embedder());
  return session;
}

// --param NAME=VALUE (repeatable): VALUE is JSON when it parses as JSON (numbers, true/false), else a string.
void apply_params(ProceduralParams& p, const std::vector<std::string>& kvs) {
  for (const auto& kv : kvs) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) throw Error(ExitCode::usage, "--param takes NAME=VALUE, got '" + kv + "'");
    json v = json::parse(kv.substr(eq + 1), nullptr, false);
    if (v.is_discarded()) v = kv.substr(eq + 1);
    p.apply(json{{kv.substr(0, eq), v}});
  }
}

int cmd_retrieve(const Common& o, const std::string& target, const std::string& query, const std::string& strategy,
                 int top_k, const RetrieverOptions& ro, bool with_text, const LlmFlags& lf) {
  auto eng = open_engine(o);
  auto session = attach_embedder(*eng, lf);
  if (strategy == "procedural") {
    if (!session)
      throw Error(ExitCode::usage,
                  "the procedural strategy needs an LLM with hidden states: pass --model path.gguf "
                  "(and --embed-model for embeddings), or a config file (--config)");
    eng->set_llm(&session->llm());
    eng->set_hidden_states(&session->hidden_states());
  }
  RetrievalQuery q;
  q.top_k = top_k;
  q.text = query;
  if (!target.empty()) q.target = eng->resolve_target(target);
  if (!q.target && q.text.empty()) throw Error(ExitCode::usage, "give --target path::Qual.name or --query TEXT");
  auto r = make_retriever(strategy, *eng, ro);
  auto hits = r->retrieve(q);
  std::optional<TargetContext> ctx;
  if (q.target) ctx = eng->make_context(*q.target);
  if (o.json_out) {
    json j;
    j["strategy"] = strategy;
    if (q.target) j["target"] = eng->target_name(q.target->entity);
    j["query"] = sanitize_utf8(query_text(*eng, q, ctx ? &*ctx : nullptr));
    j["results"] = json::array();
    int rank = 1;
    for (const auto& h : hits) j["results"].push_back(hit_json(*eng, h, rank++, with_text, ctx ? &*ctx : nullptr));
    std::cout << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
    return 0;
  }
  int rank = 1;
  for (const auto& h : hits) {
    json j = hit_json(*eng, h, rank, with_text, ctx ? &*ctx : nullptr);
    std::string name = j.contains("qualname") ? j["qualname"].get<std::string>() : j["type"].get<std::string>();
    fmt::print("{:>3}. {:8.4f}  {}:{}-{}  {}{}\n", rank, h.score, j["file"].get<std::string>(), h.start_line,
               h.end_line, name, h.label.empty() ? "" : " [" + h.label + "]");
    if (with_text) fmt::print("{}\n\n", j["text"].get<std::string>());
    ++rank;
  }
  return 0;
}

// ProjAgent 4.3-4.4 (or a REPOCOD baseline) for one target: the generated function, the patched file or
// its diff on stdout; the repository is never written.
int cmd_generate(const Common& o, const std::string& target, const GenerationParams& gp, const std::string& output,
                 const std::string& trace_path, const LlmFlags& lf) {
  check_generation_method(gp.method);
  if (output != "function" && output != "file" && output != "diff" && output != "json")
    throw Error(ExitCode::usage, "--output must be function, file, diff or json, not '" + output + "'");
  if (target.empty()) throw Error(ExitCode::usage, "give --target path/to/file.py::Qualified.name");
  auto eng = open_engine(o);
  auto session = attach_embedder(*eng, lf);
  if (!session || !session->has_llm())
    throw Error(ExitCode::usage,
                "generation needs an LLM: --model path.gguf, --endpoint URL --model NAME, or --config FILE");
  if (gp.method == "dense" && !eng->has_embedder())
    throw Error(ExitCode::usage, "the dense baseline needs an embedding model (--embed-model)");
  eng->set_llm(&session->llm());
  LlmBackend* hidden = method_uses_procedural(gp.method) ? &session->hidden_states() : nullptr;
  auto t = eng->resolve_target(target);
  auto out = generate_function(*eng, session->llm(), eng->embedder(), hidden, t, gp);
  if (!trace_path.empty()) {
    std::ofstream f(trace_path);
    if (!f) throw Error(ExitCode::bad_input, "cannot write the trace to '" + trace_path + "'");
    f << out.trace.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  }
  if (output == "json") {
    json j = {{"target", eng->target_name(t.entity)},
              {"method", out.method},
              {"function", out.function_text},
              {"diff", out.diff},
              {"rounds", out.rounds},
              {"llm_usage", out.usage.to_json()}};
    j["findings"] = json::array();
    for (const auto& f : out.findings) j["findings"].push_back(f.to_json());
    std::cout << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
  } else if (output == "file") {
    std::cout << out.patched_file;
  } else if (output == "diff") {
    std::cout << out.diff;
  } else {
    std::cout << out.function_text;
  }
  if (!o.quiet)
    log_info("{}: {} refinement round(s), {} finding(s) left, {} LLM call(s) ({} cached)", out.method, out.rounds,
             out.findings.size(), out.usage.total().calls, out.usage.total().cached);
  return 0;
}

// REPOCOD-style evaluation: every (task, method) of the shard, resumable; then the table of all results.
std::vector<std::string> g_argv;  // the command line as given (evaluate --jobs re-runs itself per job)

// `evaluate --jobs N`: N copies of this command, each a shard of this one's share (shard i/n becomes
// i + n*k of n*N) writing to <out>/jobs/<k>, skipping what any folder already finished (so a re-run with
// another N resumes too). The processes generate in parallel; the repository lock serialises their test
// runs and index refreshes. Then one table over all folders.
int run_parallel_jobs(const RunnerOptions& ro, int jobs) {
  fs::create_directories(ro.out_dir);
  std::vector<std::string> base{fs::read_symlink("/proc/self/exe").string()};
  for (size_t i = 1; i < g_argv.size(); ++i) {
    const std::string& a = g_argv[i];
    bool with_value = a == "--jobs" || a == "--shard" || a == "--out" || a == "--done-in";
    if (with_value) {
      ++i;
      continue;
    }
    if (starts_with(a, "--jobs=") || starts_with(a, "--shard=") || starts_with(a, "--out=") ||
        starts_with(a, "--done-in="))
      continue;
    base.push_back(a);
  }
  std::vector<std::string> dirs{ro.out_dir};
  for (int k = 0; k < jobs; ++k) dirs.push_back(ro.out_dir + "/jobs/" + std::to_string(k));
  if (fs::exists(ro.out_dir + "/jobs"))  // folders of an earlier run with more jobs
    for (const auto& d : fs::directory_iterator(ro.out_dir + "/jobs"))
      if (std::find(dirs.begin(), dirs.end(), d.path().string()) == dirs.end()) dirs.push_back(d.path().string());
  std::vector<int> pids;
  for (int k = 0; k < jobs; ++k) {
    auto argv = base;
    argv.insert(argv.end(), {"--jobs", "1", "--out", dirs[static_cast<size_t>(k) + 1], "--shard",
                             fmt::format("{}/{}", ro.shard + ro.shards * k, ro.shards * jobs)});
    for (size_t d = 0; d < dirs.size(); ++d)
      if (d != static_cast<size_t>(k) + 1) argv.insert(argv.end(), {"--done-in", dirs[d]});
    fs::create_directories(dirs[static_cast<size_t>(k) + 1]);
    pids.push_back(spawn_process(argv));
  }
  auto status = wait_processes(pids, &g_interrupted);
  int rc = 0;
  for (int st : status)
    if (st != 0 && rc != static_cast<int>(ExitCode::interrupted)) rc = st;
  std::vector<std::string> with_results;
  for (const auto& d : dirs)
    if (fs::exists(d + "/results.jsonl")) with_results.push_back(d);
  if (with_results.empty()) throw Error(ExitCode::failure, "no job wrote results; see the messages above");
  std::string md = results_table(with_results, false);
  std::ofstream(ro.out_dir + "/table.md") << md;
  std::ofstream(ro.out_dir + "/table.csv") << results_table(with_results, true);
  std::cout << md;
  if (rc != 0) log_warn("a job ended with status {}; re-run the same command to resume", rc);
  return rc;
}

int cmd_evaluate(const Common& o, const std::string& tasks_path, const TaskLoadOptions& tl, RunnerOptions ro,
                 const std::string& methods, const std::string& shard, const LlmFlags& lf, int jobs) {
  {
    std::stringstream ss(methods);
    for (std::string m; std::getline(ss, m, ',');)
      if (!m.empty()) ro.methods.push_back(m);
  }
  if (ro.methods.empty()) throw Error(ExitCode::usage, "--methods is empty");
  if (!shard.empty()) {
    auto sl = shard.find('/');
    if (sl == std::string::npos) throw Error(ExitCode::usage, "--shard takes i/n, e.g. 0/4");
    try {
      ro.shard = std::stoi(shard.substr(0, sl));
      ro.shards = std::stoi(shard.substr(sl + 1));
    } catch (const std::exception&) {
      throw Error(ExitCode::usage, "--shard takes i/n with integers, got '" + shard + "'");
    }
  }
  auto tasks = load_tasks(tasks_path, tl);
  if (jobs < 1) throw Error(ExitCode::usage, "--jobs takes a count >= 1");
  if (jobs > 1) return run_parallel_jobs(ro, jobs);
  ro.self_exe = fs::read_symlink("/proc/self/exe").string();
  ro.quiet = o.quiet;
  bool need_llm = false;
  for (const auto& m : ro.methods) need_llm |= m != "gold" && m != "stub";
  std::unique_ptr<LlmSession> session;
  if (need_llm) session = std::make_unique<LlmSession>(llm_config(lf));
  MethodModels models;
  if (session && session->has_llm()) {
    models.llm = &session->llm();
    if (session->has_embedder()) models.embedder = &session->embedder();
    bool procedural = false;
    for (const auto& m : ro.methods) procedural |= method_uses_procedural(m);
    if (procedural) models.hidden = &session->hidden_states();
  }
  std::map<std::string, std::unique_ptr<Engine>> engines;
  auto engine_for = [&](const std::string& repo) -> Engine& {
    auto& e = engines[repo];
    if (!e) {
      Common c = o;
      c.repo = repo;
      c.db.clear();
      e = open_engine(c);
      if (models.embedder) e->set_embedder(models.embedder);
      if (models.llm) e->set_llm(models.llm);
    }
    return *e;
  };
  int n = run_evaluation(tasks, ro, models, engine_for);
  if (!o.quiet) log_info("{} result(s) written to {}/results.jsonl", n, ro.out_dir);
  if (!ro.done_dirs.empty()) return 0;  // a job of --jobs: the parent writes the table
  std::string md = results_table({ro.out_dir}, false);
  std::ofstream(ro.out_dir + "/table.md") << md;
  std::ofstream(ro.out_dir + "/table.csv") << results_table({ro.out_dir}, true);
  std::cout << md;
  return 0;
}

// Tasks from the repository's own tests; with --validate, only those gold passes and stub fails.
int cmd_make_tasks(const Common& o, const std::string& out, const TaskBuildOptions& tbo,
                   const std::string& validate_dir, const CommandLimits& limits) {
  auto eng = open_engine(o);
  std::string repo = fs::absolute(o.repo).lexically_normal().string();
  while (repo.size() > 1 && repo.back() == '/') repo.pop_back();
  auto tasks = build_tasks(*eng, repo, tbo);
  if (!o.quiet) log_info("{} candidate task(s) from the test files of {}", tasks.size(), repo);
  if (validate_dir.empty()) {
    write_tasks(out, tasks);
    if (!o.quiet)
      log_info("wrote {} (not validated: run with --validate DIR to keep only tasks gold passes and stub fails)", out);
    return tasks.empty() ? 1 : 0;
  }
  RunnerOptions ro;
  ro.out_dir = validate_dir;
  ro.limits = limits;
  ro.self_exe = fs::read_symlink("/proc/self/exe").string();
  ro.quiet = o.quiet;
  auto tv = validate_tasks(tasks, ro, [&](const std::string&) -> Engine& { return *eng; });
  write_tasks(out, tv.kept);
  json summary = {{"candidates", tasks.size()},    {"kept", tv.kept.size()}, {"gold_failed", tv.gold_failed},
                  {"stub_passed", tv.stub_passed}, {"tasks", out},           {"validation", validate_dir}};
  if (o.json_out)
    std::cout << summary.dump(2) << "\n";
  else
    fmt::print("{} task(s) kept of {} candidates ({} fail with the real body, {} pass without it); written to {}\n",
               tv.kept.size(), tasks.size(), tv.gold_failed, tv.stub_passed, out);
  return tv.kept.empty() ? 1 : 0;
}

int cmd_snippets(const Common& o, const std::string& file, bool dependency) {
  auto eng = open_engine(o);
  const auto& v = eng->view();
  auto f = v.file_by_path(file);
  if (!f) throw Error(ExitCode::not_found, "file '" + file + "' is not in the index");
  json arr = json::array();
  if (dependency) {
    for (const auto& d : dependency_snippets(*eng, *f)) arr.push_back({{"label", d.label}, {"text", d.text}});
  } else {
    const FileRec& fr = v.files()[*f];
    for (int s = fr.first_snippet; s < fr.first_snippet + fr.n_snippets; ++s)
      arr.push_back({{"start_line", v.snippets()[s].start_line},
                     {"end_line", v.snippets()[s].end_line},
                     {"text", sanitize_utf8(eng->snippet_text(s))}});
  }
  if (o.json_out) {
    std::cout << arr.dump(2) << "\n";
  } else {
    for (const auto& s : arr) {
      if (s.contains("label"))
        fmt::print("--- {}\n{}\n", s["label"].get<std::string>(), s["text"].get<std::string>());
      else
        fmt::print("--- lines {}-{}\n{}\n", s["start_line"].get<int>(), s["end_line"].get<int>(),
                   s["text"].get<std::string>());
    }
  }
  return 0;
}

int cmd_select(const Common& o, std::vector<std::string> targets, const std::string& targets_file, int top_files) {
  auto eng = open_engine(o);
  if (!targets_file.empty()) {
    std::ifstream in(targets_file);
    if (!in) throw Error(ExitCode::not_found, "cannot read targets file '" + targets_file + "'");
    for (std::string line; std::getline(in, line);)
      if (!trim(line).empty() && line[0] != '#') targets.emplace_back(trim(line));
  }
  std::vector<int> ids;
  for (const auto& t : targets) ids.push_back(eng->resolve_target(t).entity);
  auto sel = select_functions(*eng, ids, top_files);
  const auto& v = eng->view();
  json j;
  j["selected_files"] = json::array();
  for (size_t i = 0; i < sel.ranked_files.size(); ++i) {
    const auto& r = sel.ranked_files[i];
    json row = {{"file", v.files()[r.file].path}, {"n_target", r.n_target}, {"n_functions", r.n_functions}};
    if (static_cast<int>(i) < top_files) j["selected_files"].push_back(row);
  }
  j["context_functions"] = json::array();
  for (int e : sel.context_functions) j["context_functions"].push_back(eng->target_name(e));
  if (o.json_out) {
    std::cout << j.dump(2) << "\n";
  } else {
    for (const auto& r : j["selected_files"])
      fmt::print("{:>3} targets {:>4} functions  {}\n", r["n_target"].get<int>(), r["n_functions"].get<int>(),
                 r["file"].get<std::string>());
    fmt::print("{} context functions selected\n", sel.context_functions.size());
  }
  return 0;
}

int cmd_eval(const Common& o, const std::vector<std::string>& repos, EvalOptions eo, const std::string& strategies,
             const LlmFlags& lf) {
  eo.strategies.clear();
  std::string cur;
  for (char c : strategies + ",") {
    if (c == ',') {
      if (!cur.empty()) eo.strategies.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur.push_back(c);
    }
  }
  std::vector<EvalReport> reports;
  json all = json::array();
  for (const auto& repo : repos) {
    Common oc = o;
    oc.repo = repo;
    oc.db.clear();
    auto eng = open_engine(oc);
    auto session = attach_embedder(*eng, lf);
    EvalReport rep = run_retrieval_eval(*eng, eo);
    json j = {{"repo", repo}, {"targets", rep.candidates}, {"mean_oracle_size", rep.mean_oracle}};
    for (const auto& s : rep.scores) {
      json sj = {{"strategy", s.strategy}, {"mrr", s.mrr}, {"ms_p50", s.ms_p50}, {"ms_mean", s.ms_mean}};
      for (const auto& [k, r] : s.recall) sj["recall@" + std::to_string(k)] = r;
      j["strategies"].push_back(sj);
    }
    all.push_back(j);
    reports.push_back(std::move(rep));
  }
  if (o.json_out)
    std::cout << all.dump(2) << "\n";
  else
    std::cout << eval_markdown(reports, eo.ks);
  return 0;
}

int cmd_train(const Common& o, const std::vector<std::string>& repos, const TrainOptions& to, const std::string& out) {
  std::vector<std::unique_ptr<Engine>> engines;
  std::vector<const Engine*> ptrs;
  for (const auto& repo : repos) {
    Common oc = o;
    oc.repo = repo;
    oc.db.clear();
    engines.push_back(open_engine(oc));
    ptrs.push_back(engines.back().get());
  }
  TrainReport rep;
  StructuralModel m = train_structural(ptrs, to, &rep);
  std::ofstream f(out);
  if (!f) throw Error(ExitCode::bad_input, "cannot write '" + out + "'");
  f << m.to_json() << "\n";
  if (!o.quiet)
    fmt::print(stderr,
               "trained on {} targets ({} rows, {} positives) from {} repositories; log loss {:.4f}; wrote {}\n",
               rep.targets, rep.rows, rep.positives, rep.repos.size(), rep.log_loss, out);
  return 0;
}

// `repoctx subspace`: the reasoning subspace of a model, its energy curve, and (with steps) the
// anisotropy of their projections before and after debiasing.
int cmd_subspace(const Common& o, const LlmFlags& lf, SubspaceOptions so, const std::string& steps_file, int max_tokens,
                 const std::string& dump_basis) {
  LlmSession session(llm_config(lf));
  auto& model = session.llm();
  auto sub = ReasoningSubspace::compute(model, so);
  if (!dump_basis.empty()) {
    // Raw float32, column-major d x (d - k): column j is the j-th reasoning direction.
    std::ofstream f(dump_basis, std::ios::binary);
    f.write(reinterpret_cast<const char*>(sub.basis().data()),
            static_cast<std::streamsize>(sub.basis().size() * sizeof(float)));
    if (!f) throw Error(ExitCode::bad_input, "cannot write '" + dump_basis + "'");
  }
  json j;
  j["model"] = model.identity();
  j["d"] = sub.dim();
  j["k"] = sub.k();
  j["reasoning_dim"] = sub.reasoning_dim();
  j["reasoning_fraction"] = sub.reasoning_fraction();
  j["threshold"] = sub.threshold();
  j["energy"] = so.energy == EnergyDefinition::squared ? "sum of squared singular values" : "sum of singular values";
  j["seconds"] = sub.seconds();
  j["cached"] = sub.from_cache();
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
  if (!steps_file.empty()) {
    std::ifstream in(steps_file);
    if (!in) throw Error(ExitCode::not_found, "cannot read steps file '" + steps_file + "'");
    std::vector<std::pair<std::string, std::string>> steps;
    for (std::string line; std::getline(in, line);) {
      if (trim(line).empty()) continue;
      json s = json::parse(line, nullptr, false);
      if (s.is_discarded() || !s.contains("description"))
        throw Error(ExitCode::bad_input, "steps file: each line must be JSON with \"description\" (and \"snippet\")");
      steps.emplace_back(s["description"].get<std::string>(), s.value("snippet", ""));
    }
    StepProjectionOptions po;
    po.max_tokens = max_tokens;
    StepProjector proj(model, sub, po);
    auto P = proj.project_many(steps);
    auto m = build_mu_pc1(P);
    std::vector<std::vector<float>> D;
    for (const auto& p : P) D.push_back(debias(p, m));
    j["steps"] = P.size();
    j["mean_pairwise_cosine_raw"] = mean_pairwise_cosine(P);
    j["mean_pairwise_cosine_debiased"] = mean_pairwise_cosine(D);
    j["pc1_explained_variance"] = m.explained;
  }
  if (o.json_out) {
    std::cout << j.dump(2) << "\n";
    return 0;
  }
  fmt::print("model      {}\nW          {} x d = {} (energy = {})\n", j["model"].get<std::string>(), "vocab", sub.dim(),
             j["energy"].get<std::string>());
  fmt::print("threshold  {:.3f}: k = {} dominant directions, reasoning subspace d - k = {} ({:.1f}% of d){}\n",
             sub.threshold(), sub.k(), sub.reasoning_dim(), 100.0 * sub.reasoning_fraction(),
             sub.from_cache() ? " [cached]" : fmt::format(" [computed in {:.1f}s]", sub.seconds()));
  fmt::print("\n threshold      k   (d-k)/d\n");
  for (const auto& r : table)
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
  return 0;
}

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

}  // namespace
}  // namespace repoctx

int main(int argc, char** argv) {
  using namespace repoctx;
  // Parsing frees and reallocates millions of small tree nodes per file: keep freed pages mapped
  // instead of resetting them (measured ~4% faster indexing).
  mi_option_disable(mi_option_page_reset);
  g_argv.assign(argv, argv + argc);
  std::signal(SIGINT, [](int) { g_interrupted = true; });
  std::signal(SIGTERM, [](int) { g_interrupted = true; });

  CLI::App app{"repoctx: finds the repository context an LLM needs to write code"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "repoctx 0.1.0");

  Common o;
  bool force = false;
  auto* idx = app.add_subcommand("index", "index a repository (incremental; safe to interrupt and re-run)");
  add_common(idx, o, true);
  idx->add_flag("--force", force, "re-parse every file");
  bool rebuild = false;
  idx->add_flag("--rebuild", rebuild,
                "delete the index (damaged, or built by another repoctx version) and build it again; never deletes "
                "a file that is not a repoctx index");

  std::string kind, file;
  bool jsonl = false;
  auto* sym = app.add_subcommand("symbols", "list the definitions of an indexed repository");
  add_common(sym, o, true);
  sym->add_option("--kind", kind, "only this kind (class, function, method, variable, attribute, ...)");
  sym->add_option("--file", file, "only this file (path relative to the root)");
  sym->add_flag("--jsonl", jsonl, "one JSON object per line");
  sym->add_flag("--no-refresh", o.no_refresh, "use the index as it is, without an incremental update first");

  bool errors_only = false;
  auto* fil = app.add_subcommand("files", "list indexed files");
  add_common(fil, o, true);
  fil->add_flag("--errors", errors_only, "only files with syntax errors");
  bool skipped_only = false;
  fil->add_flag("--skipped", skipped_only, "files the walk skipped, with the rule that skipped each");
  fil->add_flag("--no-refresh", o.no_refresh, "use the index as it is");

  LlmFlags lf;
  std::string target, query, strategy = "sparse";
  int top_k = 20;
  bool with_text = false;
  RetrieverOptions ro;
  auto* ret = app.add_subcommand("retrieve", "retrieve context for a target function (its body hidden) or a query");
  add_common(ret, o, true);
  ret->add_option("--target", target, "path/to/file.py::Qualified.name");
  ret->add_option("--query", query, "free-text query (instead of, or overriding, the target's signature+docstring)");
  ret->add_option("-s,--strategy", strategy, "retrieval strategy (see `repoctx strategies`)")->capture_default_str();
  ret->add_option("-k,--top-k", top_k, "number of results")->capture_default_str();
  ret->add_option("--corpus", ro.corpus, "sparse: entities or snippets")->capture_default_str();
  ret->add_option("--k1", ro.bm25.k1, "BM25 k1")->capture_default_str();
  ret->add_option("--b", ro.bm25.b, "BM25 b")->capture_default_str();
  ret->add_flag("--pool-methods", ro.pool_methods, "imports: also rank methods of pool classes");
  ret->add_flag("--with-text", with_text, "include each result's text");
  ret->add_flag("--no-refresh", o.no_refresh, "use the index as it is");
  ret->add_flag("--bm25-only", ro.bm25_only, "imports: rank the pool by BM25 alone even with an embedding model");
  ret->add_option("--trace", ro.trace_path, "procedural: write the JSON trace of every stage to this file");
  ret->add_option("--rq2-pairs", ro.rq2_pairs_path,
                  "procedural: append (target step, context step, similarity to each seed) pairs (JSONL)");
  std::vector<std::string> proc_params;
  ret->add_option(
      "--param", proc_params,
      "procedural: NAME=VALUE (repeatable), e.g. seed_threshold=0.75, expand_tau=0.65, expand_k=2, max_rounds=5, "
      "agent_budget=15, full_search=true, agent=false (all: the trace's \"params\")");
  add_llm_flags(ret, lf);

  GenerationParams gp;
  std::string gen_target, gen_output = "function", gen_trace;
  std::vector<std::string> gen_params;
  auto* gen = app.add_subcommand(
      "generate",
      "ProjAgent 4.3-4.4: write a function's body (hidden) with retrieved context and static-check feedback");
  add_common(gen, o, true);
  gen->add_option("--target", gen_target, "path/to/file.py::Qualified.name")->required();
  gen->add_option(
         "-m,--method", gp.method,
         "projagent, projagent-no-procedural, projagent-no-semantic, projagent-no-feedback, sparse, dense, same-file")
      ->capture_default_str();
  gen->add_option("--output", gen_output, "function, file (the patched file), diff or json")->capture_default_str();
  gen->add_option("--trace", gen_trace, "write the JSON trace (retrieval, prompt contexts, every round) here");
  gen->add_option("--max-tokens", gp.max_tokens, "output tokens per generation (greedy)")->capture_default_str();
  gen->add_option("--max-rounds", gp.max_rounds, "refinement rounds of the feedback loop")->capture_default_str();
  gen->add_option("--budget", gp.prompt_budget_tokens, "estimated tokens of context in the prompt")
      ->capture_default_str();
  gen->add_option("--param", gen_params, "procedural retrieval NAME=VALUE (as `retrieve --param`)");
  gen->add_flag("--no-refresh", o.no_refresh, "use the index as it is");
  add_llm_flags(gen, lf);

  std::string ev_tasks, ev_methods = "gold,stub", ev_shard;
  int ev_jobs = 1;
  std::vector<std::string> ev_repo_map;
  TaskLoadOptions tlo;
  RunnerOptions rno;
  auto* evr = app.add_subcommand(
      "evaluate",
      "REPOCOD-style Pass@1: hide each task's body, generate it with each method, run the tests, restore the file");
  evr->add_option("tasks", ev_tasks, "tasks (JSONL or JSON array; REPOCOD fields or repo/file/function/test_command)")
      ->required();
  evr->add_option("--methods", ev_methods,
                  "comma-separated: projagent, projagent-no-procedural, projagent-no-semantic, projagent-no-feedback, "
                  "sparse, dense, same-file, gold, stub")
      ->capture_default_str();
  evr->add_option("--out", rno.out_dir,
                  "results folder (results.jsonl, logs/, artifacts/, table.md, table.csv); re-running resumes")
      ->required();
  evr->add_option("--shard", ev_shard, "i/n: run the tasks whose position mod n is i (0 <= i < n)");
  evr->add_option("--jobs", ev_jobs,
                  "parallel runner processes on this machine (generation in parallel, test runs of one repository one "
                  "at a time)")
      ->capture_default_str();
  evr->add_option("--done-in", rno.done_dirs, "")->group("");  // internal: results folders of sibling jobs
  evr->add_option("--timeout", rno.limits.timeout_s, "seconds per test run (the process group is killed after)")
      ->capture_default_str();
  evr->add_option("--mem-mb", rno.limits.memory_mb, "address-space limit of a test run in MiB (0 = none)")
      ->capture_default_str();
  evr->add_option("--repo", ev_repo_map, "NAME=PATH: local path of a REPOCOD repository (repeatable)");
  evr->add_option("--repos-dir", tlo.repos_dir, "folder holding REPOCOD repositories by name");
  evr->add_option("--test-template", tlo.test_template, "REPOCOD tasks: command running the test files ({tests})")
      ->capture_default_str();
  evr->add_option("--max-tokens", rno.gen.max_tokens, "output tokens per generation")->capture_default_str();
  evr->add_option("--max-rounds", rno.gen.max_rounds, "refinement rounds")->capture_default_str();
  evr->add_option("--budget", rno.gen.prompt_budget_tokens, "estimated tokens of context per prompt")
      ->capture_default_str();
  evr->add_flag("-q,--quiet", o.quiet, "only warnings and errors on stderr");
  add_llm_flags(evr, lf);
  std::vector<std::string> table_dirs;
  bool table_csv = false;
  auto* tbl = app.add_subcommand(
      "table", "Pass@1 table (Markdown or CSV) of the results of one or more evaluate --out folders (shards)");
  tbl->add_option("dirs", table_dirs, "results folders")->required();
  tbl->add_flag("--csv", table_csv, "CSV instead of Markdown");
  std::string guard_dir;
  auto* grd = app.add_subcommand("_guard", "");  // internal: the evaluate runner's restore guard
  grd->group("");
  grd->add_option("journal", guard_dir)->required();
  std::string mk_out, mk_validate;
  TaskBuildOptions tbo;
  CommandLimits mk_limits;
  auto* mkt =
      app.add_subcommand("make-tasks",
                         "REPOCOD-style tasks from a repository that ships its tests: the functions its test files "
                         "reference; --validate keeps those whose tests pass with the real body and fail without it");
  add_common(mkt, o, true);
  mkt->add_option("--out", mk_out, "tasks file to write (JSONL, read by `evaluate`)")->required();
  mkt->add_option("--max", tbo.max_tasks, "tasks to propose, round-robin over the target files")->capture_default_str();
  mkt->add_option("--min-lines", tbo.min_body_lines, "fewest body lines of a target")->capture_default_str();
  mkt->add_option("--max-lines", tbo.max_body_lines, "most body lines of a target")->capture_default_str();
  mkt->add_option("--max-test-files", tbo.max_test_files, "test files a task runs")->capture_default_str();
  mkt->add_option("--repo-id", tbo.repo_id, "table column of the tasks (default: the folder's name)");
  mkt->add_option("--test-template", tbo.test_template,
                  "command running the test files ({tests}), in the repository root")
      ->capture_default_str();
  mkt->add_option("--validate", mk_validate,
                  "run gold and stub into this folder (resumable) and write only the tasks they validate");
  mkt->add_option("--timeout", mk_limits.timeout_s, "validation: seconds per test run")->capture_default_str();
  mkt->add_option("--mem-mb", mk_limits.memory_mb, "validation: address-space limit of a test run in MiB (0 = none)")
      ->capture_default_str();
  mkt->add_flag("--no-refresh", o.no_refresh, "use the index as it is");
  std::string snip_file;
  bool dependency = false;
  auto* sn = app.add_subcommand("snippets", "show a file's split-aggregate snippets or its dependency snippets");
  add_common(sn, o, true);
  sn->add_option("--file", snip_file, "path relative to the root")->required();
  sn->add_flag("--dependency", dependency, "AlignCoder dependency snippets of the file's imports");
  sn->add_flag("--no-refresh", o.no_refresh, "use the index as it is");

  std::vector<std::string> eval_repos;
  EvalOptions eo;
  std::string eval_strategies = "sparse,same-file,imports";
  auto* ev =
      app.add_subcommand("eval", "LLM-free retrieval quality: Recall@k and MRR against the symbols real bodies use");
  ev->add_option("repos", eval_repos, "repositories to evaluate on")->required();
  ev->add_option("--strategies", eval_strategies, "comma-separated strategies")->capture_default_str();
  ev->add_option("--samples", eo.samples, "targets per repository")->capture_default_str();
  ev->add_option("--seed", eo.seed, "sampling seed")->capture_default_str();
  ev->add_flag("--include-tests", eo.include_tests, "also sample functions from test files");
  ev->add_flag("--json", o.json_out, "JSON instead of a Markdown table");
  ev->add_flag("-q,--quiet", o.quiet, "only warnings and errors on stderr");
  ev->add_option("--structural-model", eo.retriever.model_path,
                 "structural: weights file (default: the shipped model)");
  add_llm_flags(ev, lf);
  ret->add_option("--structural-model", ro.model_path, "structural: weights file (default: the shipped model)");

  std::vector<std::string> train_repos;
  TrainOptions to;
  std::string train_out = "models/structural.json";
  auto* tr = app.add_subcommand("train-structural", "train the structural strategy's ranking model on repositories");
  tr->add_option("repos", train_repos, "training repositories (keep evaluation repositories out)")->required();
  tr->add_option("--samples", to.samples, "targets per repository")->capture_default_str();
  tr->add_option("--seed", to.seed, "sampling seed")->capture_default_str();
  tr->add_option("--l2", to.l2, "L2 regularisation")->capture_default_str();
  tr->add_option("-o,--out", train_out, "model file to write")->capture_default_str();
  tr->add_flag("-q,--quiet", o.quiet, "only warnings and errors on stderr");

  BenchOptions bo;
  bool bench_no_ref = false;
  std::string bench_out;
  auto* bn = app.add_subcommand("bench", "index and query speed against the Python reference, in the same run");
  bn->add_option("repo", bo.repo, "repository to benchmark on")->required();
  bn->add_option("--reference", bo.reference,
                 "reference implementation (default: bench/reference/ref_index.py of this source tree)");
  bn->add_flag("--no-reference", bench_no_ref, "skip the reference implementation");
  bn->add_option("--queries", bo.queries, "BM25 queries")->capture_default_str();
  bn->add_option("--repeat", bo.repeat, "full index runs (median reported)")->capture_default_str();
  bn->add_option("--threads", bo.threads, "parser threads (0 = all cores)")->capture_default_str();
  bn->add_option("--out", bench_out, "also write the JSON report to this file");
  bn->add_flag("--json", o.json_out, "JSON instead of Markdown");
  bn->add_flag("-q,--quiet", o.quiet, "only warnings and errors on stderr");

  std::vector<std::string> sel_targets;
  std::string sel_file;
  int sel_top = 20;
  auto* sel = app.add_subcommand("select-functions",
                                 "ProjAgent 4.1: rank files by target functions and pick context functions");
  add_common(sel, o, true);
  sel->add_option("--target", sel_targets, "a target function path::Qual.name (repeatable)");
  sel->add_option("--targets-file", sel_file, "file with one target per line");
  sel->add_option("--top-files", sel_top, "files to select")->capture_default_str();
  sel->add_flag("--no-refresh", o.no_refresh, "use the index as it is");

  // ------------------------------------------------------------------ llm
  auto* llm = app.add_subcommand("llm", "run one LLM operation through the configured backend and cache");
  llm->require_subcommand(1);
  GenerateRequest greq;
  std::vector<std::string> messages;
  std::string schema_file, schema_text;
  auto* lgen = llm->add_subcommand("generate", "chat or completion (optionally JSON-schema constrained)");
  add_llm_flags(lgen, lf);
  lgen->add_option("--prompt", greq.prompt, "raw text to complete");
  lgen->add_option("--message", messages, "chat message as role:text (repeatable, e.g. --message 'user:hello')");
  lgen->add_option("--schema", schema_file, "JSON schema file constraining the output");
  lgen->add_option("--schema-json", schema_text, "JSON schema text constraining the output");
  lgen->add_option("--temperature", greq.temperature, "0 = greedy")->capture_default_str();
  lgen->add_option("--top-p", greq.top_p)->capture_default_str();
  lgen->add_option("--max-tokens", greq.max_tokens)->capture_default_str();
  lgen->add_option("-n", greq.n, "samples")->capture_default_str();
  lgen->add_option("--seed", greq.seed)->capture_default_str();
  lgen->add_option("--stop", greq.stop, "stop string (repeatable)");
  lgen->add_flag("--hidden", greq.hidden_states, "capture last-layer hidden states of the response tokens");
  lgen->add_flag("--json", o.json_out, "JSON output");
  LogprobRequest lreq;
  auto* llp = llm->add_subcommand("logprobs", "log-probabilities and perplexity of a continuation given a prompt");
  add_llm_flags(llp, lf);
  llp->add_option("--prompt", lreq.prompt, "context (raw text)")->required();
  llp->add_option("--continuation", lreq.continuation, "text to score")->required();
  std::vector<std::string> embed_texts;
  std::string embed_task = "none";
  auto* lem = llm->add_subcommand("embed", "embed texts (L2-normalised vectors)");
  add_llm_flags(lem, lf);
  lem->add_option("texts", embed_texts, "texts")->required();
  lem->add_option("--task", embed_task, "query, document or none (adds the model's task prompt)")
      ->capture_default_str();
  auto* linfo = llm->add_subcommand("info", "model identity, capabilities, hidden size, unembedding matrix");
  add_llm_flags(linfo, lf);

  auto* cache_cmd = app.add_subcommand("cache", "LLM cache statistics and maintenance");
  cache_cmd->require_subcommand(1);
  auto* cstats = cache_cmd->add_subcommand("stats", "entries, tokens and time by operation and model");
  add_llm_flags(cstats, lf);
  cstats->add_flag("--json", o.json_out, "JSON output");
  std::string clear_model;
  auto* cclear = cache_cmd->add_subcommand("clear", "delete cached results");
  add_llm_flags(cclear, lf);
  cclear->add_option("--model-id", clear_model, "only this model identity");

  TestModelSpec tm;
  std::string tm_shape = "tiny";
  auto* mk =
      app.add_subcommand("make-test-model", "write a random-weight GGUF (qwen2 architecture) for tests and benchmarks");
  mk->add_option("--out", tm.out_path, "output GGUF path")->required();
  mk->add_option("--shape", tm_shape, "tiny (hidden 64, 2 layers) or qwen2.5-0.5b (hidden 896, 24 layers)")
      ->capture_default_str();
  mk->add_option("--vocab", tm.vocab_path, "vocab-only GGUF (default: llama.cpp's ggml-vocab-qwen2.gguf)");
  mk->add_option("--hidden", tm.hidden);
  mk->add_option("--layers", tm.layers);
  mk->add_flag("--tied", tm.tied, "no output.weight (tied unembedding)");
  mk->add_flag("--f16", tm.f16, "float16 weights");
  mk->add_flag("--ascii-only", tm.ascii_only,
               "bias the output to printable-ASCII tokens (valid UTF-8 for servers' parsers)");
  mk->add_option("--seed", tm.seed)->capture_default_str();

#ifdef REPOCTX_WITH_LLAMA
  BenchLlmOptions blo;
  bool blo_small = false, blo_no_server = false;
  std::string blo_out;
  auto* bl = app.add_subcommand("bench-llm", "LLM runtime: tokens/s, hidden-state overhead, openai backend throughput");
  bl->add_option("--threads", blo.threads, "llama threads (0 = all cores)");
  bl->add_option("--repeat", blo.repeat, "repetitions (median)")->capture_default_str();
  bl->add_option("--gen-tokens", blo.gen_tokens, "tokens generated per run")->capture_default_str();
  bl->add_flag("--tiny-only", blo_small, "skip the Qwen2.5-0.5B-shaped model");
  bl->add_flag("--no-server", blo_no_server, "skip the llama-server throughput runs");
  bl->add_option("--concurrency", blo.concurrency, "openai backend concurrencies")->capture_default_str();
  bl->add_option("--out", blo_out, "also write the JSON report here");
  bl->add_flag("--json", o.json_out, "JSON instead of Markdown");
  BenchProjectionOptions bpo;
  bool bpo_small = false;
  std::string bpo_out, bpo_internal;
  auto* bp = app.add_subcommand(
      "bench-projection", "subspace computation cost, similarity search throughput vs memory bandwidth, HNSW recall");
  bp->add_flag("--no-14b", bpo_small, "skip the 152064 x 5120 matrix");
  bp->add_option("--vectors", bpo.vectors, "store sizes")->capture_default_str();
  bp->add_option("--widths", bpo.widths, "vector widths")->capture_default_str();
  bp->add_option("--threads", bpo.threads, "search threads (0 = all cores)");
  bp->add_option("--out", bpo_out, "also write the JSON report here");
  bp->add_flag("--json", o.json_out, "JSON instead of Markdown");
  bp->add_option("--internal-subspace", bpo_internal)->group("");
#endif

  std::string rq2_pairs, rq2_labels;
  std::vector<std::string> rq2_cfgs;
  auto* rq2 =
      app.add_subcommand("rq2",
                         "ProjAgent RQ2 (Table 3): promoted/leftover precision, recall, F1 of (tau, k) configurations "
                         "over labelled pairs written by `retrieve --strategy procedural --rq2-pairs`");
  rq2->add_option("--pairs", rq2_pairs, "pairs file (JSONL)")->required();
  rq2->add_option("--labels", rq2_labels, "labels file (JSONL: target_step, context_step, similar)")->required();
  rq2->add_option("--config", rq2_cfgs, "TAU:K (repeatable; default: the paper's A-F)");
  rq2->add_flag("--json", o.json_out, "JSON instead of Markdown");

  int cb_max = 0;
  auto* cb = app.add_subcommand(
      "check-bodies", "static checks (ProjAgent 4.4) on every real function body: false alarms (should be none)");
  cb->add_option("repo", o.repo, "repository")->required();
  cb->add_option("--db", o.db, "index database");
  cb->add_option("--max", cb_max, "check at most this many functions (0 = all)");
  cb->add_flag("--json", o.json_out, "JSON instead of text");
  int cb_inject = 0;
  bool cb_misses = false;
  cb->add_option("--inject", cb_inject,
                 "instead: inject errors into every N-th real body and report the share caught per kind");
  cb->add_flag("--show-misses", cb_misses, "with --inject: list the functions where an injected error was not caught");

  BenchToolsOptions bto;
  auto* bt = app.add_subcommand("bench-agent-tools",
                                "latency of the seed-finding agent's repository tools; grep vs a Python reference");
  bt->add_option("repo", o.repo, "repository")->required();
  bt->add_option("--db", o.db, "index database (default: the repository's under ~/.cache/repoctx/indexes)");
  bt->add_option("--calls", bto.calls, "calls per tool")->capture_default_str();
  bt->add_flag("--json", o.json_out, "JSON instead of Markdown");

  SubspaceOptions so;
  std::string so_energy = "squared", so_steps;
  int so_tokens = 128;
  auto* sub =
      app.add_subcommand("subspace", "the reasoning subspace of a model: k, d, (d-k)/d, energy curve, anisotropy");
  add_llm_flags(sub, lf);
  sub->add_option("--threshold", so.energy_threshold, "energy threshold")->capture_default_str();
  sub->add_option("--energy", so_energy, "squared (sum of s^2) or linear (sum of s)")->capture_default_str();
  sub->add_option("--steps", so_steps, "JSONL of {description, snippet}: report anisotropy before/after debiasing");
  sub->add_option("--max-tokens", so_tokens, "response tokens pooled per step")->capture_default_str();
  sub->add_flag("--json", o.json_out, "JSON output");
  bool so_fresh = false;
  std::string so_dump;
  sub->add_flag("--fresh", so_fresh, "recompute instead of reading the subspace cache");
  sub->add_option("--dump-basis", so_dump, "write V_R (float32, column-major d x (d-k)) to this file");
  std::string prompts_dir;
  app.add_option("--prompts-dir", prompts_dir, "directory of prompt templates overriding the built-in ones");

  auto* strat = app.add_subcommand("strategies", "list retrieval strategies");
  std::string tree_file;
  auto* dtree = app.add_subcommand("debug-tree", "print tree-sitter's syntax tree of a file");
  dtree->add_option("file", tree_file)->required();
  dtree->group("");  // hidden

  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  }
  if (o.quiet) g_log_level = static_cast<int>(LogLevel::warn);
  if (!prompts_dir.empty()) set_prompts_dir(prompts_dir);
  if (o.verbose) g_log_level = static_cast<int>(LogLevel::debug);

  try {
    if (*idx) return cmd_index(o, force, rebuild);
    if (*sym) return cmd_symbols(o, kind, file, jsonl);
    if (*fil) return cmd_files(o, errors_only, skipped_only);
    if (*ret) {
      apply_params(ro.procedural, proc_params);
      return cmd_retrieve(o, target, query, strategy, top_k, ro, with_text, lf);
    }
    if (*gen) {
      apply_params(gp.procedural, gen_params);
      return cmd_generate(o, gen_target, gp, gen_output, gen_trace, lf);
    }
    if (*grd) return guard_main(guard_dir);
    if (*tbl) {
      std::cout << results_table(table_dirs, table_csv);
      return 0;
    }
    if (*evr) {
      for (const auto& kv : ev_repo_map) {
        auto eq = kv.find('=');
        if (eq == std::string::npos) throw Error(ExitCode::usage, "--repo takes NAME=PATH, got '" + kv + "'");
        tlo.repos[kv.substr(0, eq)] = kv.substr(eq + 1);
      }
      return cmd_evaluate(o, ev_tasks, tlo, rno, ev_methods, ev_shard, lf, ev_jobs);
    }
    if (*mkt) return cmd_make_tasks(o, mk_out, tbo, mk_validate, mk_limits);
    if (*sn) return cmd_snippets(o, snip_file, dependency);
    if (*ev) return cmd_eval(o, eval_repos, eo, eval_strategies, lf);
    if (*sel) return cmd_select(o, sel_targets, sel_file, sel_top);
    if (*bn) {
      bo.self_exe = fs::read_symlink("/proc/self/exe").string();
      if (bo.reference.empty() && !bench_no_ref)
        bo.reference = std::string(REPOCTX_SOURCE_DIR) + "/bench/reference/ref_index.py";
      if (bench_no_ref) bo.reference.clear();
      if (!bo.reference.empty() && !fs::exists(bo.reference))
        throw Error(ExitCode::not_found,
                    "reference implementation '" + bo.reference + "' not found (pass --reference or --no-reference)");
      if (!fs::is_directory(bo.repo))
        throw Error(ExitCode::not_found, "repository path '" + bo.repo + "' does not exist");
      json r = run_bench(bo);
      if (!bench_out.empty()) std::ofstream(bench_out) << r.dump(2) << "\n";
      if (o.json_out)
        std::cout << r.dump(2) << "\n";
      else
        std::cout << bench_markdown(r);
      return 0;
    }
    if (*tr) return cmd_train(o, train_repos, to, train_out);
    if (*dtree) {
      std::ifstream in(tree_file, std::ios::binary);
      if (!in) throw Error(ExitCode::not_found, "cannot read '" + tree_file + "'");
      std::string src((std::istreambuf_iterator<char>(in)), {});
      fmt::print("{}\n", syntax_tree(src, language_from_path(tree_file)));
      return 0;
    }
#ifdef REPOCTX_WITH_LLAMA
    if (*bl) {
      blo.large = !blo_small;
      if (!blo_no_server) blo.server_bin = REPOCTX_LLAMA_SERVER;
      json r = run_bench_llm(blo);
      if (!blo_out.empty()) std::ofstream(blo_out) << r.dump(2) << "\n";
      if (o.json_out)
        std::cout << r.dump(2) << "\n";
      else
        std::cout << bench_llm_markdown(r);
      return 0;
    }
#endif
    if (*cb) {
      auto eng = open_engine(o);
      if (cb_inject > 0) {
        auto d = injected_error_detection(*eng, cb_inject);
        json j = json::object();
        for (const auto& [k, v] : d.by_kind) {
          j[k] = {{"caught", v.first}, {"injected", v.second}, {"share", v.second ? double(v.first) / v.second : 0.0}};
          if (!o.json_out)
            fmt::print("{:<20} {:>6} / {:<6} caught ({:.1f}%)\n", k, v.first, v.second,
                       v.second ? 100.0 * v.first / v.second : 0.0);
        }
        if (cb_misses)
          for (const auto& [kind, fn] : d.misses) {
            if (o.json_out)
              j["misses"].push_back({{"kind", kind}, {"function", fn}});
            else
              fmt::print("missed {}: {}\n", kind, fn);
          }
        if (o.json_out)
          std::cout << j.dump(2) << "\n";
        else
          fmt::print("({:.1f} s)\n", d.seconds);
        return 0;
      }
      auto rep = check_all_real_bodies(*eng, cb_max);
      if (o.json_out) {
        json f = json::array();
        for (const auto& [fn, x] : rep.findings) f.push_back({{"function", fn}, {"finding", x.to_json()}});
        std::cout << json{{"functions", rep.functions},
                          {"files", rep.files},
                          {"seconds", rep.seconds},
                          {"checked_argument_counts", rep.coverage.argument_counts},
                          {"checked_typed_receiver_calls", rep.coverage.typed_receiver_calls},
                          {"findings", f}}
                         .dump(2)
                  << "\n";
      } else {
        for (const auto& [fn, x] : rep.findings) fmt::print("{}:{}: [{}] {}\n", fn, x.line, x.check, x.message);
        fmt::print(
            "{} findings in {} functions of {} files ({:.2f} s); checked {} argument counts, {} calls on inferred "
            "receivers\n",
            rep.findings.size(), rep.functions, rep.files, rep.seconds, rep.coverage.argument_counts,
            rep.coverage.typed_receiver_calls);
      }
      return 0;  // findings are the result (listed above), not a failure of the command
    }
    if (*rq2) {
      std::vector<Rq2Config> cfgs;
      for (const auto& c : rq2_cfgs) {
        auto colon = c.find(':');
        char* end = nullptr;
        Rq2Config rc;
        rc.name = c;
        if (colon != std::string::npos) {
          rc.tau = std::strtod(c.c_str(), &end);
          rc.k = std::atoi(c.c_str() + colon + 1);
        }
        if (colon == std::string::npos || end != c.c_str() + colon || rc.k < 1)
          throw Error(ExitCode::usage, "--config takes TAU:K, e.g. 0.65:2, got '" + c + "'");
        cfgs.push_back(rc);
      }
      auto rep = evaluate_rq2(read_rq2_pairs(rq2_pairs), read_rq2_labels(rq2_labels),
                              cfgs.empty() ? rq2_paper_configs() : cfgs);
      if (o.json_out) {
        json rows = json::array();
        for (const auto& r : rep.rows)
          rows.push_back({{"config", r.config.name},
                          {"tau", r.config.tau},
                          {"k", r.config.k},
                          {"promoted",
                           {{"pairs", r.promoted.pairs},
                            {"precision", r.promoted.precision},
                            {"recall", r.promoted.recall},
                            {"f1", r.promoted.f1}}},
                          {"leftover",
                           {{"pairs", r.leftover.pairs},
                            {"precision", r.leftover.precision},
                            {"recall", r.leftover.recall},
                            {"f1", r.leftover.f1}}}});
        std::cout << json{{"pairs", rep.pairs}, {"labelled", rep.labelled}, {"best_row", rep.best_row}, {"rows", rows}}
                         .dump(2)
                  << "\n";
      } else {
        std::cout << rq2_markdown(rep);
      }
      return 0;
    }
    if (*bt) {
      auto eng = open_engine(o);
      bto.reference_script = std::string(REPOCTX_SOURCE_DIR) + "/bench/reference/ref_grep.py";
      json r = run_bench_agent_tools(*eng, bto);
      if (o.json_out)
        std::cout << r.dump(2) << "\n";
      else
        std::cout << bench_agent_tools_markdown(r);
      return 0;
    }
#ifdef REPOCTX_WITH_LLAMA
    if (*bp) {
      if (!bpo_internal.empty()) {
        std::cout << internal_subspace(bpo_internal).dump() << "\n";
        return 0;
      }
      bpo.large = !bpo_small;
      bpo.self_exe = fs::read_symlink("/proc/self/exe").string();
      json r = run_bench_projection(bpo);
      if (!bpo_out.empty()) std::ofstream(bpo_out) << r.dump(2) << "\n";
      if (o.json_out)
        std::cout << r.dump(2) << "\n";
      else
        std::cout << bench_projection_markdown(r);
      return 0;
    }
#endif
    if (*mk) {
      if (tm.vocab_path.empty()) tm.vocab_path = default_vocab_path();
      if (tm_shape == "qwen2.5-0.5b") {
        tm.hidden = 896, tm.layers = 24, tm.heads = 14, tm.kv_heads = 2, tm.ff = 4864, tm.context = 32768;
      } else if (tm_shape != "tiny") {
        throw Error(ExitCode::usage, "--shape must be tiny or qwen2.5-0.5b");
      }
      write_test_model(tm);
      if (!o.quiet) fmt::print(stderr, "wrote {}\n", tm.out_path);
      return 0;
    }
    if (*llm) {
      LlmSession session(llm_config(lf));
      if (*lgen) {
        for (const auto& m : messages) {
          auto colon = m.find(':');
          if (colon == std::string::npos) throw Error(ExitCode::usage, "--message must be role:text, got '" + m + "'");
          greq.messages.push_back({m.substr(0, colon), m.substr(colon + 1)});
        }
        if (greq.messages.empty() && greq.prompt.empty()) throw Error(ExitCode::usage, "give --prompt or --message");
        if (!schema_file.empty()) {
          std::ifstream in(schema_file);
          if (!in) throw Error(ExitCode::not_found, "cannot read schema file '" + schema_file + "'");
          greq.json_schema.assign(std::istreambuf_iterator<char>(in), {});
        } else {
          greq.json_schema = schema_text;
        }
        auto r = session.llm().generate(greq);
        if (o.json_out)
          std::cout << generation_json(r).dump(2) << "\n";
        else
          for (const auto& c : r.choices) std::cout << c.text << "\n";
        return 0;
      }
      if (*llp) {
        auto r = session.llm().logprobs(lreq);
        json j = {{"tokens", r.tokens}, {"logprobs", r.logprobs}, {"sum", r.sum()}, {"perplexity", r.perplexity()}};
        std::cout << j.dump(2, ' ', false, json::error_handler_t::replace) << "\n";
        return 0;
      }
      if (*lem) {
        EmbedRequest er;
        er.texts = embed_texts;
        er.task = embed_task == "query"      ? EmbedTask::query
                  : embed_task == "document" ? EmbedTask::document
                                             : EmbedTask::none;
        auto r = session.embedder().embed(er);
        json j = json::array();
        for (const auto& v : r.vectors) j.push_back(v);
        std::cout << j.dump() << "\n";
        return 0;
      }
      if (*linfo) {
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
        std::cout << j.dump(2) << "\n";
        return 0;
      }
    }
    if (*cache_cmd) {
      LlmSession session(llm_config(lf));
      if (*cstats) {
        auto st = session.cache().stats();
        json j = json::array();
        for (const auto& [k, r] : st.by_op_model)
          j.push_back({{"op", k.substr(0, k.find('\t'))},
                       {"model", k.substr(k.find('\t') + 1)},
                       {"entries", r.entries},
                       {"prompt_tokens", r.prompt_tokens},
                       {"completion_tokens", r.completion_tokens},
                       {"ms", r.ms}});
        if (o.json_out)
          std::cout << json({{"path", session.cache().path()}, {"rows", j}}).dump(2) << "\n";
        else {
          fmt::print("{}\n", session.cache().path());
          for (const auto& r : j)
            fmt::print("{:<10} {:<50} {:>8} entries {:>10} prompt tok {:>10} completion tok {:>10.0f} ms\n",
                       r["op"].get<std::string>(), r["model"].get<std::string>(), r["entries"].get<int64_t>(),
                       r["prompt_tokens"].get<int64_t>(), r["completion_tokens"].get<int64_t>(), r["ms"].get<double>());
        }
        return 0;
      }
      if (*cclear) {
        fmt::print("{} entries deleted\n", session.cache().clear(clear_model));
        return 0;
      }
    }
    if (*sub) {
      if (so_energy != "squared" && so_energy != "linear")
        throw Error(ExitCode::usage, "--energy must be squared or linear");
      so.energy = so_energy == "squared" ? EnergyDefinition::squared : EnergyDefinition::linear;
      so.use_cache = !so_fresh;
      return cmd_subspace(o, lf, so, so_steps, so_tokens, so_dump);
    }
    if (*strat) {
      for (const auto& r : retriever_registry()) fmt::print("{:<22} {}\n", r.name, r.description);
      return 0;
    }
  } catch (const Error& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return static_cast<int>(e.code());
  } catch (const std::exception& e) {
    fmt::print(stderr, "error: {}\n", e.what());
    return static_cast<int>(ExitCode::failure);
  }
  return 0;
}
