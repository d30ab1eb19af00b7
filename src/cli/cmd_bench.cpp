// bench, bench-agent-tools, bench-llm, bench-projection: speed and memory, each measured against a
// reference in the same run (docs/BENCHMARKS.md).
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>

#include "bench/agent_tools.h"
#include "bench/index_query.h"
#include "bench/sandbox.h"
#include "bench/syntax.h"
#ifdef REPOCTX_WITH_LLAMA
#include "bench/llm.h"
#include "bench/projection.h"
#endif
#include "cli/commands.h"
#include "cli/common.h"
#include "util/error.h"
#include "util/paths.h"

namespace fs = std::filesystem;

namespace repoctx {
namespace {

// The JSON report to stdout (--json) or Markdown, and optionally to a file.
int report(const nlohmann::json& r, const OutputOptions& out, const std::string& path, const std::string& markdown) {
  if (!path.empty()) write_file(path, r.dump(2) + "\n");
  if (out.json)
    print_json(r);
  else
    std::cout << markdown;
  return 0;
}

void add_index_bench(CLI::App& app, Commands& out) {
  struct Bench {
    OutputOptions out;
    BenchOptions bo;
    bool no_reference = false;
    std::string out_path;
  };
  auto b = std::make_shared<Bench>();
  auto* c = app.add_subcommand("bench", "index and query speed against the Python reference, in the same run");
  c->add_option("repo", b->bo.repo, "repository to benchmark on")->required();
  c->add_option("--reference", b->bo.reference,
                "reference implementation (default: share/repoctx/reference/ref_index.py beside the binary)");
  c->add_flag("--no-reference", b->no_reference, "skip the reference implementation");
  c->add_option("--queries", b->bo.queries, "BM25 queries")->capture_default_str();
  c->add_option("--repeat", b->bo.repeat, "full index runs (median reported)")->capture_default_str();
  c->add_option("--threads", b->bo.threads, "parser threads (0 = all cores)")->capture_default_str();
  c->add_option("--baseline", b->bo.baseline_exe,
                "another repoctx binary (e.g. a build of main) whose full index is timed in the same runs")
      ->check(CLI::ExistingFile);
  c->add_option("--out", b->out_path, "also write the JSON report to this file");
  add_output_options(c, b->out);
  out.push_back({c, [b] {
                   auto& bo = b->bo;
                   bo.self_exe = self_exe();
                   if (bo.reference.empty() && !b->no_reference) bo.reference = data_file("reference/ref_index.py");
                   if (b->no_reference) bo.reference.clear();
                   if (!bo.reference.empty() && !fs::exists(bo.reference))
                     throw Error(ExitCode::not_found, "reference implementation '" + bo.reference +
                                                          "' not found (pass --reference or --no-reference)");
                   if (!fs::is_directory(bo.repo))
                     throw Error(ExitCode::not_found, "repository path '" + bo.repo + "' does not exist");
                   auto r = run_bench(bo);
                   return report(r, b->out, b->out_path, bench_markdown(r));
                 }});
}

void add_agent_tools_bench(CLI::App& app, Commands& out) {
  struct Bench {
    RepoOptions repo;
    OutputOptions out;
    BenchToolsOptions bto;
  };
  auto b = std::make_shared<Bench>();
  auto* c = app.add_subcommand("bench-agent-tools",
                               "latency of the seed-finding agent's repository tools; grep vs a Python reference");
  add_repo_options(c, b->repo);
  add_output_options(c, b->out);
  c->add_option("--calls", b->bto.calls, "calls per tool")->capture_default_str();
  out.push_back({c, [b] {
                   auto eng = open_engine(b->repo, b->out);
                   b->bto.reference_script = data_file("reference/ref_grep.py");
                   auto r = run_bench_agent_tools(*eng, b->bto);
                   return report(r, b->out, "", bench_agent_tools_markdown(r));
                 }});
}

// ---- bench-sandbox: the sandbox's cost per test run, sandboxed vs unconfined in the same run.
void add_sandbox_bench(CLI::App& app, Commands& out) {
  struct Bench {
    OutputOptions out;
    BenchSandboxOptions o;
    std::string out_path;
    std::map<std::string, std::unique_ptr<Engine>> engines;
  };
  auto b = std::make_shared<Bench>();
  auto* c = app.add_subcommand("bench-sandbox",
                               "test-run time sandboxed (bubblewrap) vs unconfined, alternating, same tasks, same run");
  c->add_option("tasks", b->o.tasks_path, "tasks (as for evaluate); each task's gold body is tested")->required();
  c->add_option("--repeat", b->o.repeat, "rounds per task (median reported)")->capture_default_str();
  c->add_option("--timeout", b->o.tests.limits.timeout_s, "seconds per test run")->capture_default_str();
  c->add_option("--out", b->out_path, "also write the JSON report here");
  add_output_options(c, b->out);
  out.push_back({c, [b] {
                   auto engine_for = [b](const std::string& repo) -> Engine& {
                     auto& e = b->engines[repo];
                     if (!e) {
                       RepoOptions r;
                       r.repo = repo;
                       e = open_engine(r, b->out);
                     }
                     return *e;
                   };
                   auto r = run_bench_sandbox(b->o, engine_for);
                   return report(r, b->out, b->out_path, bench_sandbox_markdown(r));
                 }});
}

// bench-syntax: the syntax check's cost per candidate.
void add_syntax_bench(CLI::App& app, Commands& out) {
  struct Bench {
    RepoOptions repo;
    OutputOptions out;
    BenchSyntaxOptions o;
  };
  auto b = std::make_shared<Bench>();
  auto* c = app.add_subcommand(
      "bench-syntax",
      "the feedback loop's syntax check per candidate: python3 helper vs a process each vs tree-sitter");
  add_repo_options(c, b->repo);
  add_output_options(c, b->out);
  c->add_option("--candidates", b->o.candidates, "functions whose files are checked")->capture_default_str();
  c->add_option("--python", b->o.python, "python3 to compile with (default: $REPOCTX_PYTHON, python3 on PATH)");
  out.push_back({c, [b] {
                   auto eng = open_engine(b->repo, b->out);
                   auto r = run_bench_syntax(*eng, b->o);
                   return report(r, b->out, "", bench_syntax_markdown(r));
                 }});
}

#ifdef REPOCTX_WITH_LLAMA
void add_model_benches(CLI::App& app, Commands& out) {
  struct BenchLlm {
    OutputOptions out;
    BenchLlmOptions o;
    bool small = false, no_server = false;
    std::string out_path;
  };
  auto l = std::make_shared<BenchLlm>();
  auto* c = app.add_subcommand("bench-llm", "LLM runtime: tokens/s, hidden-state overhead, openai backend throughput");
  c->add_option("--threads", l->o.threads, "llama threads (0 = all cores)");
  c->add_option("--repeat", l->o.repeat, "repetitions (median)")->capture_default_str();
  c->add_option("--gen-tokens", l->o.gen_tokens, "tokens generated per run")->capture_default_str();
  c->add_flag("--tiny-only", l->small, "skip the Qwen2.5-0.5B-shaped model");
  c->add_flag("--no-server", l->no_server, "skip the llama-server throughput runs");
  c->add_option("--concurrency", l->o.concurrency, "openai backend concurrencies")->capture_default_str();
  c->add_option("--out", l->out_path, "also write the JSON report here");
  add_output_options(c, l->out);
  out.push_back({c, [l] {
                   l->o.large = !l->small;
                   if (!l->no_server) {
                     l->o.server_bin = helper_program("llama-server");
                     if (l->o.server_bin.empty())
                       throw Error(ExitCode::not_found,
                                   "llama-server is not installed beside repoctx (libexec/repoctx/llama-server): "
                                   "pass --no-server, or set REPOCTX_LIBEXEC_DIR");
                   }
                   auto r = run_bench_llm(l->o);
                   return report(r, l->out, l->out_path, bench_llm_markdown(r));
                 }});

  struct BenchProjection {
    OutputOptions out;
    BenchProjectionOptions o;
    bool small = false;
    std::string out_path, internal;
  };
  auto p = std::make_shared<BenchProjection>();
  c = app.add_subcommand("bench-projection",
                         "subspace computation cost, similarity search throughput vs memory bandwidth, HNSW recall");
  c->add_flag("--no-14b", p->small, "skip the 152064 x 5120 matrix");
  c->add_option("--vectors", p->o.vectors, "store sizes")->capture_default_str();
  c->add_option("--widths", p->o.widths, "vector widths")->capture_default_str();
  c->add_option("--threads", p->o.threads, "search threads (0 = all cores)");
  c->add_option("--out", p->out_path, "also write the JSON report here");
  c->add_option("--internal-subspace", p->internal)->group("");  // a child process measuring one subspace
  add_output_options(c, p->out);
  out.push_back({c, [p] {
                   if (!p->internal.empty()) {
                     std::cout << internal_subspace(p->internal).dump() << "\n";
                     return 0;
                   }
                   p->o.large = !p->small;
                   p->o.self_exe = self_exe();
                   auto r = run_bench_projection(p->o);
                   return report(r, p->out, p->out_path, bench_projection_markdown(r));
                 }});
}
#endif

}  // namespace

void add_bench_commands(CLI::App& app, Commands& out) {
  add_index_bench(app, out);
  add_agent_tools_bench(app, out);
  add_sandbox_bench(app, out);
  add_syntax_bench(app, out);
#ifdef REPOCTX_WITH_LLAMA
  add_model_benches(app, out);
#endif
}

}  // namespace repoctx
