#include "bench/completion.h"

#include <algorithm>
#include <chrono>
#include <thread>

#include <fmt/format.h>

#include "eval/aligncoder_gradient.h"
#include "eval/completion_tasks.h"
#include "retrieve/retriever.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/memory.h"
#include "util/paths.h"
#include "util/subprocess.h"

namespace repoctx {

using nlohmann::json;

namespace {
using Clock = std::chrono::steady_clock;
double ms_since(Clock::time_point t) {
  return std::chrono::duration<double, std::milli>(Clock::now() - t).count();
}
double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}
double p90(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, v.size() * 9 / 10)];
}

json bench_tasks_and_latency(const Engine& e, const std::string& root, const CompletionBenchOptions& o,
                             std::vector<CompletionTask>& tasks) {
  CompletionBuildOptions bo;
  bo.kind = "both";
  bo.max_tasks = o.tasks;
  auto t0 = Clock::now();
  tasks = build_completion_tasks(e, root, bo);
  double cold_ms = ms_since(t0);
  t0 = Clock::now();
  tasks = build_completion_tasks(e, root, bo);  // references and contents now loaded
  double warm_ms = ms_since(t0);
  RetrieverOptions ro;
  ro.completion.candidates = "none";
  ro.completion.dependency_snippets = 1;
  ro.completion.model_path = o.model_path;
  auto fine = make_retriever("aligncoder", e, {}, ro);
  auto deps = make_retriever("cursor-deps", e, {}, ro);
  std::vector<double> ctx_ms, coarse_ms, fine_ms, deps_ms;
  for (const auto& t : tasks) {
    throw_if_interrupted();
    auto f = e.view().file_by_path(t.file);
    auto t1 = Clock::now();
    auto ctx = make_cursor_context(e, Cursor{*f, t.line, t.column});
    ctx_ms.push_back(ms_since(t1));
    std::string window = query_window(ctx->unfinished, ro.completion.query_lines);
    t1 = Clock::now();
    auto pool = coarse_retrieve(e, *ctx, window, true, ro.completion.pool);
    coarse_ms.push_back(ms_since(t1));
    RetrievalQuery q;
    q.cursor = ctx;
    q.top_k = 10;
    t1 = Clock::now();
    fine->retrieve(q);
    fine_ms.push_back(ms_since(t1));
    // The default for a cursor, as `retrieve --file F --line N` runs it: the cursor's context, then cursor-deps.
    t1 = Clock::now();
    RetrievalQuery dq;
    dq.cursor = make_cursor_context(e, Cursor{*f, t.line, t.column});
    dq.top_k = 10;
    deps->retrieve(dq);
    deps_ms.push_back(ms_since(t1));
  }
  double n = static_cast<double>(tasks.size());
  return {{"tasks", tasks.size()},
          {"build_cold_s", cold_ms / 1000},
          {"build_warm_s", warm_ms / 1000},
          {"tasks_per_s_cold", cold_ms > 0 ? 1000 * n / cold_ms : 0},
          {"tasks_per_s_warm", warm_ms > 0 ? 1000 * n / warm_ms : 0},
          {"cursor_context_p50_ms", median(ctx_ms)},
          {"coarse_bm25_p50_ms", median(coarse_ms)},
          {"coarse_queries_per_s", median(coarse_ms) > 0 ? 1000 / median(coarse_ms) : 0},
          {"fine_p50_ms", median(fine_ms)},
          {"fine_p90_ms", p90(fine_ms)},
          {"fine_over_coarse", median(coarse_ms) > 0 ? median(fine_ms) / median(coarse_ms) : 0},
          {"cursor_deps_p50_ms", median(deps_ms)},
          {"cursor_deps_p90_ms", p90(deps_ms)}};
}

// The default cursor retrieval from the command line, cold: a new process per query (`retrieve --file F --line
// N --no-refresh`, this binary), over the first tasks; beside it, BM25's coarse query in process, as the
// in-process reference of the same run.
json bench_cold_cli(const std::string& root, const std::string& db, const std::vector<CompletionTask>& tasks,
                    int runs) {
  std::string self = exe_dir() + "/repoctx";
  std::vector<double> wall, cpu;
  for (size_t i = 0; i < tasks.size() && static_cast<int>(wall.size()) < runs; ++i) {
    throw_if_interrupted("nothing is kept");
    const auto& t = tasks[i];
    std::vector<std::string> argv = {self,
                                     "retrieve",
                                     root,
                                     "--file",
                                     t.file,
                                     "--line",
                                     std::to_string(t.line),
                                     "--column",
                                     std::to_string(t.column),
                                     "--no-refresh",
                                     "-k",
                                     "10",
                                     "-q"};
    if (!db.empty()) argv.insert(argv.begin() + 3, {"--db", db});
    auto r = run_process(argv);
    if (r.exit_code != 0)
      throw Error(ExitCode::failure, fmt::format("retrieve --file {} --line {} exited {} in the cold benchmark", t.file,
                                                 t.line, r.exit_code));
    if (i == 0) continue;  // one untimed run first: the page cache
    wall.push_back(r.seconds * 1000);
    cpu.push_back(r.cpu_seconds * 1000);
  }
  return {
      {"runs", wall.size()}, {"wall_p50_ms", median(wall)}, {"wall_p90_ms", p90(wall)}, {"cpu_p50_ms", median(cpu)}};
}

}  // namespace

