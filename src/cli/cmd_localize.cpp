// localize, localize-eval, localize-table, make-lca-tasks, count-tokens: the context-retrieval study (Kovrigin
// et al.) for one request, over a task file, its table, an LCA-style task set from a repository's history, and
// its token counts.
#include <fmt/core.h>

#include <chrono>
#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "cli/field_options.h"
#include "eval/lca_builder.h"
#include "eval/localize.h"
#include "eval/train_locate.h"
#include "index/index.h"
#include "repo/git_source.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/log.h"
#include "util/text.h"
#include "util/token_count.h"
#include "util/tokenizer_cl100k.h"

using nlohmann::json;

namespace repoctx {
namespace {

std::string cache_root() {
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/tmp") + "/.cache/repoctx/study";
}

struct LocalizeCmd {
  RepoOptions repo;
  OutputOptions out;
  ModelOptions models;
  api::LocalizeParams p;  // the options every surface shares (api::localize_fields)
  // The command line's own: the request from a file, the repository at a commit, the trace written to a file.
  std::string issue_file, commit, trace_path;

  // The repository at --commit, read from git objects (its tree written once into the cache, then indexed).
  std::unique_ptr<Engine> engine_at_commit() {
    GitRepository git(repo.repo);
    auto c = git.resolve_commit(commit);
    if (!c) throw Error(ExitCode::not_found, "commit '" + commit + "' is not in '" + repo.repo + "'");
    IndexOptions io = index_options(repo, !out.quiet);
    io.db_path = repo.db;
    return Engine::open(index_at_commit(git, *c, cache_root(), io));
  }

  int run() {
    RetrieverOptions ro;
    ro.locate_model = p.locate_model;
    for (const auto& [name, value] : p.params) apply_retriever_param(ro, name, value);
    const std::string& strategy = p.strategy;
    const RetrieverInfo& info = retriever_info(strategy);
    if (p.request.empty() == issue_file.empty())
      throw Error(ExitCode::usage, "give the request as --request TEXT or --issue FILE");
    std::string request = p.request.empty() ? read_file(issue_file, "issue file") : p.request;
    auto eng = commit.empty() ? open_engine(repo, out) : engine_at_commit();
    ModelSet ms = open_models(models, info.needs);
    RetrievalQuery q;
    q.text = request;
    RetrievalResult res = make_retriever(strategy, *eng, ms.models, ro)->run(q);
    if (!trace_path.empty())
      write_file(trace_path, res.trace.dump(1, ' ', false, json::error_handler_t::replace) + "\n");
    int tokens = res.trace.is_object() ? res.trace.value("context_tokens", 0) : 0;
    std::string stop = res.trace.is_object() ? res.trace.value("stop_reason", "") : "";
    if (out.json) {
      json j = {{"strategy", strategy}, {"context_tokens", tokens}, {"stop_reason", stop}};
      j["results"] = json::array();
      int rank = 1;
      for (const auto& h : res.hits) j["results"].push_back(hit_json(*eng, h, rank++, p.with_text, nullptr));
      j["llm_usage"] = res.usage.to_json();
      print_json(j);
      return 0;
    }
    fmt::print("{}: {} ranges, {} tokens, stopped: {}\n", strategy, res.hits.size(), tokens, stop);
    for (const auto& h : res.hits) {
      std::string where = h.entity >= 0 ? "  " + eng->view().entities()[h.entity].qualname : "";
      fmt::print("  {}:{}-{}{}\n", eng->view().files()[h.file].path, h.start_line, h.end_line, where);
      if (p.with_text) fmt::print("{}\n\n", hit_json(*eng, h, 0, true, nullptr)["text"].get<std::string>());
    }
    return 0;
  }
};

struct LocalizeEvalCmd {
  OutputOptions out;
  ModelOptions models;
  std::string tasks, strategies = "study-bm25", shard = "0/1", entity_rule = "innermost";
  LocalizeEvalOptions o;
  std::vector<std::string> params;
  bool no_traces = false;

