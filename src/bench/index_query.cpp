#include "bench/index_query.h"

#include <fmt/core.h>
#include <spawn.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fcntl.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <thread>

#include <tree_sitter/api.h>

#include "index/query_image.h"
#include "repo/parser.h"
#include "repo/walker.h"
#include "retrieve/retriever.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/log.h"
#include "util/temp_dir.h"

extern char** environ;

namespace fs = std::filesystem;
using nlohmann::json;

namespace repoctx {
namespace {

struct ChildRun {
  int status = 0;
  double seconds = 0;
  double peak_rss_mb = 0;
  std::string out;
};

// Runs a command with stdout captured to a file; wall time and the child's own peak RSS (wait4).
ChildRun run_child(const std::vector<std::string>& argv, const std::string& out_path) {
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, out_path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  auto t0 = std::chrono::steady_clock::now();
  pid_t pid;
  int rc = posix_spawn(&pid, args[0], &fa, nullptr, args.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) throw Error(ExitCode::failure, "cannot start " + argv[0] + ": " + std::strerror(rc));
  ChildRun r;
  struct rusage ru {};
  wait4(pid, &r.status, 0, &ru);
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  // wait4's ru_maxrss carries the parent's peak across exec; children report their own peak (VmHWM
  // for repoctx, getrusage for the Python reference, which starts from a small parent) and that is used.
  r.peak_rss_mb = static_cast<double>(ru.ru_maxrss) / 1024.0;
  r.out = read_file_if_present(out_path).value_or("");
  if (!WIFEXITED(r.status) || WEXITSTATUS(r.status) != 0)
    throw Error(ExitCode::failure, "benchmark step failed (" + argv[0] + " " + (argv.size() > 1 ? argv[1] : "") +
                                       "), exit status " + std::to_string(r.status));
  return r;
}

double percentile(std::vector<double> v, double p) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(std::ceil(p * static_cast<double>(v.size())));
  return v[std::min(v.size() - 1, i == 0 ? 0 : i - 1)];  // nearest rank, as ref_index.py reports
}

uint64_t dir_bytes(const fs::path& root) {
  uint64_t b = 0;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(root, ec); it != fs::recursive_directory_iterator(); it.increment(ec))
    if (it->is_regular_file(ec) && it->path().extension() == ".py") b += it->file_size(ec);
  return b;
}

// The raw tree-sitter parse rate on the index's file set (vendored and generated files included, as in
// the bench's index runs): each file's tree built and freed, nothing extracted, one thread, the sources
// already in memory. It bounds any tree-sitter indexer at that rate x its parse workers.
struct RawSources {
  std::vector<std::pair<const TSLanguage*, std::string>> files;
  uint64_t bytes = 0;
};

RawSources load_sources(const std::string& repo) {
  WalkOptions w;
  w.skip_vendored = false;
  w.skip_generated = false;
  RawSources out;
  for (const auto& f : walk_repository(repo, w).files) {
    const TSLanguage* lang = grammar_of(f.language, f.rel);
    if (!lang) continue;
    std::string text = read_file_if_present(f.abs).value_or("");
    out.bytes += text.size();
    out.files.emplace_back(lang, std::move(text));
  }
  return out;
}

// One single-threaded pass; seconds.
double parse_pass(const RawSources& src) {
  TSParser* parser = ts_parser_new();
  auto t0 = std::chrono::steady_clock::now();
  for (const auto& [lang, text] : src.files) {
    TSTree* tree = parse_tree(parser, lang, text);
    if (!tree) {
      ts_parser_delete(parser);
      throw_if_interrupted("nothing (the benchmark was interrupted)");
      throw Error(ExitCode::bad_input, "tree-sitter could not parse a file (over 4 GiB?)");
    }
    ts_tree_delete(tree);
  }
  double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  ts_parser_delete(parser);
  return s;
}

