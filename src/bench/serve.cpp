#include "bench/serve.h"

#include <fmt/core.h>
#include <httplib.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <thread>

#include "repoctx/repoctx.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/log.h"
#include "util/subprocess.h"
#include "util/temp_dir.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace repoctx {

namespace {

double percentile_of(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];  // nearest rank
}

json summary_ms(const std::vector<double>& seconds, const std::vector<double>& cpu = {}) {
  std::vector<double> ms, cpu_ms;
  for (double s : seconds) ms.push_back(s * 1000.0);
  for (double s : cpu) cpu_ms.push_back(s * 1000.0);
  json j = {{"runs", ms.size()},
            {"p50_ms", percentile_of(ms, 0.5)},
            {"p99_ms", percentile_of(ms, 0.99)},
            {"min_ms", ms.empty() ? 0 : *std::min_element(ms.begin(), ms.end())}};
  if (!cpu_ms.empty()) j["cpu_p50_ms"] = percentile_of(cpu_ms, 0.5);  // user + system: what load does not inflate
  return j;
}

double load_average() {
  std::ifstream in("/proc/loadavg");
  double l = 0;
  in >> l;
  return l;
}

std::vector<std::string> with_db(std::vector<std::string> argv, const std::string& db) {
  if (!db.empty()) {
    argv.push_back("--db");
    argv.push_back(db);
  }
  return argv;
}

// The query's words as ripgrep alternatives over the repository's Python sources.
std::vector<std::string> rg_argv(const ServeBenchOptions& o) {
  std::vector<std::string> argv = {o.rg, "--count-matches", "--ignore-case", "--no-messages", "--type", "py"};
  std::string word;
  auto flush = [&] {
    if (word.size() > 2) {
      argv.push_back("-e");
      argv.push_back(word);
    }
    word.clear();
  };
  for (char c : o.query + " ") {
    if (std::isalnum(static_cast<unsigned char>(c)) || c == '_')
      word.push_back(c);
    else
      flush();
  }
  argv.push_back(o.repo);
  return argv;
}

// n of the repository's functions and methods, evenly spaced in the index's order (deterministic): the
// targets and queries of every part of the benchmark.
std::vector<api::Symbol> evenly_spaced_functions(const ServeBenchOptions& o, size_t n) {
  api::OpenParams op;
  op.index.db = o.db;
  op.refresh = false;
  api::Index ix(o.repo, op);
  api::SymbolsParams sp;
  sp.limit = 0;
  std::vector<api::Symbol> fns;
  for (auto& s : ix.symbols(sp))
    if (s.kind == "function" || s.kind == "method") fns.push_back(std::move(s));
  if (fns.empty()) throw Error(ExitCode::bad_input, "the repository has no functions to query for");
  std::vector<api::Symbol> out;
  n = std::min(fns.size(), n);
  for (size_t i = 0; i < n; ++i) out.push_back(fns[i * fns.size() / n]);
  return out;
}

// The default strategy (structural) for a target, as a fresh process per target: each of the first `cold_runs`
// evenly spaced targets once, after one untimed run (which leaves on disk what any earlier request on the
// index leaves: its functions' resolved references, the ranker's evaluator verdict).
json bench_cold_target(const ServeBenchOptions& o) {
  const std::vector<api::Symbol> targets = evenly_spaced_functions(o, static_cast<size_t>(o.cold_runs) + 1);
  std::vector<double> wall, cpu;
  for (size_t i = 0; i < targets.size(); ++i) {
    throw_if_interrupted("nothing is kept");
    auto run = run_process(
        with_db({o.binary, "retrieve", o.repo, "--target", targets[i].target, "-k", "10", "-q", "--no-refresh"}, o.db));
    if (run.exit_code != 0)
      throw Error(ExitCode::failure, fmt::format("retrieve --target {} exited {} in the cold benchmark",
                                                 targets[i].target, run.exit_code));
    if (i == 0) continue;
    wall.push_back(run.seconds);
    cpu.push_back(run.cpu_seconds);
  }
  return summary_ms(wall, cpu);
}

