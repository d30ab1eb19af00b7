// complete, complete-eval, complete-table, make-completion-tasks, train-aligncoder, complete-retrieval-eval,
// bench-completion: AlignCoder (query enhancement, AlignRetriever) and its baselines on repository-level code
// completion, one command per experiment.
#include <fmt/core.h>

#include <filesystem>
#include <iostream>
#include <map>

#include "bench/completion.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/field_options.h"
#include "eval/aligncoder_training.h"
#include "eval/completion_metrics.h"
#include "eval/completion_retrieval.h"
#include "eval/completion_runner.h"
#include "util/error.h"
#include "util/log.h"
#include "util/text.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace repoctx {
namespace {

// The completion parameters every completion command spells the same way ("Completion" group).
struct CompletionFlags {
  std::vector<std::string> params;
  void add(CLI::App* c, CompletionParams& p, bool retrieval = true) {
    const char* g = "Completion";
    if (retrieval) add_retrieval(c, p);
    add_param_option(c, p, CompletionParams::table(), "query_lines", "--query-lines")->group(g);
    c->add_option("--param", params,
                  "NAME=VALUE (repeatable): any completion parameter, e.g. candidates=none, dependency_snippets=1, "
                  "coarse_k=10, iterations=2, context_chars=6000, code_chars=6000, hybrid_weight=0.5")
        ->group(g);
  }
  void add_retrieval(CLI::App* c, CompletionParams& p) {
    const char* g = "Completion";
    // The completion parameters' own declarations (retrieve/aligncoder/params.cpp), spelled as options.
    const auto& t = CompletionParams::table();
    for (const auto& [name, flag] : {std::pair{"model_path", "--model-file"},
                                     {"samples", "--samples"},
                                     {"temperature", "--temperature"},
                                     {"top_p", "--top-p"},
                                     {"seed", "--seed"},
                                     {"pool", "--pool"}})
      add_param_option(c, p, t, name, flag)->group(g);
  }
  void apply(CompletionParams& p) const {
    ProceduralParams unused;
    apply_params(unused, params, &p);
  }
};

std::pair<int, int> parse_shard(const std::string& s) {
  if (s.empty()) return {0, 1};
  auto sl = s.find('/');
  try {
    if (sl == std::string::npos) throw std::invalid_argument("no /");
    return {std::stoi(s.substr(0, sl)), std::stoi(s.substr(sl + 1))};
  } catch (const std::exception&) {
    throw Error(ExitCode::usage, "--shard takes i/n with integers, e.g. 0/4; got '" + s + "'");
  }
}

// "1..6" or "1,2,4".
std::vector<int> parse_ks(const std::string& s) {
  std::vector<int> out;
  if (s.empty()) return out;
  try {
    if (auto dots = s.find(".."); dots != std::string::npos) {
      int a = std::stoi(s.substr(0, dots)), b = std::stoi(s.substr(dots + 2));
      for (int k = a; k <= b; ++k) out.push_back(k);
    } else {
      for (const auto& x : split_list(s)) out.push_back(std::stoi(x));
    }
  } catch (const std::exception&) {
    throw Error(ExitCode::usage, "--k takes a range 1..6 or a list 1,2,4; got '" + s + "'");
  }
  for (int k : out)
    if (k < 0) throw Error(ExitCode::usage, "--k values must be >= 0");
  return out;
}

// The completion methods use an embedding model only when one is configured for that role (--embed-model,
// --embed-endpoint or "embedding" in the config): the LLM as a fallback embedder would put a generator's
// pooled states (or a server without /embeddings) into ReACC's dense half.
ModelNeeds without_fallback_embedder(ModelNeeds n, const ModelOptions& mo) {
  if (n.embedder_optional && mo.embed_model.empty() && mo.embed_endpoints.empty() &&
      !llm_config(mo).embedding.configured())
    n.embedder_optional = false;
  return n;
}

// Engines by repository path, opened (and refreshed) on first use.
struct EngineCache {
  OutputOptions out;
  std::map<std::string, std::unique_ptr<Engine>> engines;
  Engine& operator()(const std::string& repo) {
    auto& e = engines[repo];
    if (!e) {
      RepoOptions r;
      r.repo = repo;
      e = open_engine(r, out);
    }
    return *e;
  }
};

void add_task_source_options(CLI::App* c, CompletionTaskLoadOptions& tl, std::vector<std::string>& repo_map) {
  const char* g = "Tasks";
  c->add_option("--repo", repo_map, "NAME=PATH: local path of a benchmark repository (repeatable)")->group(g);
  c->add_option("--repos-dir", tl.repos_dir, "folder holding the benchmark repositories by name")->group(g);
  c->add_option("--benchmark", tl.benchmark, "table column name for every task (default: from the task layout)")
      ->group(g);
}

void apply_repo_map(CompletionTaskLoadOptions& tl, const std::vector<std::string>& repo_map) {
  for (const auto& kv : repo_map) {
    auto eq = kv.find('=');
    if (eq == std::string::npos) throw Error(ExitCode::usage, "--repo takes NAME=PATH, got '" + kv + "'");
    tl.repos[kv.substr(0, eq)] = kv.substr(eq + 1);
  }
}

// --------------------------------------------------------------------------------------- complete
struct CompleteCmd {
  RepoOptions repo;
  OutputOptions out;
  ModelOptions models;
  CompletionFlags flags;
  CompletionRunOptions ro;
  std::string file, method = "cursor-deps", kind = "line";
  int line = 0, column = 0;
  bool show_prompt = false;