// 1. Full index, in a child process so that its peak RSS is its own. Same file set as the reference:
//    vendored and generated files included. Each run is paired with a raw tree-sitter pass over the same
//    files (parse_pass), so that load from other processes weighs on both sides of the ratio alike. Fills
//    rep["repoctx"] and rep["raw_parse"].
void measure_full_index(const BenchOptions& o, const fs::path& tmp, json& rep) {
  std::string threads = std::to_string(o.threads);
  RawSources sources = load_sources(o.repo);
  std::vector<double> times, parse_times, peaks, base_times, base_peaks;
  ChildRun idx;
  for (int i = 0; i < std::max(1, o.repeat); ++i) {
    std::string db = (tmp / ("index" + std::to_string(i) + ".db")).string();
    log_info("bench: full index {}/{} of {}", i + 1, o.repeat, o.repo);
    parse_times.push_back(parse_pass(sources));
    if (!o.baseline_exe.empty()) {
      std::string bdb = (tmp / ("baseline" + std::to_string(i) + ".db")).string();
      auto br = run_child({o.baseline_exe, "index", o.repo, "--db", bdb, "--keep-vendored", "--keep-generated",
                           "--json", "-q", "--threads", threads},
                          (tmp / "baseline.json").string());
      base_times.push_back(br.seconds);
      base_peaks.push_back(json::parse(br.out).value("peak_rss_mb", br.peak_rss_mb));
      fs::remove(bdb);
      fs::remove(QueryImage::path_for(bdb));
    }
    idx = run_child({o.self_exe, "index", o.repo, "--db", db, "--keep-vendored", "--keep-generated", "--json", "-q",
                     "--threads", threads},
                    (tmp / "index.json").string());
    times.push_back(idx.seconds);
    peaks.push_back(json::parse(idx.out).value("peak_rss_mb", idx.peak_rss_mb));
  }
  json ij = json::parse(idx.out);
  double index_s = percentile(times, 0.5);
  double mb = static_cast<double>(ij["bytes"].get<uint64_t>()) / 1048576.0;
  rep["repoctx"] = {{"files", ij["files"]},       {"bytes", ij["bytes"]},
                    {"entities", ij["entities"]}, {"references", ij["references"]},
                    {"snippets", ij["snippets"]}, {"index_s", index_s},
                    {"index_runs_s", times},      {"files_per_s", ij["files"].get<double>() / index_s},
                    {"mb_per_s", mb / index_s},   {"peak_rss_mb", *std::max_element(peaks.begin(), peaks.end())}};
  if (!base_times.empty()) {
    double bs = percentile(base_times, 0.5);
    rep["baseline"] = {{"exe", o.baseline_exe},
                       {"index_s", bs},
                       {"index_runs_s", base_times},
                       {"mb_per_s", mb / bs},
                       {"peak_rss_mb", *std::max_element(base_peaks.begin(), base_peaks.end())},
                       {"speedup", bs / index_s}};
  }
  int workers = o.threads > 0 ? o.threads : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  workers = std::min<int>(workers, static_cast<int>(sources.files.size()));
  double parse_s = percentile(parse_times, 0.5);
  double parse_mb_s = static_cast<double>(sources.bytes) / 1048576.0 / parse_s;
  rep["raw_parse"] = {{"files", sources.files.size()},
                      {"bytes", sources.bytes},
                      {"parse_s", parse_s},
                      {"parse_runs_s", parse_times},
                      {"mb_per_s", parse_mb_s},
                      {"workers", workers},
                      {"bound_mb_per_s", parse_mb_s * workers},
                      {"index_share_of_bound", (mb / index_s) / (parse_mb_s * workers)}};
}

// 2. Queries: signature + docstring of the first documented functions, in path order, timed on the index of
//    step 1 and written to `qpath` for the reference. Fills rep["repoctx"]'s query figures and rep["queries"].
void measure_queries(const BenchOptions& o, const fs::path& tmp, const std::string& qpath, json& rep) {
  std::string db0 = (tmp / "index0.db").string();
  auto t_load = std::chrono::steady_clock::now();
  auto eng = Engine::open(db0);
  const Bm25Index& bm = eng->entity_bm25();
  double load_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t_load).count();
  std::vector<std::string> queries;
  for (const auto& e : eng->view().entities()) {
    if (static_cast<int>(queries.size()) >= o.queries) break;
    if (is_callable(e.kind) && !e.docstring.empty()) queries.push_back(e.signature + "\n" + e.docstring);
  }
  {
    std::ofstream qf(qpath);
    for (const auto& q : queries)
      qf << json({{"text", q}}).dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
  }
  std::vector<double> lat;
  Bm25Params p;
  for (int rep_i = 0; rep_i < 2; ++rep_i) {  // first pass warms caches; the second is measured
    lat.clear();
    for (const auto& q : queries) {
      auto t0 = std::chrono::steady_clock::now();
      auto terms = query_terms(q);
      auto top = top_entities(*eng, bm.score_all(terms, p), 20);
      lat.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      if (top.empty()) continue;
    }
  }
  rep["repoctx"]["bm25_load_ms"] = load_ms;
  rep["repoctx"]["bm25_memory_mb"] = static_cast<double>(bm.memory_bytes()) / 1048576.0;
  rep["repoctx"]["query_p50_ms"] = percentile(lat, 0.5);
  rep["repoctx"]["query_p99_ms"] = percentile(lat, 0.99);
  rep["queries"] = queries.size();
}