  int run() {
    apply_params(o.retriever, params);
    o.strategies = split_list(strategies);
    if (o.strategies.empty()) throw Error(ExitCode::usage, "--strategies names no strategy");
    ModelNeeds needs;
    for (const auto& s : o.strategies) needs |= retriever_info(s).needs;
    auto slash = shard.find('/');
    try {
      if (slash == std::string::npos) throw std::invalid_argument("no /");
      o.shard = std::stoi(shard.substr(0, slash));
      o.shards = std::stoi(shard.substr(slash + 1));
    } catch (const std::exception&) {
      throw Error(ExitCode::usage, "--shard takes i/n (e.g. 0/4), got '" + shard + "'");
    }
    if (o.repos_dirs.empty()) throw Error(ExitCode::usage, "give --repos DIR: the folder holding the clones");
    o.write_traces = !no_traces;
    o.entity_rule = entity_rule_named(entity_rule);
    auto list = load_localize_tasks(tasks);
    ModelSet ms = open_models(models, needs);
    size_t n = run_localize_eval(list, o, ms.models);
    std::string table = localize_table(o.out_dir);
    write_file(o.out_dir + "/table.md", table);
    if (!out.quiet) log_info("{} rows written; table in {}/table.md", n, o.out_dir);
    if (out.json) {
      print_json({{"rows_written", n}, {"table", table}});
      return 0;
    }
    std::cout << table;
    return 0;
  }
};

// repoctx train-locate: the `locate` strategy's logistic models from localization tasks (the tune split).
struct TrainLocateCmd {
  OutputOptions out;
  std::string tasks, out_path;
  LocalizeEvalOptions where;
  LocateTrainOptions o;

  int run() {
    if (where.repos_dirs.empty()) throw Error(ExitCode::usage, "give --repos DIR: the folder holding the clones");
    auto list = load_localize_tasks(tasks);
    LocateTrainReport rep;
    LocateModel m = train_locate(list, where, o, &rep);
    std::string name = tasks.substr(tasks.rfind('/') == std::string::npos ? 0 : tasks.rfind('/') + 1);
    m.provenance = {{"tasks_file", name},
                    {"tasks", rep.tasks},
                    {"skipped", rep.skipped},
                    {"repos", rep.repos},
                    {"file_rows", rep.file_rows},
                    {"file_positives", rep.file_positives},
                    {"entity_rows", rep.entity_rows},
                    {"entity_positives", rep.entity_positives},
                    {"file_log_loss", rep.file_log_loss},
                    {"entity_log_loss", rep.entity_log_loss},
                    {"l2", o.l2},
                    {"command", "repoctx train-locate " + name + " --repos DIR --out models/locate.json"}};
    write_file(out_path, m.to_json());
    if (out.json) {
      print_json(m.provenance);
      return 0;
    }
    fmt::print(
        "locate model from {} tasks of {} repositories ({} skipped): {} file rows ({} gold), {} entity rows "
        "({} gold); written to {}\n",
        rep.tasks, rep.repos.size(), rep.skipped, rep.file_rows, rep.file_positives, rep.entity_rows,
        rep.entity_positives, out_path);
    return 0;
  }
};

struct MakeLcaCmd {
  std::string repo, out_path;
  LcaBuildOptions o;
  bool append = false;

