#include "eval/completion_retrieval.h"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <map>
#include <random>

#include <fmt/format.h>

#include "retrieve/aligncoder/encoder.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/log.h"
#include "util/progress.h"

namespace repoctx {

using nlohmann::json;

const std::vector<std::string>& retrieval_eval_methods() {
  static const std::vector<std::string> m = {"bm25",       "bm25-oracle",       "reacc",          "rlcoder",
                                             "aligncoder", "aligncoder-oracle", "untrained",      "untrained-oracle",
                                             "in-file",    "cursor-deps",       "imports-recency"};
  return m;
}

bool hit_contains(const Engine& e, const Hit& h, int entity) {
  const EntityRec& en = e.view().entities()[entity];
  if (h.label == "dependency") return !en.signature.empty() && h.text.find(en.signature) != std::string::npos;
  return h.file == en.file && h.start_line <= en.start_line && en.start_line <= h.end_line;
}

namespace {

struct Variant {
  std::string strategy;
  bool oracle = false;
  std::string model_path;  // "" = options' model file
};

Variant variant_of(const std::string& m) {
  if (m == "bm25") return {"aligncoder-snippets", false, ""};
  if (m == "bm25-oracle") return {"aligncoder-snippets", true, ""};
  if (m == "reacc") return {"reacc", false, ""};
  if (m == "rlcoder") return {"rlcoder", false, ""};
  if (m == "aligncoder") return {"aligncoder", false, ""};
  if (m == "aligncoder-oracle") return {"aligncoder", true, ""};
  if (m == "untrained") return {"aligncoder", false, "untrained"};
  if (m == "untrained-oracle") return {"aligncoder", true, "untrained"};
  if (m == "in-file") return {"in-file", false, ""};  // the completed file's own snippets (IV-B's In-File)
  if (m == "cursor-deps") return {"cursor-deps", false, ""};
  if (m == "imports-recency") return {"imports-recency", false, ""};
  // aligncoder@FILE, aligncoder-oracle@FILE: another model file in the same (paired) run.
  for (std::string_view prefix : {"aligncoder@", "aligncoder-oracle@"})
    if (m.size() > prefix.size() && m.compare(0, prefix.size(), prefix) == 0)
      return {"aligncoder", prefix == "aligncoder-oracle@", m.substr(prefix.size())};
  std::string names;
  for (const auto& x : retrieval_eval_methods()) names += (names.empty() ? "" : ", ") + x;
  throw Error(ExitCode::usage, "unknown retrieval-eval method '" + m + "' (methods: " + names + ")");
}

std::vector<int> definition_entities(const Engine& e, const CompletionTask& t) {
  std::vector<int> out;
  for (const auto& d : t.definitions) {
    size_t sep = d.find("::");
    if (sep == std::string::npos) continue;
    auto f = e.view().file_by_path(d.substr(0, sep));
    if (!f) continue;
    for (int x : e.view().find_entities(*f, d.substr(sep + 2))) out.push_back(x);
  }
  return out;
}

// Shares, MRR and paired differences with bootstrap intervals over the tasks (rows) of one group.
// rank[task][method]: the 1-based rank of the first hit that contains a definition, 0 when none does.
std::vector<MethodScore> score_group(const std::vector<std::string>& methods, const std::vector<std::vector<int>>& rank,
                                     const std::vector<std::vector<double>>& ms, size_t base, int rounds,
                                     uint64_t seed) {
  const size_t n = rank.size();
  auto rr = [&](size_t row, size_t m) { return rank[row][m] > 0 ? 1.0 / rank[row][m] : 0.0; };
  std::vector<MethodScore> out;
  std::mt19937_64 g(seed);
  std::vector<std::vector<double>> share_s(methods.size()), diff_s(methods.size()), mrr_s(methods.size());
  for (int b = 0; b < rounds && n > 0; ++b) {
    std::vector<int> count(methods.size(), 0);
    std::vector<double> rsum(methods.size(), 0);
    for (size_t i = 0; i < n; ++i) {
      size_t row = g() % n;
      for (size_t m = 0; m < methods.size(); ++m) count[m] += rank[row][m] > 0, rsum[m] += rr(row, m);
    }
    for (size_t m = 0; m < methods.size(); ++m) {
      share_s[m].push_back(static_cast<double>(count[m]) / static_cast<double>(n));
      diff_s[m].push_back(static_cast<double>(count[m] - count[base]) / static_cast<double>(n));
      mrr_s[m].push_back(rsum[m] / static_cast<double>(n));
    }
  }
  auto pct = [](std::vector<double>& v, double q) {
    if (v.empty()) return 0.0;
    std::sort(v.begin(), v.end());
    return v[static_cast<size_t>(q * static_cast<double>(v.size() - 1) + 0.5)];
  };
  for (size_t m = 0; m < methods.size(); ++m) {
    MethodScore s;
    s.method = methods[m];
    s.tasks = static_cast<int>(n);
    for (size_t i = 0; i < n; ++i) {
      s.hits += rank[i][m] > 0;
      s.diff += (rank[i][m] > 0) - (rank[i][base] > 0);
      s.mrr += rr(i, m);
    }
    s.share = n ? static_cast<double>(s.hits) / static_cast<double>(n) : 0;
    s.diff = n ? s.diff / static_cast<double>(n) : 0;
    s.mrr = n ? s.mrr / static_cast<double>(n) : 0;
    s.lo = pct(share_s[m], 0.025), s.hi = pct(share_s[m], 0.975);
    s.diff_lo = pct(diff_s[m], 0.025), s.diff_hi = pct(diff_s[m], 0.975);
    s.mrr_lo = pct(mrr_s[m], 0.025), s.mrr_hi = pct(mrr_s[m], 0.975);
    std::vector<double> lat;
    for (size_t i = 0; i < n; ++i) lat.push_back(ms[i][m]);
    s.p50_ms = pct(lat, 0.5);
    out.push_back(s);
  }
  return out;
}

// The methods' variants; a model file that cannot be read fails the run here, not every task one by one,
// and so does a method whose model this build lacks (aligncoder and rlcoder each have their own).
std::vector<Variant> checked_variants(const RetrievalEvalOptions& o) {
  std::vector<Variant> variants;
  for (const auto& m : o.methods) variants.push_back(variant_of(m));
  for (const auto& v : variants)
    if (!v.model_path.empty() && v.model_path != "untrained") load_align_encoder(v.model_path);
  for (const auto& v : variants)
    if (v.model_path.empty()) {
      if (v.strategy == "aligncoder") load_align_encoder(o.retriever.completion.model_path, "aligncoder");
      if (v.strategy == "rlcoder") load_align_encoder(o.retriever.completion.rlcoder_model_path, "rlcoder");
    }
  return variants;
}

// Variant `v`'s query for task `t` at cursor `ctx`: the oracles see the ground-truth line.
RetrievalQuery variant_query(const Variant& v, const std::shared_ptr<const CursorContext>& ctx, const CompletionTask& t,
                             int top_k, int query_lines) {
  RetrievalQuery q;
  q.cursor = ctx;
  q.top_k = top_k;
  if (v.oracle && v.strategy == "aligncoder") q.drafts = {t.ground_truth};
  if (v.oracle && v.strategy != "aligncoder")
    q.text = query_window(ctx->unfinished, query_lines) + "\n" + t.ground_truth;
  return q;
}

// The 1-based rank of the first of `hits` (within top_k) that contains one of `defs`, 0 when none does; with
// `dump`, every hit that has features is written to it as a JSON line.
int first_definition_rank(const Engine& e, const CompletionTask& t, const std::string& method,
                          const std::vector<Hit>& hits, const std::vector<int>& defs, int top_k, std::ofstream* dump) {
  int first = 0;
  for (size_t k = 0; k < hits.size(); ++k) {
    bool contains = false;
    for (int d : defs) contains = contains || hit_contains(e, hits[k], d);
    if (contains && first == 0 && (top_k <= 0 || static_cast<int>(k) < top_k)) first = static_cast<int>(k) + 1;
    if (dump && !hits[k].features.empty())
      *dump << json{{"task", t.id},
                    {"benchmark", t.benchmark},
                    {"method", method},
                    {"rank", k + 1},
                    {"label", hits[k].label},
                    {"contains", contains},
                    {"features", hits[k].features}}
                   .dump()
            << "\n";
  }
  return first;
}

// The scores of the tasks of each benchmark apart (group[i]: task row i's benchmark).
void score_benchmarks(RetrievalEvalReport& rep, const RetrievalEvalOptions& o, const std::vector<std::vector<int>>& ok,
                      const std::vector<std::vector<double>>& ms, const std::vector<std::string>& group, size_t base) {
  std::map<std::string, std::vector<size_t>> rows;
  for (size_t i = 0; i < group.size(); ++i) rows[group[i]].push_back(i);
  for (const auto& [b, idx] : rows) {
    std::vector<std::vector<int>> gok;
    std::vector<std::vector<double>> gms;
    for (size_t i : idx) gok.push_back(ok[i]), gms.push_back(ms[i]);
    rep.by_benchmark[b] = score_group(o.methods, gok, gms, base, o.bootstrap, o.seed);
  }
}

}  // namespace

RetrievalEvalReport run_completion_retrieval_eval(const std::vector<CompletionTask>& tasks,
                                                  const RetrievalEvalOptions& o, const Models& models,
                                                  const std::function<Engine&(const std::string&)>& engine_for) {
  const std::vector<Variant> variants = checked_variants(o);
  auto base_it = std::find(o.methods.begin(), o.methods.end(), o.baseline);
  if (base_it == o.methods.end())
    throw Error(ExitCode::usage, "the baseline '" + o.baseline + "' is not among --methods");
  size_t base = static_cast<size_t>(base_it - o.methods.begin());
  RetrieverOptions ro = o.retriever;
  if (ro.completion.dependency_snippets < 0) ro.completion.dependency_snippets = 1;
  ro.completion.candidates = "none";  // no sampling: candidates are the oracle's or none
  std::map<std::pair<std::string, size_t>, std::unique_ptr<Retriever>> made;
  std::vector<std::vector<int>> ok;
  std::vector<std::vector<double>> ms;
  std::unique_ptr<std::ofstream> dump;
  if (!o.dump_hits.empty()) {
    dump = std::make_unique<std::ofstream>(o.dump_hits);
    if (!*dump) throw Error(ExitCode::failure, "cannot write " + o.dump_hits);
  }
  std::vector<std::string> group;
  RetrievalEvalReport rep;
  if (!models.embedder && std::find(o.methods.begin(), o.methods.end(), "reacc") != o.methods.end())
    rep.notes.push_back(
        "reacc: no embedding model is configured (--embed-model / --embed-endpoint), so its row is ReACC's BM25 "
        "half only");
  Progress prog("retrieval eval", tasks.size());
  for (const auto& t : tasks) {
    throw_if_interrupted("nothing is written before the end of the run");
    prog.add();
    if (!t.error.empty() || t.definitions.empty()) {
      ++rep.skipped;
      continue;
    }
    try {
      Engine& e = engine_for(t.repo);
      auto ctx = make_cursor_context(e, task_cursor(e, t));
      auto defs = definition_entities(e, t);
      if (defs.empty()) throw Error(ExitCode::not_found, "definitions not in the index");
      std::vector<int> row;
      std::vector<double> lat;
      for (size_t m = 0; m < variants.size(); ++m) {
        auto& r = made[{t.repo, m}];
        if (!r) {
          RetrieverOptions vo = ro;
          if (!variants[m].model_path.empty()) vo.completion.model_path = variants[m].model_path;
          r = make_retriever(variants[m].strategy, e, models, vo);
        }
        RetrievalQuery q = variant_query(variants[m], ctx, t, o.top_k, ro.completion.query_lines);
        auto t0 = std::chrono::steady_clock::now();
        auto hits = r->retrieve(q);
        lat.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
        row.push_back(first_definition_rank(e, t, o.methods[m], hits, defs, o.top_k, dump.get()));
      }
      ok.push_back(std::move(row));
      ms.push_back(std::move(lat));
      group.push_back(t.benchmark);
    } catch (const Error& err) {
      if (err.code() == ExitCode::interrupted || err.code() == ExitCode::llm || err.code() == ExitCode::usage) throw;
      log_warn("{}: {}", t.id, err.what());
      ++rep.skipped;
    }
  }
  prog.finish();
  rep.tasks = static_cast<int>(ok.size());
  rep.overall = score_group(o.methods, ok, ms, base, o.bootstrap, o.seed);
  score_benchmarks(rep, o, ok, ms, group, base);
  return rep;
}

json RetrievalEvalReport::to_json() const {
  auto arr = [](const std::vector<MethodScore>& v) {
    json a = json::array();
    for (const auto& s : v)
      a.push_back({{"method", s.method},
                   {"tasks", s.tasks},
                   {"hits", s.hits},
                   {"share", s.share},
                   {"ci95", {s.lo, s.hi}},
                   {"mrr", s.mrr},
                   {"mrr_ci95", {s.mrr_lo, s.mrr_hi}},
                   {"diff_to_baseline", s.diff},
                   {"diff_ci95", {s.diff_lo, s.diff_hi}},
                   {"p50_ms", s.p50_ms}});
    return a;
  };
  json j = {{"tasks", tasks},
            {"skipped", skipped},
            {"overall", arr(overall)},
            {"by_benchmark", json::object()},
            {"notes", notes}};
  for (const auto& [b, v] : by_benchmark) j["by_benchmark"][b] = arr(v);
  return j;
}

std::string RetrievalEvalReport::table() const {
  std::string s =
      "| method | tasks | contains a called definition (top-k) | 95% CI | MRR | 95% CI | vs baseline | 95% CI | p50 ms "
      "|\n"
      "|---|---|---|---|---|---|---|---|---|\n";
  auto rows = [&](const std::vector<MethodScore>& v, const std::string& prefix) {
    for (const auto& m : v)
      s += fmt::format(
          "| {}{} | {} | {:.1f}% | {:.1f}-{:.1f} | {:.3f} | {:.3f}-{:.3f} | {:+.1f} | {:+.1f} to {:+.1f} | "
          "{:.2f} |\n",
          prefix, m.method, m.tasks, 100 * m.share, 100 * m.lo, 100 * m.hi, m.mrr, m.mrr_lo, m.mrr_hi, 100 * m.diff,
          100 * m.diff_lo, 100 * m.diff_hi, m.p50_ms);
  };
  rows(overall, "");
  for (const auto& [b, v] : by_benchmark) rows(v, b + ": ");
  s += fmt::format("\n{} tasks scored, {} skipped (no definitions, errors)\n", tasks, skipped);
  for (const auto& n : notes) s += "note: " + n + "\n";
  return s;
}

}  // namespace repoctx