// 3. The reference, same repository, same queries (`qpath`). Fills rep["reference"] and the speedups.
void measure_reference(const BenchOptions& o, const fs::path& tmp, const std::string& qpath, json& rep) {
  log_info("bench: reference implementation ({}), this takes a while", o.reference);
  auto rr = run_child(
      {o.python, o.reference, o.repo, "--db", (tmp / "ref.sqlite").string(), "--queries", qpath, "--k", "20", "--json"},
      (tmp / "ref.json").string());
  json rj = json::parse(rr.out);
  rep["reference"] = {{"files", rj["files"]},
                      {"bytes", rj["bytes"]},
                      {"entities", rj["entities"]},
                      {"index_s", rj["index_seconds"]},
                      {"wall_s", rr.seconds},
                      {"files_per_s", rj["files_per_s"]},
                      {"mb_per_s", rj["mb_per_s"]},
                      {"peak_rss_mb", rj.value("peak_rss_mb", rr.peak_rss_mb)},
                      {"query_p50_ms", rj["query_p50_ms"]},
                      {"query_p99_ms", rj["query_p99_ms"]}};
  rep["speedup_index"] = rj["index_seconds"].get<double>() / rep["repoctx"]["index_s"].get<double>();
  rep["speedup_query_p50"] =
      rj["query_p50_ms"].get<double>() / std::max(1e-9, rep["repoctx"]["query_p50_ms"].get<double>());
}

// 4. Re-index after changing one file, on a copy of the repository. Fills rep["reindex"].
// A definition appended to a file of `lang` by the re-index measure (Java's a comment: a method needs a class).
std::string added_function(Language lang, int i) {
  switch (lang) {
    case Language::python:
      return fmt::format("\n\ndef repoctx_bench_added_{}(x):\n    return x + 1\n", i);
    case Language::go:
      return fmt::format("\n\nfunc repoctxBenchAdded{}(x int) int {{ return x + 1 }}\n", i);
    case Language::javascript:
    case Language::typescript:
      return fmt::format("\n\nfunction repoctxBenchAdded{}(x) {{ return x + 1; }}\n", i);
    case Language::rust:
      return fmt::format("\n\nfn repoctx_bench_added_{}(x: i64) -> i64 {{ x + 1 }}\n", i);
    case Language::c:
    case Language::cpp:
      return fmt::format("\n\nint repoctx_bench_added_{}(int x) {{ return x + 1; }}\n", i);
    default:
      return fmt::format("\n// repoctx bench change {}\n", i);
  }
}

void measure_reindex(const BenchOptions& o, const fs::path& tmp, json& rep) {
  std::string threads = std::to_string(o.threads);
  fs::path copy = tmp / "copy";
  fs::copy(o.repo, copy, fs::copy_options::recursive | fs::copy_options::copy_symlinks);
  std::string db = (tmp / "copy.db").string();
  auto full = run_child({o.self_exe, "index", copy.string(), "--db", db, "--keep-vendored", "--keep-generated",
                         "--json", "-q", "--threads", threads},
                        (tmp / "copy.json").string());
  // The median-sized source file gets a new function (in its own language).
  std::vector<fs::path> sources;
  for (auto& ent : fs::recursive_directory_iterator(copy))
    if (ent.is_regular_file() && language_from_path(ent.path().filename().string()) != Language::unknown)
      sources.push_back(ent.path());
  if (sources.empty())
    throw Error(ExitCode::bad_input, "bench: no source file in '" + o.repo + "' to change for the re-index measure");
  std::sort(sources.begin(), sources.end(),
            [](const fs::path& a, const fs::path& b) { return fs::file_size(a) < fs::file_size(b); });
  fs::path victim = sources[sources.size() / 2];
  const Language victim_lang = language_from_path(victim.filename().string());
  // `repeat` changes of that file (a new function each time), each re-indexed; the median is reported,
  // against the median full index of step 1.
  std::vector<double> inc_times;
  json incj;
  for (int i = 0; i < std::max(1, o.repeat); ++i) {
    std::ofstream(victim, std::ios::app) << added_function(victim_lang, i);
    auto inc = run_child({o.self_exe, "index", copy.string(), "--db", db, "--keep-vendored", "--keep-generated",
                          "--json", "-q", "--threads", threads},
                         (tmp / "inc.json").string());
    incj = json::parse(inc.out);
    inc_times.push_back(inc.seconds);
  }
  double one = percentile(inc_times, 0.5), full_s = rep["repoctx"]["index_s"].get<double>();
  rep["reindex"] = {{"full_s", full_s},
                    {"copy_full_s", full.seconds},
                    {"one_file_s", one},
                    {"one_file_runs_s", inc_times},
                    {"ratio", one / full_s},
                    {"parsed", incj["parsed"]},
                    {"changed_file", fs::relative(victim, copy).string()}};
}

}  // namespace

