#include "eval/completion_runner.h"

#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>

#include <fmt/format.h>

#include "eval/completion_metrics.h"
#include "eval/runner.h"
#include "retrieve/aligncoder/prompt.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/log.h"
#include "util/text.h"

namespace repoctx {

using nlohmann::json;
namespace fs = std::filesystem;

std::pair<std::string, int> parse_method_label(const std::string& label) {
  size_t at = label.find("@k=");
  if (at == std::string::npos) return {label, -1};
  try {
    return {label.substr(0, at), std::stoi(label.substr(at + 3))};
  } catch (const std::exception&) {
    throw Error(ExitCode::usage, "method '" + label + "': @k= takes a number");
  }
}

std::vector<std::string> method_labels(const CompletionRunOptions& o) {
  std::vector<std::string> out;
  for (const auto& m : o.methods) {
    retriever_info(parse_method_label(m).first);  // an unknown name is a usage error before any work
    if (m == "aligncoder" && !o.ks.empty())
      for (int k : o.ks) out.push_back(fmt::format("aligncoder@k={}", k));
    else
      out.push_back(m);
  }
  return out;
}

ModelNeeds completion_needs(const CompletionRunOptions& o) {
  ModelNeeds n;
  n.llm = true;  // the generator
  for (const auto& m : method_labels(o)) n |= retriever_needs(parse_method_label(m).first, o.retriever);
  return n;
}

std::unique_ptr<Retriever> make_method(const std::string& label, const Engine& e, const Models& models,
                                       const CompletionRunOptions& o) {
  auto [name, k] = parse_method_label(label);
  RetrieverOptions ro = o.retriever;
  if (k >= 0) ro.completion.samples = k;
  return make_retriever(name, e, models, ro);
}

CompletionOutcome complete_at(const Engine& e, const Models& models, Retriever& retriever,
                              const std::shared_ptr<const CursorContext>& ctx, const CompletionRunOptions& o,
                              const std::string& kind) {
  CompletionOutcome out;
  auto t0 = std::chrono::steady_clock::now();
  RetrievalQuery q;
  q.cursor = ctx;
  q.top_k = o.top_k;
  RetrievalResult r = retriever.run(q);
  auto t1 = std::chrono::steady_clock::now();
  out.hits = std::move(r.hits);
  out.trace = std::move(r.trace);
  out.usage = r.usage;
  out.prompt = completion_prompt(e, *ctx, out.hits, o.retriever.completion).text;
  LlmBackend& llm = models.need_llm("code completion");
  MeteredBackend metered(llm);
  GenerateRequest g;
  g.prompt = out.prompt;
  g.max_tokens = kind == "function" ? 4 * o.max_tokens : o.max_tokens;
  g.seed = o.retriever.completion.seed;
  g.purpose = "complete";
  out.generated = metered.generate(g).choices.at(0).text;
  out.usage.add(metered.usage());
  out.retrieval_seconds = std::chrono::duration<double>(t1 - t0).count();
  out.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

namespace {

json hits_json(const Engine& e, const std::vector<Hit>& hits) {
  json a = json::array();
  for (const auto& h : hits)
    a.push_back(fmt::format("{} {}:{}-{}", h.label, e.view().files()[h.file].path, h.start_line, h.end_line));
  return a;
}

json run_one(const CompletionTask& t, const std::string& label, const CompletionRunOptions& o, const Models& models,
             const std::function<Engine&(const std::string&)>& engine_for,
             std::map<std::pair<std::string, std::string>, std::unique_ptr<Retriever>>& retrievers) {
  json rec = {{"task", t.id}, {"method", label}, {"benchmark", t.benchmark}, {"kind", t.kind}};
  if (!t.error.empty()) throw Error(ExitCode::bad_input, t.error);
  Engine& e = engine_for(t.repo);
  Cursor c = task_cursor(e, t);
  auto ctx = make_cursor_context(e, c);
  auto& r = retrievers[{t.repo, label}];
  if (!r) r = make_method(label, e, models, o);
  CompletionOutcome out = complete_at(e, models, *r, ctx, o, t.kind);
  rec["em"] = exact_match(out.generated, t.ground_truth) ? 1 : 0;
  rec["es"] = edit_similarity(out.generated, t.ground_truth);
  rec["prediction"] = sanitize_utf8(scored_prediction(out.generated, t.ground_truth));
  rec["ground_truth"] = sanitize_utf8(t.ground_truth);
  rec["generated"] = sanitize_utf8(out.generated.substr(0, 2000));
  rec["hits"] = hits_json(e, out.hits);
  rec["llm_calls"] = out.usage.total().calls;
  rec["llm_cached"] = out.usage.total().cached;
  rec["retrieval_seconds"] = out.retrieval_seconds;
  rec["seconds"] = out.seconds;
  if (!out.trace.is_null()) rec["trace"] = out.trace;
  return rec;
}

}  // namespace

int run_completion_eval(const std::vector<CompletionTask>& tasks, const CompletionRunOptions& o, const Models& models,
                        const std::function<Engine&(const std::string&)>& engine_for) {
  if (o.shards < 1 || o.shard < 0 || o.shard >= o.shards)
    throw Error(ExitCode::usage, fmt::format("--shard {}/{}: want i/n with 0 <= i < n", o.shard, o.shards));
  auto labels = method_labels(o);
  models.need_llm("complete-eval (the generator)");
  fs::create_directories(o.out_dir);
  std::string path = o.out_dir + "/results.jsonl";
  std::set<std::pair<std::string, std::string>> done;
  if (fs::exists(path))
    for (const auto& j : read_results(path))
      done.insert({j["task"].get<std::string>(), j["method"].get<std::string>()});
  std::ofstream results(path, std::ios::app);
  std::map<std::pair<std::string, std::string>, std::unique_ptr<Retriever>> retrievers;
  int written = 0;
  for (size_t ti = 0; ti < tasks.size(); ++ti) {
    if (static_cast<int>(ti % static_cast<size_t>(o.shards)) != o.shard) continue;
    const CompletionTask& t = tasks[ti];
    for (const auto& label : labels) {
      if (done.count({t.id, label})) continue;
      throw_if_interrupted("finished tasks are kept in " + path + "; re-run to resume");
      json rec;
      try {
        rec = run_one(t, label, o, models, engine_for, retrievers);
      } catch (const Error& err) {
        // A backend failure or Ctrl-C stops the run (re-run to resume); anything about the task is its result.
        if (err.code() == ExitCode::interrupted || err.code() == ExitCode::llm) throw;
        rec = {{"task", t.id},
               {"method", label},
               {"benchmark", t.benchmark.empty() ? std::string("unreadable") : t.benchmark},
               {"kind", t.kind},
               {"error", err.what()}};
        log_warn("{} [{}]: {}", t.id, label, err.what());
      }
      results << rec.dump(-1, ' ', false, json::error_handler_t::replace) << "\n" << std::flush;
      ++written;
      if (!o.quiet && !rec.contains("error"))
        log_info("{} [{}]: EM {} ES {:.3f}", t.id, label, rec["em"].get<int>(), rec["es"].get<double>());
    }
  }
  return written;
}

std::string completion_table(const std::vector<std::string>& dirs, bool csv) {
  std::map<std::pair<std::string, std::string>, json> last;  // (task, method) -> the last record
  std::vector<std::string> methods, benchmarks;
  for (const auto& d : dirs) {
    std::string p = d + "/results.jsonl";
    if (!fs::exists(p)) throw Error(ExitCode::not_found, "no results in '" + d + "' (results.jsonl missing)");
    for (auto& j : read_results(p)) {
      std::string m = j["method"].get<std::string>(), b = j.value("benchmark", std::string("?"));
      if (std::find(methods.begin(), methods.end(), m) == methods.end()) methods.push_back(m);
      if (std::find(benchmarks.begin(), benchmarks.end(), b) == benchmarks.end()) benchmarks.push_back(b);
      std::pair<std::string, std::string> key{j["task"].get<std::string>(), m};  // before j is moved from
      last[std::move(key)] = std::move(j);
    }
  }
  std::sort(benchmarks.begin(), benchmarks.end());
  struct Cell {
    int n = 0, errors = 0;
    double em = 0, es = 0;
  };
  std::map<std::string, std::map<std::string, Cell>> cells;
  for (const auto& [k, j] : last) {
    Cell& c = cells[k.second][j.value("benchmark", std::string("?"))];
    if (j.contains("error")) {
      ++c.errors;
      continue;
    }
    ++c.n;
    c.em += j.value("em", 0);
    c.es += j.value("es", 0.0);
  }
  // Columns: the benchmarks with a scored task (those with errors only are counted below the table).
  std::vector<std::string> scored_benchmarks;
  for (const auto& b : benchmarks)
    if (std::any_of(methods.begin(), methods.end(), [&](const std::string& m) { return cells[m][b].n > 0; }))
      scored_benchmarks.push_back(b);
  std::string s;
  if (csv) {
    s = "method,benchmark,tasks,errors,em,es\n";
    for (const auto& m : methods)
      for (const auto& b : benchmarks)
        if (cells[m].count(b)) {
          const Cell& c = cells[m][b];
          s += fmt::format("{},{},{},{},{:.2f},{:.2f}\n", m, b, c.n, c.errors, c.n ? 100 * c.em / c.n : 0.0,
                           c.n ? 100 * c.es / c.n : 0.0);
        }
    return s;
  }
  s = "| Method |";
  for (const auto& b : scored_benchmarks) s += fmt::format(" {} EM | {} ES |", b, b);
  s += " Average EM | Average ES |\n|---|";
  for (size_t i = 0; i < scored_benchmarks.size() + 1; ++i) s += "---|---|";
  s += "\n";
  for (const auto& m : methods) {
    s += "| " + m + " |";
    double sem = 0, ses = 0;
    int nb = 0;
    for (const auto& b : scored_benchmarks) {
      const Cell& c = cells[m][b];
      if (!c.n) {
        s += " - | - |";
        continue;
      }
      double em = 100 * c.em / c.n, es = 100 * c.es / c.n;
      s += fmt::format(" {:.2f} | {:.2f} |", em, es);
      sem += em, ses += es, ++nb;
    }
    s += nb ? fmt::format(" {:.2f} | {:.2f} |\n", sem / nb, ses / nb) : std::string(" - | - |\n");
  }
  s += "\nTasks scored per benchmark (errors):";
  for (const auto& b : benchmarks) {
    int n = 0, err = 0;
    for (const auto& m : methods) n = std::max(n, cells[m][b].n), err = std::max(err, cells[m][b].errors);
    s += fmt::format(" {} {} ({})", b, n, err);
  }
  return s + "\n";
}

}  // namespace repoctx