  int run() {
    flags.apply(ro.retriever.completion);
    ro.methods = {method};
    auto labels = method_labels(ro);
    auto eng = open_engine(repo, out);
    auto f = eng->view().file_by_path(file);
    if (!f)
      throw Error(ExitCode::not_found,
                  "file '" + file + "' is not in the index (paths are relative to the repository)");
    auto ctx = make_cursor_context(*eng, Cursor{*f, line, column});
    ModelSet ms = open_models(models, without_fallback_embedder(completion_needs(ro), models));
    auto r = make_method(labels.at(0), *eng, ms.models, ro);
    CompletionOutcome o = complete_at(*eng, ms.models, *r, ctx, ro, kind);
    if (out.json) {
      json hits = json::array();
      int rank = 1;
      for (const auto& h : o.hits) hits.push_back(hit_json(*eng, h, rank++, true, nullptr));
      json j = {{"method", method},
                {"file", file},
                {"line", line},
                {"column", column},
                {"hits", hits},
                {"completion", sanitize_utf8(o.generated)},
                {"trace", o.trace},
                {"usage", o.usage.to_json()},
                {"first_line", sanitize_utf8(scored_prediction(o.generated, "x"))}};
      if (show_prompt) j["prompt"] = sanitize_utf8(o.prompt);
      print_json(j);
      return 0;
    }
    if (show_prompt) fmt::print("----- prompt -----\n{}\n----- completion -----\n", o.prompt);
    if (out.verbose)
      for (const auto& h : o.hits)
        fmt::print(stderr, "  {} {}:{}-{} ({:.4f})\n", h.label, eng->view().files()[h.file].path, h.start_line,
                   h.end_line, h.score);
    fmt::print("{}\n", o.generated);
    return 0;
  }
};

// ---------------------------------------------------------------------------------- complete-eval
struct CompleteEvalCmd {
  OutputOptions out;
  ModelOptions models;
  CompletionFlags flags;
  CompletionRunOptions ro;
  CompletionTaskLoadOptions tl;
  std::vector<std::string> repo_map;
  std::string tasks_path, methods = "aligncoder,rlcoder,repocoder,reacc,in-file,no-retrieval", shard, ks;

