#include "bench/agent_tools.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>

#include <fmt/format.h>

#include "retrieve/procedural/agent_tools.h"
#include "retrieve/study/acr_search.h"
#include "retrieve/study/chunks.h"
#include "util/error.h"
#include "util/subprocess.h"

namespace repoctx {

using nlohmann::json;

namespace {

double pct(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  size_t i = static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5);
  return v[std::min(i, v.size() - 1)];
}

json summary(const std::vector<double>& ms, const std::vector<size_t>& chars) {
  size_t total = 0;
  for (auto c : chars) total += c;
  return {{"calls", ms.size()},
          {"p50_ms", pct(ms, 0.5)},
          {"p99_ms", pct(ms, 0.99)},
          {"max_ms", pct(ms, 1.0)},
          {"mean_output_chars", chars.empty() ? 0 : total / chars.size()}};
}

// The context-retrieval study's tools: AutoCodeRover's search APIs on the index and the BM25 chunk search
// (its index built once, timed separately).
void time_study_tools(const Engine& e, const BenchToolsOptions& o, const std::vector<int>& callables, std::mt19937& rng,
                      json& out) {
  const auto& ents = e.view().entities();
  const auto& files = e.view().files();
  auto pick = [&] { return callables[std::uniform_int_distribution<size_t>(0, callables.size() - 1)(rng)]; };
  auto timed = [&](const std::string& name, const std::function<std::string()>& call) {
    std::vector<double> ms;
    std::vector<size_t> chars;
    for (int i = 0; i < o.calls; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      std::string r = call();
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      chars.push_back(r.size());
    }
    out["tools"][name] = summary(ms, chars);
  };
  AcrSearch acr(e, {});
  auto klass = [&](int f) {
    for (int p = ents[static_cast<size_t>(f)].parent_index; p >= 0; p = ents[static_cast<size_t>(p)].parent_index)
      if (is_type(ents[static_cast<size_t>(p)].kind)) return ents[static_cast<size_t>(p)].name;
    return std::string("Missing");
  };
  timed("acr search_class", [&] { return acr.search_class(klass(pick())).text; });
  timed("acr search_method", [&] { return acr.search_method(ents[static_cast<size_t>(pick())].name).text; });
  timed("acr search_method_in_class", [&] {
    int f = pick();
    return acr.search_method_in_class(ents[static_cast<size_t>(f)].name, klass(f)).text;
  });
  timed("acr search_code (whole repository)",
        [&] { return acr.search_code(ents[static_cast<size_t>(pick())].name + "(").text; });
  timed("acr search_code_in_file", [&] {
    int f = pick();
    return acr.search_code_in_file("return", files[ents[static_cast<size_t>(f)].file].path).text;
  });
  auto t0 = std::chrono::steady_clock::now();
  const StudyChunkIndex& chunks = study_chunks(e, "text", {});
  out["study_chunk_index"] = {
      {"chunks", chunks.chunks().size()},
      {"build_ms", std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count()}};
  timed("study code_search (BM25 over chunks, top 10)", [&] {
    const auto& en = ents[static_cast<size_t>(pick())];
    std::string q = en.name + " " + en.docstring.substr(0, 200);
    std::string r;
    for (const auto& sc : chunks.top(q, 10)) r += chunks.document(sc.chunk);
    return r;
  });
}

// The repository's folders ("" = root), sorted.
std::vector<std::string> repo_dirs(const std::vector<FileRec>& files) {
  std::vector<std::string> dirs = {""};
  for (const auto& f : files) {
    auto slash = f.path.rfind('/');
    if (slash != std::string::npos) dirs.push_back(f.path.substr(0, slash));
  }
  std::sort(dirs.begin(), dirs.end());
  dirs.erase(std::unique(dirs.begin(), dirs.end()), dirs.end());
  return dirs;
}

// grep's patterns: fixed names of functions (what the agent searches most), and regexes, alternating.
std::vector<json> grep_patterns(const std::vector<EntityRec>& ents, const std::vector<int>& callables, int calls,
                                std::mt19937& rng) {
  auto pick = [&](const std::vector<int>& v) { return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)]; };
  std::vector<json> patterns;
  for (int i = 0; i < calls; ++i) {
    const auto& q = ents[static_cast<size_t>(pick(callables))].qualname;
    std::string last = q.substr(q.rfind('.') == std::string::npos ? 0 : q.rfind('.') + 1);
    if (i % 2 == 0)
      patterns.push_back({{"pattern", last + "("}, {"fixed", true}});
    else
      patterns.push_back({{"pattern", "def \\w*" + last.substr(0, std::max<size_t>(3, last.size() / 2)) + "\\w*\\("},
                          {"fixed", false}});
  }
  return patterns;
}