  int run() {
    if (o.repo_name.empty()) throw Error(ExitCode::usage, "give --name owner/name for the rows");
    auto rows = build_lca_tasks(repo, o);
    std::ofstream f(out_path, append ? std::ios::app : std::ios::trunc);
    if (!f) throw Error(ExitCode::bad_input, "cannot write '" + out_path + "'");
    for (const auto& r : rows) f << r.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
    fmt::print("{} tasks from {} written to {}\n", rows.size(), o.repo_name, out_path);
    return 0;
  }
};

void add_localize(CLI::App& app, Commands& out) {
  auto l = std::make_shared<LocalizeCmd>();
  auto* c = app.add_subcommand("localize", "context-retrieval study: gather the context a request needs");
  add_repo_options(c, l->repo);
  add_output_options(c, l->out);
  // The shared parameters (api::localize_fields: the same names, ranges and meanings as HTTP, MCP and Python).
  add_field_options(c, l->p, api::localize_fields(), "Localization");
  c->add_option("--issue", l->issue_file, "a file holding the request");
  c->add_option("--commit", l->commit, "read REPO (a git repository) at this commit from git objects, no checkout");
  c->add_option("--trace", l->trace_path, "write the trace (every agent step, stop reason, context) to this file");
  add_model_options(c, l->models);
  out.push_back({c, [l] { return l->run(); }});
}

void add_localize_eval(CLI::App& app, Commands& out) {
  auto e = std::make_shared<LocalizeEvalCmd>();
  auto* c =
      app.add_subcommand("localize-eval", "context-retrieval study over a task file: P/R/F1 and Avg. CL per strategy");
  add_output_options(c, e->out);
  c->add_option("tasks", e->tasks, "SWE-bench or LCA rows (JSON array or JSONL)")->required();
  c->add_option("--strategies", e->strategies, "comma-separated strategies")->capture_default_str();
  c->add_option("--out", e->o.out_dir, "results folder (rows, traces, table.md); re-running resumes")->required();
  c->add_option("--repos", e->o.repos_dirs,
                "folder of clones: DIR/owner+name[/repo], DIR/owner/name or DIR/name (repeatable)");
  c->add_option("--cache-dir", e->o.cache_dir, "trees and indexes by tree id (default ~/.cache/repoctx/study)");
  c->add_option("--shard", e->shard, "i/n: run the tasks i, i+n, i+2n, ...")->capture_default_str();
  c->add_option("--max-tasks", e->o.max_tasks, "stop after this many tasks of the shard (0 = all)");
  c->add_flag("--no-traces", e->no_traces, "do not write a trace per task and strategy");
  c->add_option("--entity-rule", e->entity_rule,
                "entities of changed and retrieved lines: innermost (each line's innermost function or class, "
                "else its module: the study's rule) or enclosing (every enclosing function and class besides)")
      ->check(CLI::IsMember({"innermost", "enclosing"}))
      ->capture_default_str();
  c->add_option("--param", e->params, "NAME=VALUE (repeatable), as for localize");
  c->add_option("--locate-model", e->o.retriever.locate_model,
                "locate: model file (default: the built-in models/locate.json)");
  add_model_options(c, e->models);
  out.push_back({c, [e] { return e->run(); }});

  auto t = std::make_shared<std::pair<std::string, std::string>>();
  c = app.add_subcommand("localize-table", "the context-retrieval study's table from a localize-eval folder");
  c->add_option("dir", t->first, "results folder")->required();
  c->add_option("--out", t->second, "also write the table to this file");
  out.push_back({c, [t] {
                   std::string table = localize_table(t->first);
                   if (!t->second.empty()) write_file(t->second, table);
                   std::cout << table;
                   return 0;
                 }});

  auto tl = std::make_shared<TrainLocateCmd>();
  c = app.add_subcommand("train-locate", "train the locate strategy's file and entity models on localization tasks");
  add_output_options(c, tl->out);
  c->add_option("tasks", tl->tasks, "SWE-bench or LCA rows (JSON array or JSONL): the tune split")->required();
  c->add_option("--out", tl->out_path, "model file to write (models/locate.json is built into repoctx)")->required();
  c->add_option("--repos", tl->where.repos_dirs, "folder of clones (repeatable), as for localize-eval");
  c->add_option("--cache-dir", tl->where.cache_dir, "trees and indexes by tree id (default ~/.cache/repoctx/study)");
  c->add_option("--l2", tl->o.l2, "L2 regularisation")->capture_default_str();
  out.push_back({c, [tl] { return tl->run(); }});

  auto m = std::make_shared<MakeLcaCmd>();
  c = app.add_subcommand("make-lca-tasks", "LCA-style code-editing tasks from a git repository's history");
  c->add_option("repo", m->repo, "a git repository (clone or bare)")->required();
  c->add_option("--name", m->o.repo_name, "owner/name written into the rows")->required();
  c->add_option("--out", m->out_path, "JSONL file")->required();
  c->add_flag("--append", m->append, "append to the file instead of replacing it");
  c->add_option("--rev", m->o.rev, "walk the first-parent history from here")->capture_default_str();
  c->add_option("--max", m->o.max_tasks, "tasks to keep")->capture_default_str();
  c->add_option("--scan", m->o.scan, "commits to look at")->capture_default_str();
  c->add_option("--min-words", m->o.min_message_words, "words a commit message needs")->capture_default_str();
  c->add_option("--max-files", m->o.max_files, "most files a change may touch")->capture_default_str();
  c->add_option("--min-lines", m->o.min_changed_lines, "fewest added+removed lines")->capture_default_str();
  c->add_option("--max-lines", m->o.max_changed_lines, "most added+removed lines")->capture_default_str();
  c->add_option("--gold-files", m->o.gold_files,
                "the files of the gold patch: python (non-test Python files) or text (every non-test file)")
      ->check(CLI::IsMember({"python", "text"}))
      ->capture_default_str();
  out.push_back({c, [m] { return m->run(); }});
}

// Counting speed without file reading or process start (docs/BENCHMARKS.md compares it with tiktoken's own
// implementation run the same way).
void print_token_count_bench(const std::vector<std::string>& files, TokenCounter how, int passes) {
  std::vector<std::string> texts;
  size_t bytes = 0;
  for (const auto& f : files) bytes += texts.emplace_back(read_file(f)).size();
  count_tokens("warm up", how);  // loads the ranks
  double best = 1e300;
  long tokens = 0;
  for (int pass = 0; pass < passes; ++pass) {
    auto t0 = std::chrono::steady_clock::now();
    tokens = 0;
    for (const auto& t : texts) tokens += count_tokens(t, how);
    best = std::min(best, std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  std::cout << json{{"files", files.size()}, {"bytes", bytes},
                    {"tokens", tokens},      {"tokenizer", token_counter_name(how)},
                    {"best_seconds", best},  {"mb_per_s", static_cast<double>(bytes) / 1e6 / best}}
                   .dump()
            << "\n";
}

// count-tokens: the tokens of files as the study counts them (one JSON line per file), so that a budget or an
// Avg. CL can be checked by hand and the tokenizer compared with others.
void add_count_tokens(CLI::App& app, Commands& out) {
  struct CountTokensCmd {
    std::vector<std::string> files;
    std::string tokenizer = "cl100k";
    bool ids = false;
    int bench = 0;
  };
  auto k = std::make_shared<CountTokensCmd>();
  auto* c = app.add_subcommand("count-tokens", "tokens of files as the context-retrieval study counts them");
  c->add_option("files", k->files, "text files")->required();
  c->add_option("--tokenizer", k->tokenizer, "cl100k (GPT-3.5's, exact) or estimate")
      ->check(CLI::IsMember({"cl100k", "estimate"}))
      ->capture_default_str();
  c->add_flag("--ids", k->ids, "also print the token ids (cl100k)");
  c->add_option("--bench", k->bench,
                "instead: count every file N times in memory and print the best pass's speed (the ranks loaded first)")
      ->check(CLI::Range(1, 1000));
  out.push_back({c, [k] {
                   TokenCounter how = token_counter_named(k->tokenizer);
                   if (k->bench > 0) {
                     print_token_count_bench(k->files, how, k->bench);
                     return 0;
                   }
                   for (const auto& f : k->files) {
                     std::string text = read_file(f);
                     json j = {{"file", f}, {"bytes", text.size()}, {"tokenizer", token_counter_name(how)}};
                     if (k->ids && how == TokenCounter::cl100k) {
                       j["ids"] = cl100k::encode(text);
                       j["tokens"] = j["ids"].size();
                     } else {
                       j["tokens"] = count_tokens(text, how);
                     }
                     std::cout << j.dump() << "\n";
                   }
                   return 0;
                 }});
}

}  // namespace

void add_localize_commands(CLI::App& app, Commands& out) {
  add_localize(app, out);
  add_localize_eval(app, out);
  add_count_tokens(app, out);
}

}  // namespace repoctx
