// `repoctx bench-projection`: costs of the procedural-similarity engine.
//  1. Reasoning-subspace computation (W^T W over row blocks + symmetric eigen-solve) for random f16 W
//     shaped like Qwen2.5-0.5B (151936 x 896) and Qwen2.5-Coder-14B (152064 x 5120), each in a child
//     process so that its peak RSS is its own; W itself would be 0.5 GB / 3.1 GB in float32.
//  2. Similarity search throughput of the exact flat store for 100k and 1M vectors at the subspace width,
//     as vectors/s and GB/s, against this machine's memory read bandwidth measured in the same run.
//  3. The approximate HNSW store on 100k vectors: build time, queries/s and recall@10 against flat.
#include "bench/projection.h"

#include <fcntl.h>
#include <fmt/core.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>
#include <thread>

#include "llm/gguf_matrix.h"
#include "projection/subspace.h"
#include "projection/vector_store.h"
#include "util/error.h"
#include "util/log.h"
#include "util/memory.h"
#include "util/temp_dir.h"

extern char** environ;
namespace fs = std::filesystem;
using nlohmann::json;

namespace repoctx {
namespace {

double seconds_now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

// Read bandwidth: every thread sums its share of a 1 GiB buffer (best of 3).
double memory_read_gbps(int threads) {
  const size_t n = (1ull << 30) / sizeof(float);
  std::vector<float> buf(n, 1.0f);
  double best = 0;
  for (int rep = 0; rep < 3; ++rep) {
    std::vector<double> sums(static_cast<size_t>(threads));
    double t0 = seconds_now();
    std::vector<std::thread> ts;
    for (int t = 0; t < threads; ++t)
      ts.emplace_back([&, t] {
        size_t a = n * static_cast<size_t>(t) / static_cast<size_t>(threads),
               b = n * static_cast<size_t>(t + 1) / static_cast<size_t>(threads);
        // dot(x, ones) reads x once with the same kernel the flat store uses.
        static thread_local std::vector<float> ones(4096, 1.0f);
        double s = 0;
        for (size_t i = a; i < b; i += 4096)
          s += dot(buf.data() + i, ones.data(), static_cast<int>(std::min<size_t>(4096, b - i)));
        sums[static_cast<size_t>(t)] = s;
      });
    for (auto& t : ts) t.join();
    double dt = seconds_now() - t0;
    best = std::max(best, static_cast<double>(n * sizeof(float)) / dt / 1e9);
    if (sums[0] == -1) best = 0;  // keep the sums alive
  }
  return best;
}

json child_subspace(const std::string& self, const std::string& gguf) {
  std::string out = gguf + ".json";
  std::vector<std::string> args = {self, "bench-projection", "--internal-subspace", gguf};
  std::vector<char*> argv;
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  pid_t pid;
  double t0 = seconds_now();
  if (posix_spawn(&pid, argv[0], &fa, nullptr, argv.data(), environ) != 0)
    throw Error(ExitCode::failure, "cannot re-run " + self);
  posix_spawn_file_actions_destroy(&fa);
  int st = 0;
  struct rusage ru {};
  wait4(pid, &st, 0, &ru);
  if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) throw Error(ExitCode::failure, "subspace benchmark child failed");
  std::ifstream in(out);
  json j = json::parse(in);
  j["wall_s"] = seconds_now() - t0;
  return j;
}

}  // namespace

json internal_subspace(const std::string& gguf) {
  auto info = gguf_unembedding_info(gguf);
  double t0 = seconds_now();
  std::vector<double> ev, vecs;
  gram_eigen(
      [&](const std::function<void(int64_t, int64_t, const float*)>& sink) { gguf_read_rows(gguf, info, 2048, sink); },
      info.cols, ev, vecs);
  std::reverse(ev.begin(), ev.end());  // decreasing
  double total = 0, acc = 0;
  for (double e : ev) total += e;
  int k = static_cast<int>(ev.size());
  for (size_t i = 0; i < ev.size(); ++i) {
    acc += ev[i];
    if (acc / total >= 0.98) {
      k = static_cast<int>(i) + 1;
      break;
    }
  }
  // The child's own high-water mark: getrusage and wait4 carry the parent's peak across exec.
  return {{"rows", info.rows},
          {"d", info.cols},
          {"type", info.type},
          {"seconds", seconds_now() - t0},
          {"k", k},
          {"peak_rss_mb", peak_rss_mb()},
          {"float32_w_mb", static_cast<double>(info.rows) * static_cast<double>(info.cols) * 4 / 1048576.0}};
}