// The Python reference's grep over the same patterns (`gms`: grep's own times, for the speedup).
void time_reference_grep(const Engine& e, const BenchToolsOptions& o, const std::vector<json>& patterns,
                         const std::vector<double>& gms, std::mt19937& rng, json& out) {
  const std::string& script = o.reference_script;
  auto tmp = std::filesystem::temp_directory_path() / ("repoctx-bench-tools-" + std::to_string(rng()));
  std::filesystem::create_directories(tmp);
  {
    std::ofstream fl(tmp / "files.txt");
    for (const auto& f : e.view().files()) fl << f.path << "\n";
    std::ofstream(tmp / "patterns.json") << json(patterns).dump();
  }
  // argv, no shell: the repository path may hold any character (x';touch y;'z is a valid folder name).
  std::vector<std::string> argv = {o.python, script, e.view().root(), (tmp / "files.txt").string(),
                                   (tmp / "patterns.json").string()};
  std::string text;
  int rc = run_capture(argv, text);
  std::filesystem::remove_all(tmp);
  std::string cmd = join_command(argv) + " (exit " + std::to_string(rc) + ")";
  json ref = json::parse(text, nullptr, false);
  if (ref.is_object() && ref.contains("ms")) {
    auto rms = ref["ms"].get<std::vector<double>>();
    out["reference_grep"] = {{"p50_ms", pct(rms, 0.5)}, {"p99_ms", pct(rms, 0.99)}};
    out["grep_speedup_p50"] = pct(rms, 0.5) / std::max(1e-9, pct(gms, 0.5));
  } else {
    out["reference_grep"] = {{"error", "the Python reference did not run: " + cmd}};
  }
}

}  // namespace

json run_bench_agent_tools(const Engine& e, const BenchToolsOptions& o) {
  RepoTools tools(e);
  const auto& ents = e.view().entities();
  const auto& files = e.view().files();
  std::mt19937 rng(42);
  std::vector<int> callables, with_body_files;
  for (size_t i = 0; i < ents.size(); ++i)
    if (is_callable(ents[i].kind) && ents[i].qualname.find("<locals>") == std::string::npos)
      callables.push_back(static_cast<int>(i));
  if (callables.empty()) throw Error(ExitCode::bad_input, "bench-agent-tools: the index holds no function");
  auto pick = [&](const std::vector<int>& v) { return v[std::uniform_int_distribution<size_t>(0, v.size() - 1)(rng)]; };
  const std::vector<std::string> dirs = repo_dirs(files);

  json out = {
      {"repo", e.view().root()}, {"files", files.size()}, {"functions", callables.size()}, {"tools", json::object()}};
  auto timed = [&](const std::string& name, const std::function<ToolResult(int)>& call) {
    std::vector<double> ms;
    std::vector<size_t> chars;
    for (int i = 0; i < o.calls; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      ToolResult r = call(i);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      chars.push_back(r.text().size());
    }
    out["tools"][name] = summary(ms, chars);
  };
  timed("ls", [&](int) { return tools.ls(dirs[std::uniform_int_distribution<size_t>(0, dirs.size() - 1)(rng)]); });
  timed("read_func", [&](int) { return tools.read_func(tools.function_name(pick(callables))); });
  timed("read_func (short name)", [&](int) {
    const auto& q = ents[static_cast<size_t>(pick(callables))].qualname;
    return tools.read_func(q.substr(q.rfind('.') == std::string::npos ? 0 : q.rfind('.') + 1));
  });
  timed("read_lines", [&](int) {
    const auto& en = ents[static_cast<size_t>(pick(callables))];
    return tools.read_lines(files[en.file].path, en.start_line, en.start_line + 60);
  });
  timed("search_func", [&](int) {
    const auto& q = ents[static_cast<size_t>(pick(callables))].qualname;
    auto last = q.substr(q.rfind('.') == std::string::npos ? 0 : q.rfind('.') + 1);
    return tools.search_func(last.substr(0, std::max<size_t>(3, last.size() / 2)));
  });
  time_study_tools(e, o, callables, rng, out);
  const std::vector<json> patterns = grep_patterns(ents, callables, o.calls, rng);
  std::vector<double> gms;
  std::vector<size_t> gchars;
  for (const auto& p : patterns) {
    auto t0 = std::chrono::steady_clock::now();
    ToolResult r = tools.grep(p["pattern"], "", p["fixed"]);
    gms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    gchars.push_back(r.text().size());
  }
  out["tools"]["grep (whole repository)"] = summary(gms, gchars);
  if (o.reference) time_reference_grep(e, o, patterns, gms, rng, out);
  return out;
}

std::string bench_agent_tools_markdown(const json& r) {
  std::string s = fmt::format(
      "Agent tools on {} ({} files, {} functions)\n\n| tool | calls | p50 ms | p99 ms | max ms | mean output chars "
      "|\n|---|---|---|---|---|---|\n",
      r["repo"].get<std::string>(), r["files"].get<size_t>(), r["functions"].get<size_t>());
  for (const auto& [name, t] : r["tools"].items())
    s += fmt::format("| {} | {} | {:.3f} | {:.3f} | {:.3f} | {} |\n", name, t["calls"].get<int>(),
                     t["p50_ms"].get<double>(), t["p99_ms"].get<double>(), t["max_ms"].get<double>(),
                     t["mean_output_chars"].get<size_t>());
  if (r.contains("study_chunk_index"))
    s += fmt::format("\nStudy BM25 chunk index: {} chunks built in {:.0f} ms (once per index)\n",
                     r["study_chunk_index"]["chunks"].get<size_t>(), r["study_chunk_index"]["build_ms"].get<double>());
  if (r.contains("reference_grep") && r["reference_grep"].contains("p50_ms"))
    s += fmt::format(
        "\nPython reference grep (re, files in memory): p50 {:.2f} ms, p99 {:.2f} ms; repoctx grep is {:.1f}x faster "
        "at p50\n",
        r["reference_grep"]["p50_ms"].get<double>(), r["reference_grep"]["p99_ms"].get<double>(),
        r["grep_speedup_p50"].get<double>());
  return s;
}

}  // namespace repoctx