json bench_cold(const ServeBenchOptions& o) {
  auto base = with_db({o.binary, "retrieve", o.repo, "--query", o.query, "-k", "10", "-q"}, o.db);
  auto no_refresh = base;
  no_refresh.push_back("--no-refresh");
  std::vector<double> t_nr, t_fresh, t_rg, c_nr, c_fresh, c_rg;
  double load_before = load_average();
  // One untimed round first (page cache), then interleaved rounds so that all three see the same load.
  for (int i = 0; i <= o.cold_runs; ++i) {
    throw_if_interrupted("nothing is kept");
    auto a = run_process(no_refresh);
    auto b = run_process(base);
    auto c = run_process(rg_argv(o));
    if (a.exit_code != 0 || b.exit_code != 0)
      throw Error(ExitCode::failure,
                  fmt::format("retrieve exited {} / {} in the cold benchmark", a.exit_code, b.exit_code));
    if (c.exit_code > 1) throw Error(ExitCode::failure, fmt::format("ripgrep ({}) exited {}", o.rg, c.exit_code));
    if (i == 0) continue;
    t_nr.push_back(a.seconds);
    t_fresh.push_back(b.seconds);
    t_rg.push_back(c.seconds);
    c_nr.push_back(a.cpu_seconds);
    c_fresh.push_back(b.cpu_seconds);
    c_rg.push_back(c.cpu_seconds);
  }
  json r = {{"query", o.query},
            {"retrieve_no_refresh", summary_ms(t_nr, c_nr)},
            {"retrieve_fresh", summary_ms(t_fresh, c_fresh)},
            {"ripgrep", summary_ms(t_rg, c_rg)},
            {"load_average", {load_before, load_average()}},
            {"cores", std::thread::hardware_concurrency()}};
  double rg50 = r["ripgrep"]["p50_ms"].get<double>();
  r["ratio_no_refresh_vs_rg"] = rg50 > 0 ? r["retrieve_no_refresh"]["p50_ms"].get<double>() / rg50 : 0.0;
  r["ratio_fresh_vs_rg"] = rg50 > 0 ? r["retrieve_fresh"]["p50_ms"].get<double>() / rg50 : 0.0;
  return r;
}

double vm_hwm_mb(int pid) {
  std::ifstream in("/proc/" + std::to_string(pid) + "/status");
  for (std::string line; std::getline(in, line);)
    if (line.rfind("VmHWM:", 0) == 0) return std::stod(line.substr(6)) / 1024.0;
  return 0;
}