json bench_completion(const Engine& e, const std::string& root, const std::vector<TrainingRepo>& train,
                      const CompletionBenchOptions& o) {
  json rep;
  rep["repository"] = root;
  rep["hardware_threads"] = std::thread::hardware_concurrency();
  std::vector<CompletionTask> tasks;
  rep["retrieval"] = bench_tasks_and_latency(e, root, o, tasks);
  rep["cold_cli"] = bench_cold_cli(root, o.db, tasks, o.cold_runs);
  AlignTrainOptions to = o.train;
  to.epochs = 1;
  double rss_before = current_rss_mb();
  auto t0 = Clock::now();
  int skipped = 0;
  auto samples = build_samples(train, to, {}, 0, &skipped);
  double build_s = ms_since(t0) / 1000;
  AlignEncoder enc(to.encoder);
  enc.set_vocabulary(frequent_tokens(train, to.encoder.vocab));
  AdamState adam;
  t0 = Clock::now();
  EpochReport ep = train_one_epoch(enc, adam, samples, to.batch, 0);
  double train_s = ms_since(t0) / 1000;
  json names = json::array();
  for (const auto& r : train) names.push_back(r.name);
  rep["training"] = {{"repos", names},
                     {"samples_requested", to.samples_per_epoch},
                     {"samples", samples.size()},
                     {"skipped", skipped},
                     {"threads", to.threads},
                     {"build_s", build_s},
                     {"train_s", train_s},
                     {"epoch_s", build_s + train_s},
                     {"train_over_build", build_s > 0 ? train_s / build_s : 0},
                     {"loss", ep.loss},
                     {"rss_before_mb", rss_before},
                     {"peak_rss_mb", peak_rss_mb()}};
  return rep;
}

std::string completion_bench_text(const json& r) {
  const json& q = r["retrieval"];
  const json& t = r["training"];
  std::string s = fmt::format("repository {}\n", r["repository"].get<std::string>());
  s += fmt::format("tasks built: {} in {:.2f} s cold ({:.0f}/s), {:.2f} s warm ({:.0f}/s)\n", q["tasks"].get<int>(),
                   q["build_cold_s"].get<double>(), q["tasks_per_s_cold"].get<double>(),
                   q["build_warm_s"].get<double>(), q["tasks_per_s_warm"].get<double>());
  s += fmt::format(
      "per query p50: cursor context {:.2f} ms, coarse BM25 {:.2f} ms, fine (BM25 pool + AlignRetriever) "
      "{:.2f} ms (p90 {:.2f} ms) = {:.2f}x the coarse query\n",
      q["cursor_context_p50_ms"].get<double>(), q["coarse_bm25_p50_ms"].get<double>(), q["fine_p50_ms"].get<double>(),
      q["fine_p90_ms"].get<double>(), q["fine_over_coarse"].get<double>());
  const json& c = r["cold_cli"];
  s += fmt::format(
      "default cursor retrieval (context + cursor-deps), warm: p50 {:.2f} ms, p90 {:.2f} ms; cold CLI "
      "(`retrieve --file F --line N --no-refresh`, {} processes): wall p50 {:.0f} ms, p90 {:.0f} ms, CPU p50 {:.0f} "
      "ms\n",
      q["cursor_deps_p50_ms"].get<double>(), q["cursor_deps_p90_ms"].get<double>(), c["runs"].get<int>(),
      c["wall_p50_ms"].get<double>(), c["wall_p90_ms"].get<double>(), c["cpu_p50_ms"].get<double>());
  s += fmt::format(
      "training epoch: {} samples ({} skipped) on {} thread(s): build {:.1f} s + train {:.1f} s = {:.1f} s "
      "(train/build {:.2f}); RSS {:.0f} MB before, peak {:.0f} MB\n",
      t["samples"].get<int>(), t["skipped"].get<int>(), t["threads"].get<int>(), t["build_s"].get<double>(),
      t["train_s"].get<double>(), t["epoch_s"].get<double>(), t["train_over_build"].get<double>(),
      t["rss_before_mb"].get<double>(), t["peak_rss_mb"].get<double>());
  return s;
}

}  // namespace repoctx
