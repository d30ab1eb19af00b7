// retrieve, strategies, select-functions: context for a target or a query, by any strategy.
#include <fmt/core.h>

#include <fstream>
#include <iostream>

#include "api/requests.h"
#include "cli/commands.h"
#include "cli/common.h"
#include "cli/field_options.h"
#include "eval/rq2.h"
#include "generate/generator.h"
#include "retrieve/aligncoder/codebase.h"
#include "retrieve/function_selection.h"
#include "retrieve/procedural/pipeline.h"
#include "retrieve/sparse.h"
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
  api::RetrieveParams p;  // the options every surface shares (api::retrieve_fields)
  // The command line's own: research inputs (an oracle completion, a benchmark's other targets, RQ2 pairs) and
  // the trace written to a file.
  std::string trace_path, rq2_pairs_path, completion, benchmark_targets_file;

  int run() {
    const std::string strategy = api::strategy_for(p);
    p.strategy = strategy;
    const RetrieverInfo& info = retriever_info(strategy);  // an unknown name fails before any work
    RetrieverOptions ro = api::retriever_options(p);
    ro.trace_path = trace_path;
    if (plain_sparse_query(strategy)) {
      refresh_index(repo, out);
      if (auto hits = sparse_from_image(db_path_for(repo), p.query, p.k, ro, p.with_text, test_filter()))
        return print_result(result_json(strategy, info, sanitize_utf8(p.query), image_hits_json(*hits)), true);
      repo.no_refresh = true;  // refreshed above; the index has no usable image: through the engine
    }
    auto ranker_loaded = preload_ranker(strategy, ro);  // on the other core while the index opens
    auto eng = open_engine(repo, out);
    ModelSet ms = open_models(models, retriever_needs(strategy, ro));
    RetrievalQuery q = api::retrieval_query(*eng, p);
    if (!completion.empty()) q.drafts = {completion};
    if (!benchmark_targets_file.empty())
      for (const auto& spec : read_target_specs(benchmark_targets_file))
        q.withheld.push_back(eng->resolve_target(spec).entity);
    auto retriever = make_retriever(strategy, *eng, ms.models, ro);
    auto result = api::run_retrieval(*eng, *retriever, q, p);
    if (!rq2_pairs_path.empty()) append_rq2_pairs(rq2_pairs_path, last_rq2_pairs(*retriever));
    const TargetContext* ctx = q.context.get();
    // An empty result says why (procedural: "no grounded context step: ...").
    if (result.hits.empty() && !result.empty_reason.empty()) log_warn("no result: {}", result.empty_reason);
    json results = json::array();
    int rank = 1;
    for (const auto& h : result.hits) results.push_back(hit_json(*eng, h, rank++, p.with_text, ctx));
    json j = result_json(strategy, info, api::searched_text(*eng, q, ro), std::move(results));
    if (q.target) j["target"] = eng->target_name(q.target->entity);
    if (result.hits.empty() && !result.empty_reason.empty()) j["empty_reason"] = result.empty_reason;
    if (!result.plan.empty()) {
      j["plan"] = json::array();
      for (const auto& st : result.plan)
        j["plan"].push_back({{"step", st.id},
                             {"description", sanitize_utf8(st.description)},
                             {"confirmed", st.confirmed},
                             {"results", st.hits.size()}});
    }
    return print_result(j, !ms.session);
  }

 private:
  // A plain-text `sparse` query with nothing else asked: answered from the query image without an engine.
  bool plain_sparse_query(const std::string& strategy) const {
    return strategy == "sparse" && p.target.empty() && p.file.empty() && !p.query.empty() && p.k >= 1 && p.k <= 10000 &&
           completion.empty() && benchmark_targets_file.empty() && rq2_pairs_path.empty();
  }
  std::function<bool(const std::string&)> test_filter() const {
    if (!p.exclude_tests) return {};
    return [](const std::string& path) { return is_test_path(path); };
  }
  static json result_json(const std::string& strategy, const RetrieverInfo& info, const std::string& query,
                          json results) {
    return {{"strategy", strategy}, {"score", info.score}, {"query", query}, {"results", std::move(results)}};
  }
  // The hits as hit_json writes an engine's.
  json image_hits_json(const std::vector<ImageHit>& hits) const {
    json out = json::array();
    int rank = 1;
    for (const auto& h : hits) {
      json j = {{"rank", rank++},
                {"file", h.path},
                {"start_line", h.start_line},
                {"end_line", h.end_line},
                {"score", h.score}};
      j["type"] = h.type == Hit::Type::entity ? "entity" : "snippet";
      if (h.type == Hit::Type::entity) {
        j["qualname"] = h.qualname;
        j["kind"] = kind_name(h.kind);
        j["target"] = h.path + "::" + h.qualname;
      }
      if (p.with_text) j["text"] = h.text;
      out.push_back(std::move(j));
    }
    return out;
  }
  // JSON as it is, or one line per hit (rank, score, location, name, and the text when asked for).
  int print_result(const json& j, bool quick_exit) const {
    if (out.json) {
      print_json(j);
      if (quick_exit) exit_after_output(0);
      return 0;
    }
    const json& hits = j["results"];
    if (!out.quiet) {
      fmt::print("{} results of `{}`{}; score = {}\n", hits.size(), j["strategy"].get<std::string>(),
                 j.contains("target") ? " for " + j["target"].get<std::string>() + " (its body hidden)" : "",
                 j["score"].get<std::string>());
      if (hits.empty()) return 0;
      fmt::print("{:>4}  {:>8}  {}\n", "rank", "score", "location and name");
    }
    for (const auto& h : hits) {
      std::string name = h.contains("qualname") ? h["qualname"].get<std::string>() : h["type"].get<std::string>();
      std::string label = h.contains("label") ? " [" + h["label"].get<std::string>() + "]" : "";
      fmt::print("{:>3}.  {:8.4f}  {}:{}-{}  {}{}\n", h["rank"].get<int>(), h["score"].get<double>(),
                 h["file"].get<std::string>(), h["start_line"].get<int>(), h["end_line"].get<int>(), name, label);
      if (p.with_text) fmt::print("{}\n\n", h.value("text", std::string()));
    }
    if (quick_exit) exit_after_output(0);
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
  // The shared parameters (api::retrieve_fields: the same names, ranges and meanings as HTTP, MCP and Python).
  add_field_options(c, r->p, api::retrieve_fields(), "Retrieval");
  const char* g = "Research inputs";
  c->add_option("--trace", r->trace_path, "procedural, the study's agents: write the JSON trace to this file")
      ->group(g);
  c->add_option("--rq2-pairs", r->rq2_pairs_path,
                "procedural: append (target step, context step, similarity to each seed) pairs (JSONL)")
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
                     std::string needs = r.needs.describe();
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

// Every declared parameter of the request commands, as its JSON Schema (the one HTTP and MCP clients see) plus
// the command, the name and the CLI spelling.
json parameter_rows() {
  json rows = json::array();
  auto add = [&rows](const std::string& command, const auto& fields) {
    json schema = api::params_schema(fields);
    for (const auto& f : fields) {
      json r = schema["properties"][f.name];
      r["command"] = command;
      r["name"] = f.name;
      r["cli"] = api::cli_spelling(f);
      if (!f.cli_note.empty()) r["cli_note"] = f.cli_note;
      rows.push_back(std::move(r));
    }
  };
  add("retrieve", api::retrieve_fields());
  add("localize", api::localize_fields());
  // The strategy parameters inside `params` (retrieve's and localize's; generate's and evaluate's take the
  // generation group and the procedural one), from their tables.
  json params = strategy_parameters();
  for (const auto& r : GenerationParams::catalogue()) params.push_back(r);
  for (json r : params) {
    r["command"] = "params";
    r["cli"] = "--param";
    r["description"] = r["meaning"];
    r.erase("meaning");
    if (r.contains("choices")) {
      r["enum"] = r["choices"];
      r.erase("choices");
    }
    rows.push_back(std::move(r));
  }
  return rows;
}

std::string markdown_cell(const json& v) {
  std::string s;
  if (v.is_string()) {
    s = v.get<std::string>();
  } else if (v.is_array()) {
    for (const auto& x : v) s += (s.empty() ? "" : ", ") + markdown_cell(x);
  } else if (v.is_number_float()) {
    s = fmt::format("{}", v.get<double>());  // 1e+09, 10000, 0.75: the shortest exact form
  } else {
    s = v.dump();
  }
  std::string out;
  for (char ch : s) out += ch == '|' ? std::string("\\|") : std::string(1, ch);
  return out;
}

// docs/PARAMETERS.md: one table per command, made from the declarations (a test compares the file with it).
std::string parameters_markdown(const json& rows) {
  std::string md =
      "# Parameters\n\nMade by `repoctx parameters --markdown` from the one declaration of each parameter "
      "(`src/api/json.cpp`): the CLI's options, the HTTP and MCP input schemas and the Python keyword arguments "
      "all come from it, with these names, types, defaults, ranges and meanings (test: `parameter_surfaces`). "
      "On the CLI a name is spelled `--name` with dashes unless the CLI column says otherwise. The strategy "
      "parameters inside `params` (`--param NAME=VALUE` on the CLI) are the last table, each with the source of "
      "its default (a paper's section, or repoctx's own choice: docs/DEVIATIONS.md); each trace lists their "
      "values in \"params\". The generation group is taken by `generate` and `evaluate` (their `--param`, "
      "HTTP `/v1/generate`'s and Python's `generate(params=...)`), beside the procedural group.\n";
  std::string command;
  for (const auto& r : rows) {
    if (r["command"] == "params") {
      if (command != "params") {
        command = "params";
        md +=
            "\n## params (strategy parameters)\n\n| name | group | type | default | values | source | meaning "
            "|\n|---|---|---|---|---|---|---|\n";
      }
      std::string values = r.contains("enum") ? markdown_cell(r["enum"]) : "";
      if (r.contains("minimum") || r.contains("maximum"))
        values = markdown_cell(r.value("minimum", json(""))) + " to " + markdown_cell(r.value("maximum", json("")));
      std::string def = markdown_cell(r["default"]);
      md += fmt::format("| `{}` | {} | {} | {} | {} | {} | {} |\n", r["name"].get<std::string>(),
                        markdown_cell(r["group"]), markdown_cell(r["type"]), def.empty() ? "" : "`" + def + "`", values,
                        markdown_cell(r["source"]), markdown_cell(r["description"]));
      continue;
    }
    if (r["command"] != command) {
      command = r["command"].get<std::string>();
      md += "\n## " + command + "\n\n| name | type | default | values | CLI | meaning |\n|---|---|---|---|---|---|\n";
    }
    std::string values;
    if (r.contains("enum")) values = markdown_cell(r["enum"]);
    if (r.contains("minimum") || r.contains("maximum"))
      values = markdown_cell(r.value("minimum", json(""))) + " to " + markdown_cell(r.value("maximum", json("")));
    std::string cli =
        r["cli"].get<std::string>().empty() ? r.value("cli_note", "") : "`" + r["cli"].get<std::string>() + "`";
    md += fmt::format("| `{}` | {} | {} | {} | {} | {} |\n", r["name"].get<std::string>(), markdown_cell(r["type"]),
                      r.contains("default") ? "`" + markdown_cell(r["default"]) + "`" : "", values, markdown_cell(cli),
                      markdown_cell(r["description"]));
  }
  return md;
}

void add_parameters_command(CLI::App& app, Commands& out) {
  auto o = std::make_shared<std::pair<OutputOptions, bool>>();
  auto* c = app.add_subcommand(
      "parameters",
      "list the request parameters of retrieve and localize, and every strategy and generation parameter");
  add_output_options(c, o->first);
  c->add_flag("--markdown", o->second, "the table of docs/PARAMETERS.md");
  out.push_back({c, [o] {
                   json rows = parameter_rows();
                   if (o->first.json) {
                     print_json(rows);
                   } else if (o->second) {
                     fmt::print("{}", parameters_markdown(rows));
                   } else {
                     for (const auto& r : rows)
                       fmt::print("{:<9} {:<17} {:<8} {}\n", r["command"].get<std::string>(),
                                  r["name"].get<std::string>(), r["type"].get<std::string>(),
                                  r["description"].get<std::string>());
                   }
                   return 0;
                 }});
}

void add_retrieve_commands(CLI::App& app, Commands& out) {
  add_retrieve_command(app, out);
  add_strategies_command(app, out);
  add_parameters_command(app, out);
  add_select_command(app, out);
}

}  // namespace repoctx