// A `repoctx serve` child on a free port, stopped (SIGTERM) when this goes.
class ServerChild {
 public:
  ServerChild(const ServeBenchOptions& o, const TempDir& tmp) {
    std::string ready = (tmp / "ready.json").string();
    pid_ = start_process(
        with_db({o.binary, "serve", o.repo, "--port", "0", "--ready-file", ready, "--no-watch", "--no-refresh", "-q"},
                o.db),
        "/dev/null", (tmp / "server.log").string());
    for (int i = 0; i < 6000 && !fs::exists(ready); ++i) {
      int st;
      if (waitpid(pid_, &st, WNOHANG) == pid_) {
        pid_ = -1;
        throw Error(ExitCode::failure, "the server exited before listening; its log: " + (tmp / "server.log").string());
      }
      throw_if_interrupted("nothing is kept");
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    std::ifstream in(ready);
    json j = json::parse(in, nullptr, false);
    if (j.is_discarded()) throw Error(ExitCode::failure, "the server did not announce its port in 300 s");
    port_ = j["port"].get<int>();
  }
  ~ServerChild() {
    if (pid_ > 0) {
      kill(pid_, SIGTERM);
      wait_process(pid_);
    }
  }
  int port() const { return port_; }
  int pid() const { return pid_; }

 private:
  int pid_ = -1;
  int port_ = 0;
};

// CPU time (user + system) a process has used so far, in seconds (/proc/PID/stat fields 14 and 15).
double process_cpu_seconds(int pid) {
  std::string stat = read_file_if_present("/proc/" + std::to_string(pid) + "/stat").value_or("");
  size_t paren = stat.rfind(')');  // the command name may hold spaces
  if (paren == std::string::npos) return 0;
  std::istringstream fields(stat.substr(paren + 2));
  std::string field;
  double ticks = 0;
  for (int i = 3; i <= 15 && fields >> field; ++i)
    if (i >= 14) ticks += std::stod(field);
  return ticks / static_cast<double>(sysconf(_SC_CLK_TCK));
}

// `bodies` sent round-robin by `clients` threads over keep-alive connections; per-request latency, and the
// server's CPU time per request (what the load of other processes on the machine does not inflate much).
json hammer(int port, int server_pid, const std::vector<std::string>& bodies, int requests, int clients) {
  double cpu0 = process_cpu_seconds(server_pid);
  std::vector<std::vector<double>> lat(static_cast<size_t>(clients));
  std::atomic<int> next{0}, failures{0};
  std::string first_error;
  std::mutex err_mu;
  auto t0 = std::chrono::steady_clock::now();
  std::vector<std::thread> threads;
  for (int c = 0; c < clients; ++c)
    threads.emplace_back([&, c] {
      httplib::Client cli("127.0.0.1", port);
      cli.set_keep_alive(true);
      // Without it Nagle holds the body back until the server acknowledges the headers, which it delays by
      // 40 ms: sparse requests measured a p50 of 44 ms instead of under 2 (the server sets it too).
      cli.set_tcp_nodelay(true);
      cli.set_read_timeout(120, 0);
      for (int i; (i = next.fetch_add(1)) < requests && !interrupted();) {
        auto s = std::chrono::steady_clock::now();
        auto res = cli.Post("/v1/retrieve", bodies[static_cast<size_t>(i) % bodies.size()], "application/json");
        lat[static_cast<size_t>(c)].push_back(
            std::chrono::duration<double>(std::chrono::steady_clock::now() - s).count());
        if (!res || res->status != 200) {
          ++failures;
          std::lock_guard lk(err_mu);
          if (first_error.empty()) first_error = res ? res->body.substr(0, 300) : httplib::to_string(res.error());
        }
      }
    });
  for (auto& t : threads) t.join();
  double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<double> all;
  for (const auto& l : lat) all.insert(all.end(), l.begin(), l.end());
  json r = summary_ms(all);
  r["clients"] = clients;
  r["failures"] = failures.load();
  if (!first_error.empty()) r["first_error"] = first_error;
  r["throughput_rps"] = wall > 0 ? static_cast<double>(all.size()) / wall : 0.0;
  r["server_cpu_ms_per_request"] =
      all.empty() ? 0.0 : 1000.0 * (process_cpu_seconds(server_pid) - cpu0) / static_cast<double>(all.size());
  r["load_average"] = load_average();
  return r;
}

json bench_warm(const ServeBenchOptions& o, const TempDir& tmp) {
  const std::vector<api::Symbol> fns = evenly_spaced_functions(o, 500);
  std::vector<std::string> sparse, structural;
  for (const auto& s : fns) {
    std::string words = s.qualname;
    std::replace_if(
        words.begin(), words.end(), [](char c) { return c == '_' || c == '.'; }, ' ');
    sparse.push_back(json{{"query", words}, {"strategy", "sparse"}, {"k", 10}}.dump());
    structural.push_back(json{{"target", s.target}, {"strategy", "structural"}, {"k", 10}}.dump());
  }
  ServerChild server(o, tmp);
  json r;
  // A server warms its snapshot in the background after loading (api::Index::warm): measured once it says
  // so, as a server that has been up a while. (A build without it reports no "warm": not waited for.)
  auto w0 = std::chrono::steady_clock::now();
  {
    httplib::Client cli("127.0.0.1", server.port());
    for (bool warm = false; !warm;) {
      auto res = cli.Get("/v1/health");
      json h = res && res->status == 200 ? json::parse(res->body, nullptr, false) : json();
      warm = h.is_object() && h.contains("repos");
      if (warm)
        for (const auto& rp : h["repos"]) warm = warm && rp.value("warm", true);
      if (std::chrono::steady_clock::now() - w0 > std::chrono::seconds(600))
        throw Error(ExitCode::failure, "the server did not finish warming in 600 s");
      throw_if_interrupted("nothing is kept");
      if (!warm) std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  r["warm_wait_s"] = std::chrono::duration<double>(std::chrono::steady_clock::now() - w0).count();
  // Warm-up (first use of each strategy loads its model and the repository facts), not measured.
  hammer(server.port(), server.pid(), sparse, 20, 1);
  hammer(server.port(), server.pid(), structural, 20, 1);
  r["sparse"] = hammer(server.port(), server.pid(), sparse, o.requests, o.clients);
  r["structural"] = hammer(server.port(), server.pid(), structural, o.requests, o.clients);
  // One client alone: the service time, without the queueing that 8 clients on fewer cores add.
  const int alone = std::max(1, o.requests / 5);
  r["sparse_1_client"] = hammer(server.port(), server.pid(), sparse, alone, 1);
  r["structural_1_client"] = hammer(server.port(), server.pid(), structural, alone, 1);
  r["server_peak_rss_mb"] = vm_hwm_mb(server.pid());
  r["requests_per_strategy"] = o.requests;
  return r;
}

json bench_mcp(const ServeBenchOptions& o, const TempDir& tmp) {
  if (o.mcp_sdk.empty() || !fs::exists(fs::path(o.mcp_sdk) / "node_modules/@modelcontextprotocol/sdk"))
    return {{"skipped", "the MCP client SDK is not installed (scripts/setup.sh installs it; --mcp-sdk DIR)"}};
  std::string out = (tmp / "mcp.json").string();
  auto argv = with_db({o.node, o.mcp_script, "--sdk", o.mcp_sdk, "--repoctx", o.binary, "--repo", o.repo, "--calls",
                       std::to_string(o.mcp_calls), "--out", out},
                      o.db);
  auto r = run_process(argv, "/dev/null", (tmp / "mcp.log").string());
  if (r.exit_code != 0)
    throw Error(ExitCode::failure, fmt::format("the MCP benchmark client exited {}; its log: {}", r.exit_code,
                                               (tmp / "mcp.log").string()));
  std::ifstream in(out);
  json j = json::parse(in, nullptr, false);
  if (j.is_discarded()) throw Error(ExitCode::failure, "the MCP benchmark client wrote no result");
  return j;
}

}  // namespace

json run_bench_serve(const ServeBenchOptions& o) {
  TempDir tmp("repoctx-bench-serve-");
  json r = {{"repo", o.repo}};
  log_info("indexing {} (if needed)", o.repo);
  {
    api::OpenParams op;
    op.index.db = o.db;
    api::Index ix(o.repo, op);
    r["files"] = ix.info().files;
    r["entities"] = ix.info().entities;
  }
  log_info("cold CLI: {} runs each of retrieve --no-refresh, retrieve, ripgrep", o.cold_runs);
  r["cold"] = bench_cold(o);
  r["cold"]["retrieve_target"] = bench_cold_target(o);
  log_info("warm server: {} requests per strategy from {} clients", o.requests, o.clients);
  r["warm"] = bench_warm(o, tmp);
  log_info("MCP round trips through the SDK client");
  r["mcp"] = bench_mcp(o, tmp);
  return r;
}

std::string bench_serve_markdown(const json& r) {
  std::string s = fmt::format("## bench-serve: {} ({} files, {} entities)\n\n", r["repo"].get<std::string>(),
                              r["files"].get<int64_t>(), r["entities"].get<int64_t>());
  const json& c = r["cold"];
  s += fmt::format("Cold CLI, query \"{}\", wall over {} runs (same run, interleaved):\n\n",
                   c["query"].get<std::string>(), c["ripgrep"]["runs"].get<int>());
  s += fmt::format("(load average {:.1f} before, {:.1f} after, {} cores)\n\n", c["load_average"][0].get<double>(),
                   c["load_average"][1].get<double>(), c["cores"].get<int>());
  s += "| what | wall p50 ms | wall p99 ms | wall min ms | CPU p50 ms | wall p50 vs ripgrep |\n"
       "|---|---:|---:|---:|---:|---:|\n";
  auto row = [&](const char* name, const json& x, double ratio) {
    s += fmt::format("| {} | {:.1f} | {:.1f} | {:.1f} | {:.1f} | {:.2f}x |\n", name, x["p50_ms"].get<double>(),
                     x["p99_ms"].get<double>(), x["min_ms"].get<double>(), x.value("cpu_p50_ms", 0.0), ratio);
  };
  row("retrieve --no-refresh", c["retrieve_no_refresh"], c["ratio_no_refresh_vs_rg"].get<double>());
  row("retrieve (freshness check)", c["retrieve_fresh"], c["ratio_fresh_vs_rg"].get<double>());
  row("ripgrep --type py", c["ripgrep"], 1.0);
  if (c.contains("retrieve_target")) {
    const json& t = c["retrieve_target"];
    s += fmt::format(
        "\nCold CLI, the default strategy for a target (`retrieve --target T --no-refresh`, structural), a fresh "
        "process for each of {} targets: wall p50 {:.1f} ms, p99 {:.1f} ms, min {:.1f} ms; CPU p50 {:.1f} ms\n",
        t["runs"].get<int>(), t["p50_ms"].get<double>(), t["p99_ms"].get<double>(), t["min_ms"].get<double>(),
        t.value("cpu_p50_ms", 0.0));
  }
  const json& w = r["warm"];
  s += fmt::format(
      "\nWarm `serve` (measured {:.1f} s after it listened, once it reported its snapshot warm), {} requests per "
      "strategy, {} concurrent clients, server peak RSS {:.0f} MB:\n\n",
      w.value("warm_wait_s", 0.0), w["requests_per_strategy"].get<int>(), w["sparse"]["clients"].get<int>(),
      w["server_peak_rss_mb"].get<double>());
  s += "| strategy | clients | requests | p50 ms | p99 ms | requests/s | server CPU ms/request | load | failures |\n"
       "|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (const char* k : {"sparse", "structural", "sparse_1_client", "structural_1_client"}) {
    if (!w.contains(k)) continue;
    std::string name(k);
    s += fmt::format("| {} | {} | {} | {:.2f} | {:.2f} | {:.0f} | {:.2f} | {:.1f} | {} |\n",
                     name.substr(0, name.find('_')), w[k]["clients"].get<int>(), w[k]["runs"].get<int>(),
                     w[k]["p50_ms"].get<double>(), w[k]["p99_ms"].get<double>(), w[k]["throughput_rps"].get<double>(),
                     w[k].value("server_cpu_ms_per_request", 0.0), w[k].value("load_average", 0.0),
                     w[k]["failures"].get<int>());
  }
  const json& m = r["mcp"];
  if (m.contains("skipped"))
    s += "\nMCP: skipped (" + m["skipped"].get<std::string>() + ")\n";
  else
    s += fmt::format(
        "\nMCP tools/call (retrieve, sparse) round trip through the SDK client over stdio: p50 {:.2f} ms, "
        "p99 {:.2f} ms over {} calls\n",
        m["p50_ms"].get<double>(), m["p99_ms"].get<double>(), m["calls"].get<int>());
  return s;
}

}  // namespace repoctx
