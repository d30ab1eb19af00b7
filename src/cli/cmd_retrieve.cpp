// retrieve, strategies, select-functions: context for a target or a query, by any strategy.
#include <fmt/core.h>

#include <fstream>
#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "retrieve/aligncoder/codebase.h"
#include "retrieve/function_selection.h"
#include "util/error.h"
#include "util/log.h"
#include "util/text.h"

using nlohmann::json;

namespace repoctx {
namespace {

struct RetrieveCmd {
  RepoOptions repo;
  OutputOptions out;
  ModelOptions models;
  std::string target, query, strategy;
  int top_k = 20;
  bool with_text = false, exclude_tests = false;
  RetrieverOptions ro;
  std::vector<std::string> params;
  std::string benchmark_targets_file;

  // A completion cursor (AlignCoder and its baselines): --file F --line N [--column C].
  std::string file;
  int line = 0, column = 0;
  std::string completion;  // --completion: a given candidate completion (an oracle) for aligncoder

  int run() {
    apply_params(ro, params);
    // The best measured strategy for each kind of query (docs/EVAL.md): structural ranks what a function's
    // scope reaches; a free-text query has no scope, and BM25 serves it.
    // A completion cursor gets cursor-deps: the definitions the code before it reaches, ranked by how it mentions
    // them, then BM25's snippets (held-out Hit@10 0.78 against aligncoder-snippets' 0.27, docs/EVAL.md).
    if (strategy.empty()) strategy = !target.empty() ? "structural" : !file.empty() ? "cursor-deps" : "sparse";
    const RetrieverInfo& info = retriever_info(strategy);  // an unknown name fails before any work
    auto eng = open_engine(repo, out);
    ModelSet ms = open_models(models, retriever_needs(strategy, ro));
    RetrievalQuery q;
    q.top_k = top_k;
    q.text = query;
    if (!target.empty()) q.target = eng->resolve_target(target);
    if (!file.empty()) {
      auto f = eng->view().file_by_path(file);
      if (!f) throw Error(ExitCode::not_found, "file '" + file + "' is not in the index");
      if (line < 1) throw Error(ExitCode::usage, "--file needs --line N (1-based)");
      q.cursor = make_cursor_context(*eng, Cursor{*f, line, column});
    }
    if (!completion.empty()) q.completions = {completion};
    if (!q.target && q.text.empty() && !q.cursor)
      throw Error(ExitCode::usage, "give --target path::Qual.name, --query TEXT or a cursor (--file F --line N)");
    if (q.target) q.context = std::make_shared<const TargetContext>(eng->make_context(*q.target));
    if (!benchmark_targets_file.empty())
      for (const auto& spec : read_target_specs(benchmark_targets_file))
        q.benchmark_targets.push_back(eng->resolve_target(spec).entity);
    auto retriever = make_retriever(strategy, *eng, ms.models, ro);
    auto result =
        exclude_tests
            ? run_filtered(*retriever, q,
                           [&](const Hit& h) { return h.file >= 0 && is_test_path(eng->view().files()[h.file].path); })
            : retriever->run(q);
    const TargetContext* ctx = q.context.get();
    // An empty result says why (procedural: "no grounded context step: ...").
    if (result.hits.empty() && !result.empty_reason.empty()) log_warn("no result: {}", result.empty_reason);
    if (out.json) {
      json j;
      j["strategy"] = strategy;
      j["score"] = info.score;
      if (q.target) j["target"] = eng->target_name(q.target->entity);
      j["query"] =
          sanitize_utf8(q.cursor && q.text.empty() ? query_window(q.cursor->unfinished, ro.completion.query_lines)
                                                   : query_text(*eng, q, ctx));
      j["results"] = json::array();
      int rank = 1;
      for (const auto& h : result.hits) j["results"].push_back(hit_json(*eng, h, rank++, with_text, ctx));
      if (result.hits.empty() && !result.empty_reason.empty()) j["empty_reason"] = result.empty_reason;
      if (!result.plan.empty()) {
        j["plan"] = json::array();
        for (const auto& st : result.plan)
          j["plan"].push_back({{"step", st.id},
                               {"description", sanitize_utf8(st.description)},
                               {"confirmed", st.confirmed},
                               {"results", st.hits.size()}});
      }
      print_json(j);
      if (!ms.session) exit_after_output(0);
      return 0;
    }
    if (!out.quiet) {
      fmt::print("{} results of `{}`{}; score = {}\n", result.hits.size(), strategy,
                 q.target ? " for " + eng->target_name(q.target->entity) + " (its body hidden)" : "", info.score);
      if (result.hits.empty()) return 0;
      fmt::print("{:>4}  {:>8}  {}\n", "rank", "score", "location and name");
    }
    int rank = 1;
    for (const auto& h : result.hits) {
      json j = hit_json(*eng, h, rank, with_text, ctx);
      std::string name = j.contains("qualname") ? j["qualname"].get<std::string>() : j["type"].get<std::string>();
      fmt::print("{:>3}.  {:8.4f}  {}:{}-{}  {}{}\n", rank, h.score, j["file"].get<std::string>(), h.start_line,
                 h.end_line, name, h.label.empty() ? "" : " [" + h.label + "]");
      if (with_text) fmt::print("{}\n\n", j["text"].get<std::string>());
      ++rank;
    }
    if (!ms.session) exit_after_output(0);
    return 0;
  }
};

struct SelectCmd {
  RepoOptions repo;
  OutputOptions out;
  std::vector<std::string> targets;
  std::string targets_file;
  int top_files = 20;