namespace {

// 1. Subspace computation: a random f16 W per shape, each solved in a child process.
json bench_subspace(const BenchProjectionOptions& o, const fs::path& tmp) {
  struct Shape {
    const char* name;
    int64_t rows, cols;
  };
  std::vector<Shape> shapes = {{"qwen2.5-0.5b", 151936, 896}};
  if (o.large) shapes.push_back({"qwen2.5-coder-14b", 152064, 5120});
  json sub = json::array();
  for (const auto& sh : shapes) {
    std::string path = (tmp / (std::string(sh.name) + ".gguf")).string();
    log_info("bench-projection: writing a random f16 W {} x {} ({})", sh.rows, sh.cols, sh.name);
    gguf_write_random_matrix(path, "output.weight", sh.rows, sh.cols, true, 1);
    json j = child_subspace(o.self_exe, path);
    j["shape"] = sh.name;
    sub.push_back(j);
    fs::remove(path);
  }
  return sub;
}

// 2. Flat search throughput against memory bandwidth `bw`; the vectors and queries drawn from `nd` and `rng`.
json bench_flat_search(const BenchProjectionOptions& o, double bw, std::mt19937_64& rng,
                       std::normal_distribution<float>& nd) {
  json search = json::array();
  for (int width : o.widths) {
    for (size_t n : o.vectors) {
      log_info("bench-projection: flat search, {} vectors x {} dims", n, width);
      auto store = make_vector_store("flat", width);
      store->reserve(n);
      std::vector<float> v(static_cast<size_t>(width));
      for (size_t i = 0; i < n; ++i) {
        for (auto& x : v) x = nd(rng);
        store->add(static_cast<int64_t>(i), v.data());
      }
      std::vector<std::vector<float>> qs(20, std::vector<float>(static_cast<size_t>(width)));
      for (auto& q : qs)
        for (auto& x : q) x = nd(rng);
      store->search(qs[0].data(), 20);  // warm
      double t0 = seconds_now();
      for (const auto& q : qs) store->search(q.data(), 20, 0.75f);
      double per = (seconds_now() - t0) / static_cast<double>(qs.size());
      double gbps = static_cast<double>(n) * width * sizeof(float) / per / 1e9;
      search.push_back({{"vectors", n},
                        {"dims", width},
                        {"ms_per_query", per * 1000},
                        {"vectors_per_s", n / per},
                        {"gbps", gbps},
                        {"fraction_of_bandwidth", gbps / bw}});
    }
  }
  return search;
}

// 3. HNSW. Uniform random vectors in 256 dimensions have no neighbourhood structure (the worst case
// for any graph index); steps cluster, so the data here is a mixture of 500 Gaussian clusters.
json bench_hnsw(const BenchProjectionOptions& o, std::mt19937_64& rng, std::normal_distribution<float>& nd) {
  const size_t n = o.hnsw_vectors;
  const int width = o.widths.back();
  log_info("bench-projection: hnsw on {} clustered vectors x {} dims", n, width);
  auto flat = make_vector_store("flat", width);
  auto hnsw = make_vector_store("hnsw", width);
  std::vector<std::vector<float>> centres(500, std::vector<float>(static_cast<size_t>(width)));
  for (auto& c : centres)
    for (auto& x : c) x = nd(rng);
  std::vector<std::vector<float>> data(n, std::vector<float>(static_cast<size_t>(width)));
  for (size_t i = 0; i < n; ++i)
    for (size_t j = 0; j < data[i].size(); ++j) data[i][j] = centres[i % centres.size()][j] + 0.5f * nd(rng);
  for (size_t i = 0; i < n; ++i) flat->add(static_cast<int64_t>(i), data[i].data());
  double t0 = seconds_now();
  for (size_t i = 0; i < n; ++i) hnsw->add(static_cast<int64_t>(i), data[i].data());
  double build = seconds_now() - t0;
  double recall = 0, t_flat = 0, t_hnsw = 0;
  const int nq = 200;
  for (int q = 0; q < nq; ++q) {
    // Queries near stored vectors, as a step's neighbours are.
    std::vector<float> qv = data[static_cast<size_t>(q) * 97 % n];
    for (auto& x : qv) x += 0.3f * nd(rng);
    double a = seconds_now();
    auto e = flat->search(qv.data(), 10);
    double b = seconds_now();
    auto h = hnsw->search(qv.data(), 10);
    double c = seconds_now();
    t_flat += b - a;
    t_hnsw += c - b;
    int hit = 0;
    for (const auto& x : h)
      for (const auto& y : e) hit += x.first == y.first;
    recall += hit / 10.0;
  }
  return {{"vectors", n},
          {"dims", width},
          {"build_s", build},
          {"recall_at_10", recall / nq},
          {"flat_qps", nq / t_flat},
          {"hnsw_qps", nq / t_hnsw}};
}

}  // namespace

