// generate, check-bodies: ProjAgent 4.3-4.4 generation for one target, and the static checks measured on
// a repository's real bodies.
#include <fmt/core.h>

#include <cstdlib>
#include <iostream>

#include "cli/commands.h"
#include "cli/common.h"
#include "generate/generator.h"
#include "generate/static_checks.h"
#include "util/error.h"
#include "util/log.h"
#include "util/text.h"

using nlohmann::json;

namespace repoctx {
namespace {

// The generated function, the patched file or its diff on stdout; the repository is never written.
struct GenerateCmd {
  RepoOptions repo;
  OutputOptions out;
  ModelOptions models;
  GenerationParams gp;
  std::string target, output = "function", trace, benchmark_targets_file;
  std::vector<std::string> params;

  int run() {
    apply_params(gp, params);
    check_generation_method(gp.method);
    if (output != "function" && output != "file" && output != "diff" && output != "json")
      throw Error(ExitCode::usage, "--output must be function, file, diff or json, not '" + output + "'");
    if (out.json) output = "json";
    auto eng = open_engine(repo, out);
    auto t = eng->resolve_target(target);
    if (!benchmark_targets_file.empty())
      for (const auto& spec : read_target_specs(benchmark_targets_file))
        gp.withheld.push_back(eng->resolve_target(spec).entity);
    ModelSet ms = open_models(models, generation_method_needs(gp.method));
    if (gp.python.empty() && !std::getenv("REPOCTX_PYTHON") && ms.session) gp.python = ms.session->config().python;
    auto res = generate_function(*eng, ms.models, t, gp);
    if (!trace.empty()) write_file(trace, res.trace.dump(2, ' ', false, json::error_handler_t::replace) + "\n");
    if (output == "json") {
      json j = {{"target", eng->target_name(t.entity)},
                {"method", res.method},
                {"function", res.function_text},
                {"diff", res.diff},
                {"rounds", res.rounds},
                {"llm_usage", res.usage.to_json()}};
      j["findings"] = json::array();
      for (const auto& f : res.findings) j["findings"].push_back(f.to_json());
      print_json(j);
    } else if (output == "file") {
      std::cout << res.patched_file;
    } else if (output == "diff") {
      std::cout << res.diff;
    } else {
      std::cout << res.function_text;
    }
    if (!out.quiet)
      log_info("{}: {} refinement round(s), {} finding(s) left, {} LLM call(s) ({} cached)", res.method, res.rounds,
               res.findings.size(), res.usage.total().calls, res.usage.total().cached);
    return 0;
  }
};

struct CheckBodiesCmd {
  RepoOptions repo;
  OutputOptions out;
  int max = 0, inject = 0;
  bool show_misses = false;
  CheckOptions check;

  int detection(const Engine& eng) const {
    auto d = injected_error_detection(eng, inject, check);
    json j = json::object();
    for (const auto& [k, v] : d.by_kind) {
      j[k] = {{"caught", v.first}, {"injected", v.second}, {"share", v.second ? double(v.first) / v.second : 0.0}};
      if (!out.json)
        fmt::print("{:<20} {:>6} / {:<6} caught ({:.1f}%)\n", k, v.first, v.second,
                   v.second ? 100.0 * v.first / v.second : 0.0);
    }
    if (show_misses)
      for (const auto& [kind, fn] : d.misses) {
        if (out.json)
          j["misses"].push_back({{"kind", kind}, {"function", fn}});
        else
          fmt::print("missed {}: {}\n", kind, fn);
      }
    if (out.json)
      print_json(j);
    else
      fmt::print("({:.1f} s)\n", d.seconds);
    return 0;
  }

  int run() const {
    auto eng = open_engine(repo, out);
    if (inject > 0) return detection(*eng);
    auto rep = check_all_real_bodies(*eng, max, check);
    if (out.json) {
      json f = json::array();
      for (const auto& [fn, x] : rep.findings) f.push_back({{"function", fn}, {"finding", x.to_json()}});
      print_json({{"functions", rep.functions},
                  {"files", rep.files},
                  {"seconds", rep.seconds},
                  {"checked_argument_counts", rep.coverage.argument_counts},
                  {"checked_typed_receiver_calls", rep.coverage.typed_receiver_calls},
                  {"findings", f}});
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
};

}  // namespace

void add_generate_commands(CLI::App& app, Commands& out) {
  auto g = std::make_shared<GenerateCmd>();
  auto* c = app.add_subcommand(
      "generate",
      "ProjAgent 4.3-4.4: write a function's body (hidden) with retrieved context and static-check feedback");
  add_repo_options(c, g->repo);
  add_output_options(c, g->out);
  c->add_option("--target", g->target, "path/to/file.py::Qualified.name")->required();
  c->add_option("-m,--method", g->gp.method,
                "projagent, projagent-no-procedural, projagent-no-semantic, projagent-no-feedback, sparse, dense, "
                "same-file")
      ->capture_default_str();
  c->add_option("--output", g->output, "function, file (the patched file), diff or json")
      ->capture_default_str()
      ->group("Output");
  c->add_option("--trace", g->trace, "write the JSON trace (retrieval, prompt contexts, every round) here")
      ->group("Output");
  c->add_option("--max-tokens", g->gp.max_tokens, "output tokens per generation (greedy)")->capture_default_str();
  c->add_option("--max-rounds", g->gp.max_rounds, "refinement rounds of the feedback loop")->capture_default_str();
  c->add_option("--budget", g->gp.prompt_budget_tokens, "estimated tokens of context in the prompt")
      ->capture_default_str();
  c->add_option("--param", g->params,
                "generation (semantic_top, baseline_top, context_cut_chars) or procedural retrieval NAME=VALUE "
                "(`repoctx parameters`)");
  c->add_option("--benchmark-targets", g->benchmark_targets_file,
                "file of the benchmark's other targets (path::Qual.name a line): never context of projagent");
  c->add_option("--python", g->gp.python,
                "python3 whose compile() is the syntax check (default: $REPOCTX_PYTHON, the config's \"python\", "
                "python3 on PATH; none = tree-sitter)");
  add_model_options(c, g->models);
  out.push_back({c, [g] { return g->run(); }});

  auto cb = std::make_shared<CheckBodiesCmd>();
  c = app.add_subcommand("check-bodies",
                         "static checks (ProjAgent 4.4) on every real function body: false alarms (should be none)");
  add_repo_options(c, cb->repo);
  add_output_options(c, cb->out);
  c->add_option("--max", cb->max, "check at most this many functions (0 = all)");
  c->add_option("--inject", cb->inject,
                "instead: inject errors into every N-th real body and report the share caught per kind");
  c->add_flag("--show-misses", cb->show_misses,
              "with --inject: list the functions where an injected error was not caught");
  c->add_option("--python", cb->check.python,
                "python3 whose compile() is the syntax check (default: $REPOCTX_PYTHON, python3 on PATH; none = "
                "tree-sitter)");
  out.push_back({c, [cb] { return cb->run(); }});
}

}  // namespace repoctx