  int run() {
    auto eng = open_engine(repo, out);
    if (!targets_file.empty())
      for (auto& spec : read_target_specs(targets_file)) targets.push_back(std::move(spec));
    std::vector<int> ids;
    for (const auto& t : targets) ids.push_back(eng->resolve_target(t).entity);
    auto sel = select_functions(*eng, ids, top_files);
    const auto& v = eng->view();
    json j;
    j["selected_files"] = json::array();
    for (size_t i = 0; i < sel.ranked_files.size() && static_cast<int>(i) < top_files; ++i) {
      const auto& r = sel.ranked_files[i];
      j["selected_files"].push_back(
          {{"file", v.files()[r.file].path}, {"n_target", r.n_target}, {"n_functions", r.n_functions}});
    }
    j["context_functions"] = json::array();
    for (int e : sel.context_functions) j["context_functions"].push_back(eng->target_name(e));
    if (out.json) {
      print_json(j);
      return 0;
    }
    for (const auto& r : j["selected_files"])
      fmt::print("{:>3} targets {:>4} functions  {}\n", r["n_target"].get<int>(), r["n_functions"].get<int>(),
                 r["file"].get<std::string>());
    fmt::print("{} context functions selected\n", sel.context_functions.size());
    return 0;
  }
};

void add_retrieve_command(CLI::App& app, Commands& out) {
  auto r = std::make_shared<RetrieveCmd>();
  auto* c = app.add_subcommand("retrieve", "retrieve context for a target function (its body hidden) or a query");
  add_repo_options(c, r->repo);
  add_output_options(c, r->out);
  c->add_option("--target", r->target, "path/to/file.py::Qualified.name");
  c->add_option("--query", r->query, "free-text query (instead of, or overriding, the target's signature+docstring)");
  c->add_option("-s,--strategy", r->strategy,
                "retrieval strategy (see `repoctx strategies`); default: structural for --target, sparse for --query, "
                "cursor-deps for a cursor (--file/--line: on held-out libraries its top 10 holds a definition the "
                "next line calls for 84% of API tasks, MRR@10 0.48; the imports-recency heuristic 77% / 0.45, BM25's "
                "aligncoder-snippets 27% / 0.12; docs/EVAL.md)");
  c->add_option("-k,--top-k", r->top_k, "number of results")->check(top_k_range())->capture_default_str();
  c->add_flag("--exclude-tests", r->exclude_tests,
              "leave test files (tests/, test_*.py, conftest.py) out of the results");
  c->add_flag("--with-text", r->with_text, "include each result's text")->group("Output");
  const char* g = "Strategy";
  c->add_option("--corpus", r->ro.corpus, "sparse: entities or snippets")->capture_default_str()->group(g);
  c->add_option("--k1", r->ro.bm25.k1, "BM25 k1")->capture_default_str()->group(g);
  c->add_option("--b", r->ro.bm25.b, "BM25 b")->capture_default_str()->group(g);
  c->add_flag("--pool-methods", r->ro.pool_methods, "imports: also rank methods of pool classes")->group(g);
  c->add_flag("--bm25-only", r->ro.bm25_only, "imports: rank the pool by BM25 alone even with an embedding model")
      ->group(g);
  c->add_option("--structural-model", r->ro.model_path, "structural: weights file (default: the shipped model)")
      ->group(g);
  c->add_option("--locate-model", r->ro.locate_model, "locate: model file (default: the built-in one)")->group(g);
  c->add_option("--trace", r->ro.trace_path, "procedural: write the JSON trace of every stage to this file")->group(g);
  c->add_option("--rq2-pairs", r->ro.rq2_pairs_path,
                "procedural: append (target step, context step, similarity to each seed) pairs (JSONL)")
      ->group(g);
  c->add_option("--param", r->params,
                "procedural, completion, imports and hybrid: NAME=VALUE (repeatable), e.g. seed_threshold=0.75, "
                "expand_tau=0.65, agent=false (all: the trace's \"params\"); samples=4, candidates=none, pool=50, "
                "dependency_snippets=1; imports_order=structural|bm25, hybrid_fusion=structural-first|rrf|none")
      ->group(g);
  g = "Completion cursor";
  c->add_option("--file", r->file, "completion strategies: the file being written (relative path)")->group(g);
  c->add_option("--line", r->line, "cursor line (1-based); the text from the cursor on is treated as absent")->group(g);
  c->add_option("--column", r->column, "cursor column in bytes")->capture_default_str()->group(g);
  c->add_option("--model-file", r->ro.completion.model_path,
                "aligncoder/rlcoder: AlignRetriever model (default: the built-in one)")
      ->group(g);
  c->add_option("--completion", r->completion, "aligncoder: a candidate completion to enhance the query with")
      ->group(g);
  c->add_option("--benchmark-targets", r->benchmark_targets_file,
                "procedural, imports: file of the benchmark's other targets (path::Qual.name a line), never context")
      ->group(g);
  add_model_options(c, r->models);
  out.push_back({c, [r] { return r->run(); }});
}

void add_strategies_command(CLI::App& app, Commands& out) {
  auto* c = app.add_subcommand("strategies", "list retrieval strategies");
  auto so = std::make_shared<OutputOptions>();
  add_output_options(c, *so);
  out.push_back({c, [so] {
                   json arr = json::array();
                   for (const auto& r : retriever_registry()) {
                     const ModelNeeds& n = r.needs;
                     std::string needs = n.llm ? "llm" : "";
                     if (n.hidden) needs += std::string(needs.empty() ? "" : "+") + "hidden states";
                     if (n.embedder) needs += std::string(needs.empty() ? "" : "+") + "embedder";
                     if (n.embedder_optional) needs += std::string(needs.empty() ? "" : "+") + "embedder (optional)";
                     if (so->json)
                       arr.push_back({{"name", r.name}, {"description", r.description}, {"needs", needs}});
                     else
                       fmt::print("{:<22} {}{}\n", r.name, r.description,
                                  needs.empty() ? "" : " [needs " + needs + "]");
                   }
                   if (so->json) print_json(arr);
                   return 0;
                 }});
}

void add_select_command(CLI::App& app, Commands& out) {
  auto s = std::make_shared<SelectCmd>();
  auto* c = app.add_subcommand("select-functions",
                               "ProjAgent 4.1: rank files by target functions and pick context functions");
  add_repo_options(c, s->repo);
  add_output_options(c, s->out);
  c->add_option("--target", s->targets, "a target function path::Qual.name (repeatable)");
  c->add_option("--targets-file", s->targets_file, "file with one target per line");
  c->add_option("--top-files", s->top_files, "files to select")->check(top_k_range())->capture_default_str();
  out.push_back({c, [s] { return s->run(); }});
}

}  // namespace

void add_retrieve_commands(CLI::App& app, Commands& out) {
  add_retrieve_command(app, out);
  add_strategies_command(app, out);
  add_select_command(app, out);
}

}  // namespace repoctx