  int run() {
    flags.apply(ro.retriever.completion);
    apply_repo_map(tl, repo_map);
    ro.methods = split_list(methods);
    if (ro.methods.empty()) throw Error(ExitCode::usage, "--methods is empty");
    ro.ks = parse_ks(ks);
    std::tie(ro.shard, ro.shards) = parse_shard(shard);
    ro.quiet = out.quiet;
    auto tasks = load_completion_tasks(tasks_path, tl);
    ModelSet ms = open_models(models, without_fallback_embedder(completion_needs(ro), models));
    EngineCache engines{out, {}};
    int n = run_completion_eval(tasks, ro, ms.models, [&](const std::string& r) -> Engine& { return engines(r); });
    if (!out.quiet) log_info("{} result(s) written to {}/results.jsonl", n, ro.out_dir);
    std::string md = completion_table({ro.out_dir}, false);
    write_file(ro.out_dir + "/table.md", md);
    write_file(ro.out_dir + "/table.csv", completion_table({ro.out_dir}, true));
    std::cout << md;
    return 0;
  }
};

void add_complete(CLI::App& app, Commands& out) {
  auto c = std::make_shared<CompleteCmd>();
  auto* s = app.add_subcommand("complete", "complete the code at a cursor with one method (AlignCoder or a baseline)");
  add_repo_options(s, c->repo);
  add_output_options(s, c->out);
  s->add_option("--file", c->file, "the file being written, relative to the repository")->required();
  s->add_option("--line", c->line, "cursor line (1-based); the text from the cursor on is treated as absent")
      ->required();
  s->add_option("--column", c->column, "cursor column in bytes (0 = the start of the line)")->capture_default_str();
  s->add_option("-m,--method", c->method,
                "the retrieval: cursor-deps (default: the definitions the code before the cursor reaches, no model; "
                "the best held-out figure without a model: Hit@10 0.84, MRR@10 0.48, BM25 0.27 / 0.12, docs/EVAL.md), "
                "aligncoder, rlcoder, repocoder, "
                "reacc, in-file, no-retrieval (aligncoder@k=N: N samples)")
      ->capture_default_str();
  s->add_option("--kind", c->kind, "line (64 tokens) or function (4x as many)")->capture_default_str();
  s->add_option("-k,--top-k", c->ro.top_k, "snippets retrieved for the prompt")
      ->check(top_k_range())
      ->capture_default_str();
  s->add_option("--max-tokens", c->ro.max_tokens, "tokens generated")->capture_default_str();
  s->add_flag("--show-prompt", c->show_prompt, "print the prompt too")->group("Output");
  c->flags.add(s, c->ro.retriever.completion);
  add_model_options(s, c->models);
  out.push_back({s, [c] { return c->run(); }});

  auto e = std::make_shared<CompleteEvalCmd>();
  s = app.add_subcommand("complete-eval",
                         "EM/ES of completion methods on a task file (CrossCodeEval, RepoEval or make-completion-tasks "
                         "JSONL): resumable, shardable, a Table I-shaped table");
  s->add_option("tasks", e->tasks_path, "task file (JSONL)")->required();
  s->add_option("--methods", e->methods, "comma-separated methods")->capture_default_str();
  s->add_option("--out", e->ro.out_dir, "results folder (results.jsonl, table.md, table.csv); re-running resumes")
      ->required();
  s->add_option("--shard", e->shard, "i/n: run the tasks whose position mod n is i")->group("Scale-out");
  s->add_option("--k", e->ks, "RQ2: AlignCoder's sampling numbers, a range 1..6 or a list (one row each)");
  s->add_option("-k,--top-k", e->ro.top_k, "snippets retrieved for the prompt")
      ->check(top_k_range())
      ->capture_default_str();
  s->add_option("--max-tokens", e->ro.max_tokens, "tokens generated (function tasks: 4x)")->capture_default_str();
  add_task_source_options(s, e->tl, e->repo_map);
  e->flags.add(s, e->ro.retriever.completion);
  add_output_options(s, e->out, false);
  add_model_options(s, e->models);
  out.push_back({s, [e] { return e->run(); }});

  struct TableCmd {
    std::vector<std::string> dirs;
    bool csv = false;
  };
  auto t = std::make_shared<TableCmd>();
  s = app.add_subcommand("complete-table", "the EM/ES table of one or more complete-eval --out folders (shards)");
  s->add_option("dirs", t->dirs, "results folders")->required();
  s->add_flag("--csv", t->csv, "CSV instead of Markdown");
  out.push_back({s, [t] {
                   std::cout << completion_table(t->dirs, t->csv);
                   return 0;
                 }});
}

// ----------------------------------------------------------------------------- tasks and training
struct MakeCompletionTasksCmd {
  RepoOptions repo;
  OutputOptions out;
  std::string out_path;
  CompletionBuildOptions o;
  int run() {
    auto eng = open_engine(repo, out);
    std::string root = fs::absolute(repo.repo).lexically_normal().string();
    while (root.size() > 1 && root.back() == '/') root.pop_back();
    auto tasks = build_completion_tasks(*eng, root, o);
    write_completion_tasks(out_path, tasks);
    if (out.json)
      print_json({{"tasks", tasks.size()}, {"out", out_path}});
    else if (!out.quiet)
      fmt::print("{} task(s) written to {}\n", tasks.size(), out_path);
    return tasks.empty() ? 1 : 0;
  }
};

struct TrainCmd {
  std::vector<std::string> repos, val_repos;
  OutputOptions out;
  ModelOptions models;
  AlignTrainOptions o;
  CompletionFlags flags;
  int run() {
    flags.apply(o.completion);
    o.completion.seed = o.seed;
    o.command = "repoctx";
    for (size_t i = 1; i < g_argv.size(); ++i) o.command += " " + g_argv[i];
    EngineCache engines{out, {}};
    auto training_repos = [&](const std::vector<std::string>& paths) {
      std::vector<TrainingRepo> tr;
      for (const auto& r : paths) {
        std::string root = fs::absolute(r).lexically_normal().string();
        while (root.size() > 1 && root.back() == '/') root.pop_back();
        tr.push_back({fs::path(root).filename().string(), &engines(root)});
      }
      return tr;
    };
    std::vector<TrainingRepo> tr = training_repos(repos), val = training_repos(val_repos);
    if (o.candidate_source == "auto") o.candidate_source = llm_config(models).llm.configured() ? "sample" : "oracle";
    ModelNeeds needs;
    needs.llm = o.labels == "ppl" || (o.query == "enhanced" && o.candidate_source == "sample");
    needs.embedder = o.encoder.mix;
    ModelSet ms = open_models(models, needs);
    AlignTrainReport rep = train_aligncoder(tr, o, ms.models, val);
    if (out.json) {
      json j = rep.to_json();
      j["model"] = o.out_path;
      print_json(j);
    } else if (!out.quiet) {
      fmt::print("model written to {} ({} epoch(s) now, {} before; peak memory {:.0f} MB)\n", o.out_path,
                 rep.epochs.size(), rep.resumed_from, rep.peak_rss_mb);
    }
    return 0;
  }
};

void add_training(CLI::App& app, Commands& out) {
  auto m = std::make_shared<MakeCompletionTasksCmd>();
  auto* s = app.add_subcommand("make-completion-tasks",
                               "RepoEval-style completion tasks from a local repository (line-level, API-level)");
  add_repo_options(s, m->repo);
  add_output_options(s, m->out);
  s->add_option("--out", m->out_path, "task file to write (JSONL, read by complete-eval)")->required();
  s->add_option("--kind", m->o.kind, "line, api or both")->capture_default_str();
  s->add_option("--max", m->o.max_tasks, "tasks to make")->capture_default_str();
  s->add_option("--seed", m->o.seed, "which lines (deterministic for a seed)")->capture_default_str();
  s->add_option("--margin", m->o.margin_lines, "never a cursor in the first or last N lines of a file")
      ->capture_default_str();
  s->add_option("--per-file", m->o.max_per_file, "tasks per file at most")->capture_default_str();
  s->add_option("--benchmark", m->o.benchmark, "table column name (default: <folder>-<kind>)");
  out.push_back({s, [m] { return m->run(); }});

  auto t = std::make_shared<TrainCmd>();
  s = app.add_subcommand("train-aligncoder",
                         "train the AlignRetriever (AlignCoder III-C) on repositories; resumable, seeded");
  s->add_option("repos", t->repos, "repositories to train on")->required();
  s->add_option("--out", t->o.out_path, "model file to write (its checkpoint: <out>.ckpt)")->required();
  s->add_option("--epochs", t->o.epochs, "epochs")->capture_default_str();
  s->add_option("--samples", t->o.samples_per_epoch, "samples per epoch")->capture_default_str();
  s->add_option("--batch", t->o.batch, "mini-batch size")->capture_default_str();
  s->add_option("--lr", t->o.lr, "Adam learning rate")->capture_default_str();
  s->add_option("--weight-decay", t->o.weight_decay, "decay of the learned rows")->capture_default_str();
  s->add_option("--l2-init", t->o.l2_init,
                "proximal L2 pull of every parameter towards the untrained encoder (0: none; inf: no change)")
      ->capture_default_str();
  s->add_flag("--balance-repos", t->o.balance_repos, "draw each repository equally often (default: each file)");
  s->add_option("--val-repo", t->val_repos,
                "validation repository for early stopping (repeatable; none of the training ones): the model file "
                "holds the epoch with the lowest validation loss, the untrained encoder included");
  s->add_option("--val-samples", t->o.val_samples, "validation samples")->capture_default_str();
  s->add_option("--patience", t->o.patience, "epochs without a better validation loss before stopping")
      ->capture_default_str();
  s->add_option("--seed", t->o.seed, "training data, shuffling and sampling seed")->capture_default_str();
  s->add_option("--labels", t->o.labels,
                "defines (LLM-free: the snippet defining the most of the target's identifiers), overlap (also "
                "containment-only labels) or ppl (eq. 24, needs --model)")
      ->capture_default_str();
  s->add_option("--query", t->o.query, "enhanced (AlignCoder) or plain (RLCoder)")->capture_default_str();
  t->o.candidate_source = "auto";
  s->add_option("--candidates", t->o.candidate_source,
                "where an enhanced query's candidates come from: sample (the LLM, as III-C trains), oracle (the "
                "target itself, LLM-free) or auto (sample when a model is configured, else oracle)")
      ->capture_default_str();
  s->add_option("--candidate-rate", t->o.candidate_rate, "share of samples whose query carries candidates")
      ->capture_default_str();
  s->add_option("--candidates-per-query", t->o.candidates_per_query, "|C|: snippets per sample")->capture_default_str();
  s->add_option("--dim", t->o.encoder.dim, "embedding dimension")->capture_default_str();
  s->add_option("--vocab", t->o.encoder.vocab, "learned token rows")->capture_default_str();
  s->add_option("--tau", t->o.encoder.tau, "softmax temperature")->capture_default_str();
  s->add_option("--train-threads", t->o.threads, "threads building samples")->capture_default_str();
  s->add_flag("--mix", t->o.encoder.mix, "mix in a frozen GGUF embedding (needs --embed-model or --model)");
  s->add_option("--head", t->o.encoder.head,
                "with --mix: train a linear head of N rows over the embedding (a seeded random projection at "
                "the start; 0: the embedding's own cosine)")
      ->check(CLI::Range(0, 4096))
      ->capture_default_str();
  s->add_flag("--restart", t->o.restart, "ignore an existing checkpoint");
  t->flags.add(s, t->o.completion, false);
  add_output_options(s, t->out);
  add_model_options(s, t->models);
  out.push_back({s, [t] { return t->run(); }});
}

// --------------------------------------------------------------------- retrieval measure, benchmark
struct RetrievalEvalCmd {
  OutputOptions out;
  ModelOptions models;
  CompletionFlags flags;
  RetrievalEvalOptions o;
  CompletionTaskLoadOptions tl;
  std::vector<std::string> repo_map;
  std::string tasks_path, methods = "bm25,reacc,bm25-oracle,untrained,aligncoder,aligncoder-oracle";
  int run() {
    flags.apply(o.retriever.completion);
    apply_repo_map(tl, repo_map);
    o.methods = split_list(methods);
    auto tasks = load_completion_tasks(tasks_path, tl);
    ModelNeeds needs;
    for (const auto& m : o.methods)
      if (m == "reacc" || starts_with(m, "aligncoder") || m == "rlcoder") needs.embedder_optional = true;
    ModelSet ms = open_models(models, without_fallback_embedder(needs, models));
    EngineCache engines{out, {}};
    auto rep =
        run_completion_retrieval_eval(tasks, o, ms.models, [&](const std::string& r) -> Engine& { return engines(r); });
    if (out.json)
      print_json(rep.to_json());
    else
      std::cout << rep.table();
    return 0;
  }
};

void add_measures(CLI::App& app, Commands& out) {
  auto r = std::make_shared<RetrievalEvalCmd>();
  auto* s = app.add_subcommand("complete-retrieval-eval",
                               "LLM-free: share of tasks whose top-k retrieved context contains a definition the "
                               "ground-truth line calls, with bootstrap intervals");
  s->add_option("tasks", r->tasks_path, "task file with definitions (make-completion-tasks --kind api)")->required();
  s->add_option(
       "--methods", r->methods,
       "bm25, bm25-oracle, reacc, rlcoder, aligncoder, aligncoder-oracle, untrained, untrained-oracle, in-file, "
       "cursor-deps, imports-recency")
      ->capture_default_str();
  s->add_option("--baseline", r->o.baseline, "the method differences are measured against")->capture_default_str();
  s->add_option("-k,--top-k", r->o.top_k, "retrieved snippets")->check(top_k_range())->capture_default_str();
  s->add_option("--bootstrap", r->o.bootstrap, "bootstrap resamples")->capture_default_str();
  s->add_option("--dump-hits", r->o.dump_hits,
                "write every hit that has features (task, method, rank, features, whether it contains a definition) "
                "as JSON lines: what scripts/fit_cursor_deps.py fits cursor-deps' weights on");
  add_task_source_options(s, r->tl, r->repo_map);
  r->flags.add(s, r->o.retriever.completion);
  add_output_options(s, r->out);
  add_model_options(s, r->models);
  out.push_back({s, [r] { return r->run(); }});

  struct BenchCmd {
    RepoOptions repo;
    OutputOptions out;
    CompletionBenchOptions o;
    std::vector<std::string> train_repos;
  };
  auto b = std::make_shared<BenchCmd>();
  s = app.add_subcommand("bench-completion",
                         "completion speed: tasks built per second, fine-retrieval latency, training time per epoch "
                         "and peak memory (against BM25 and sample building measured in the same run)");
  add_repo_options(s, b->repo);
  add_output_options(s, b->out);
  s->add_option("--tasks", b->o.tasks, "tasks to build and query")->capture_default_str();
  s->add_option("--train-repo", b->train_repos, "repositories to train on (default: the repository)");
  s->add_option("--samples", b->o.train.samples_per_epoch, "training samples (one epoch)")->capture_default_str();
  s->add_option("--train-threads", b->o.train.threads, "threads building samples")->capture_default_str();
  s->add_option("--model-file", b->o.model_path, "AlignRetriever model for the latency (default: built-in)");
  s->add_option("--cold-runs", b->o.cold_runs, "cold `retrieve --file F --line N` processes to time")
      ->check(CLI::Range(1, 1000))
      ->capture_default_str();
  out.push_back({s, [b] {
                   auto eng = b->repo.repo.empty() ? nullptr : open_engine(b->repo, b->out);
                   EngineCache engines{b->out, {}};
                   std::vector<TrainingRepo> tr;
                   for (const auto& r : b->train_repos) tr.push_back({fs::path(r).filename().string(), &engines(r)});
                   if (tr.empty()) tr.push_back({fs::path(b->repo.repo).filename().string(), eng.get()});
                   std::string root = fs::absolute(b->repo.repo).lexically_normal().string();
                   b->o.db = b->repo.db;
                   auto rep = bench_completion(*eng, root, tr, b->o);
                   if (b->out.json)
                     print_json(rep);
                   else
                     std::cout << completion_bench_text(rep);
                   return 0;
                 }});
}

}  // namespace

void add_complete_commands(CLI::App& app, Commands& out) {
  add_complete(app, out);
  add_training(app, out);
  add_measures(app, out);
}

}  // namespace repoctx