json run_bench_projection(const BenchProjectionOptions& o) {
  TempDir scratch("repoctx-bench-proj-");
  const fs::path& tmp = scratch.path();
  json rep;
  int threads = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  rep["subspace"] = bench_subspace(o, tmp);
  log_info("bench-projection: memory read bandwidth ({} threads)", threads);
  double bw = memory_read_gbps(threads);
  rep["memory_read_gbps"] = bw;
  std::mt19937_64 rng(7);
  std::normal_distribution<float> nd;
  rep["flat_search"] = bench_flat_search(o, bw, rng, nd);
  rep["hnsw"] = bench_hnsw(o, rng, nd);
  return rep;
}

std::string bench_projection_markdown(const json& r) {
  std::string out =
      "| W shape | d | k (0.98) | (d-k)/d | time (s) | peak RSS (MB) | W in float32 (MB) "
      "|\n|---|---|---|---|---|---|---|\n";
  for (const auto& s : r["subspace"])
    out += fmt::format("| {} ({} x {}, {}) | {} | {} | {:.1f}% | {:.1f} | {:.0f} | {:.0f} |\n",
                       s["shape"].get<std::string>(), s["rows"].get<int64_t>(), s["d"].get<int64_t>(),
                       s["type"].get<std::string>(), s["d"].get<int64_t>(), s["k"].get<int>(),
                       100.0 * (s["d"].get<double>() - s["k"].get<double>()) / s["d"].get<double>(),
                       s["seconds"].get<double>(), s["peak_rss_mb"].get<double>(), s["float32_w_mb"].get<double>());
  out += fmt::format("\nmemory read bandwidth: {:.1f} GB/s\n\n", r["memory_read_gbps"].get<double>());
  out += "| flat search | ms/query | vectors/s | GB/s | share of bandwidth |\n|---|---|---|---|---|\n";
  for (const auto& s : r["flat_search"])
    out += fmt::format("| {} x {} | {:.2f} | {:.2e} | {:.1f} | {:.0f}% |\n", s["vectors"].get<size_t>(),
                       s["dims"].get<int>(), s["ms_per_query"].get<double>(), s["vectors_per_s"].get<double>(),
                       s["gbps"].get<double>(), 100.0 * s["fraction_of_bandwidth"].get<double>());
  const auto& h = r["hnsw"];
  out += fmt::format("\nhnsw, {} vectors x {}: build {:.1f} s, recall@10 {:.3f}, {:.0f} queries/s (flat: {:.0f})\n",
                     h["vectors"].get<size_t>(), h["dims"].get<int>(), h["build_s"].get<double>(),
                     h["recall_at_10"].get<double>(), h["hnsw_qps"].get<double>(), h["flat_qps"].get<double>());
  return out;
}

}  // namespace repoctx