json run_bench(const BenchOptions& o) {
  TempDir scratch("repoctx-bench-");
  const fs::path& tmp = scratch.path();
  json rep;
  rep["repo"] = o.repo;
  measure_full_index(o, tmp, rep);
  const std::string qpath = (tmp / "queries.jsonl").string();
  measure_queries(o, tmp, qpath, rep);
  if (!o.reference.empty()) measure_reference(o, tmp, qpath, rep);
  if (o.reindex) measure_reindex(o, tmp, rep);
  rep["python_bytes"] = dir_bytes(o.repo);
  return rep;
}

std::string bench_markdown(const json& r) {
  std::string out;
  const json& c = r["repoctx"];
  out += fmt::format("repository: {} ({} files, {:.1f} MB)\n\n", r["repo"].get<std::string>(), c["files"].get<int>(),
                     c["bytes"].get<double>() / 1048576.0);
  out += "| measure | repoctx | reference (Python) | ratio |\n|---|---|---|---|\n";
  bool ref = r.contains("reference");
  auto row = [&](const std::string& name, double a, const char* key, int digits, bool lower_better) {
    if (ref) {
      double b = r["reference"][key].get<double>();
      double ratio = lower_better ? b / a : a / b;
      out += fmt::format("| {} | {:.{}f} | {:.{}f} | {:.1f}x |\n", name, a, digits, b, digits, ratio);
    } else {
      out += fmt::format("| {} | {:.{}f} | - | - |\n", name, a, digits);
    }
  };
  row("full index (s)", c["index_s"].get<double>(), "index_s", 2, true);
  row("files/s", c["files_per_s"].get<double>(), "files_per_s", 1, false);
  row("MB/s", c["mb_per_s"].get<double>(), "mb_per_s", 2, false);
  row("peak RSS while indexing (MB)", c["peak_rss_mb"].get<double>(), "peak_rss_mb", 0, true);
  row("BM25 top-20 query p50 (ms)", c["query_p50_ms"].get<double>(), "query_p50_ms", 3, true);
  row("BM25 top-20 query p99 (ms)", c["query_p99_ms"].get<double>(), "query_p99_ms", 3, true);
  if (r.contains("baseline")) {
    const json& b = r["baseline"];
    out += fmt::format(
        "\nbaseline build ({}), same runs: full index {:.2f} s ({:.2f} MB/s, peak RSS {:.0f} MB); this "
        "build is {:.2f}x as fast\n",
        b["exe"].get<std::string>(), b["index_s"].get<double>(), b["mb_per_s"].get<double>(),
        b["peak_rss_mb"].get<double>(), b["speedup"].get<double>());
  }
  if (r.contains("raw_parse")) {
    const json& rp = r["raw_parse"];
    out += fmt::format(
        "\nraw tree-sitter parse (no extraction, 1 thread, same files, same run): {:.2f} s = {:.2f} MB/s; x {} "
        "workers = {:.2f} MB/s; the index runs at {:.0f}% of that\n",
        rp["parse_s"].get<double>(), rp["mb_per_s"].get<double>(), rp["workers"].get<int>(),
        rp["bound_mb_per_s"].get<double>(), 100.0 * rp["index_share_of_bound"].get<double>());
  }
  if (r.contains("reindex")) {
    const json& ri = r["reindex"];
    out += fmt::format(
        "\nre-index after changing one file ({}): {:.3f} s vs full {:.2f} s = {:.2f}% of a full index ({} file "
        "re-parsed)\n",
        ri["changed_file"].get<std::string>(), ri["one_file_s"].get<double>(), ri["full_s"].get<double>(),
        100.0 * ri["ratio"].get<double>(), ri["parsed"].get<int>());
  }
  out += fmt::format("BM25 index build on load: {:.0f} ms, {:.1f} MB; {} queries\n", c["bm25_load_ms"].get<double>(),
                     c["bm25_memory_mb"].get<double>(), r["queries"].get<int>());
  return out;
}

}  // namespace repoctx
