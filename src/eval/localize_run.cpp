// repoctx localize-eval and its table: every strategy on every task of a shard, one JSONL row per (task,
// strategy), resumable; the study's result table from the rows.
#include <fmt/core.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <memory>

#include "eval/localize.h"
#include "index/index.h"
#include "retrieve/study/corpus.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/log.h"
#include "util/text.h"

namespace fs = std::filesystem;
using nlohmann::json;

namespace repoctx {
namespace {

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

std::string default_cache_dir() {
  const char* home = std::getenv("HOME");
  return std::string(home ? home : "/tmp") + "/.cache/repoctx/study";
}

}  // namespace

PreparedTask prepare_localize_task(const LocalizeTask& t, const LocalizeEvalOptions& o, TaskEngineCache& cache) {
  PreparedTask p;
  if (!t.error.empty()) {
    p.error = t.error;
    return p;
  }
  std::string clone = find_clone(o.repos_dirs, t.repo);
  if (clone.empty()) {
    p.error = "no clone of " + t.repo + " under " + join(o.repos_dirs, ", ") + " (pass --repos DIR)";
    return p;
  }
  GitRepository git(clone);
  std::string base = t.base_commit;
  if (base.empty()) {
    auto c = git.resolve_commit(t.commit);
    if (!c) {
      p.error = "commit " + t.commit + " is not in " + t.repo;
      return p;
    }
    base = git.commit(*c).parent;
    if (base.empty()) {
      p.error = "commit " + t.commit + " has no parent to be the base";
      return p;
    }
  }
  auto resolved = git.resolve_commit(base);
  if (!resolved) {
    p.error = "base commit " + base + " is not in " + t.repo;
    return p;
  }
  p.base = *resolved;
  std::string patch = t.patch;
  if (patch.empty()) {
    auto c = git.resolve_commit(t.commit);
    if (!c) {
      p.error = "commit " + t.commit + " is not in " + t.repo;
      return p;
    }
    patch = git.diff(p.base, *c);
  }
  // libgit2 applies hunks only at their header's line; `git apply` (which made these patches) also at an
  // offset: place_hunks accepts what git accepts (without fuzz) and moves the gold lines to where they are.
  std::string why;
  auto files = parse_unified_diff(patch);
  if (!git.patch_applies(p.base, patch, &why)) {
    if (std::string placed = place_hunks(files, [&](const std::string& path) { return git.read_file(p.base, path); });
        !placed.empty()) {
      p.error = placed + " (" + why + ")";
      return p;
    }
  } else {
    place_hunks(files, [&](const std::string& path) { return git.read_file(p.base, path); });
  }
  p.gold = gold_lines(files);
  p.tree = git.tree_id(p.base);
  if (cache.tree == p.tree) {
    p.engine = cache.engine;
    return p;
  }
  std::string root = o.cache_dir.empty() ? default_cache_dir() : o.cache_dir;
  auto t0 = std::chrono::steady_clock::now();
  IndexOptions io;
  io.progress = false;
  IndexStats st;
  std::string db = index_at_commit(git, p.base, root, io, &st);
  if (st.parsed > 0) p.index_seconds = seconds_since(t0);
  p.engine = std::shared_ptr<Engine>(Engine::open(db));
  cache = {p.tree, p.engine};
  return p;
}

namespace {

std::set<std::string> done_pairs(const std::string& dir) {
  std::set<std::string> done;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return done;
  for (const auto& ent : fs::directory_iterator(dir, ec)) {
    std::string name = ent.path().filename().string();
    if (!starts_with(name, "results-") || !ends_with(name, ".jsonl")) continue;
    std::ifstream in(ent.path());
    for (std::string line; std::getline(in, line);) {
      json r = json::parse(line, nullptr, false);  // a line cut by a kill is simply redone
      if (r.is_object() && r.contains("task") && r.contains("strategy"))
        done.insert(r["task"].get<std::string>() + "\t" + r["strategy"].get<std::string>());
    }
  }
  return done;
}

json prf_json(const Prf& m) {
  return {{"p", m.p}, {"r", m.r}, {"f1", m.f1}};
}

json run_one_sample(const LocalizeTask& t, const PreparedTask& p, const std::string& strategy,
                    const LocalizeEvalOptions& o, const Models& models) {
  json row = {{"task", t.id},
              {"dataset", t.dataset},
              {"repo", t.repo},
              {"strategy", strategy},
              {"entity_rule", entity_rule_name(o.entity_rule)}};
  if (!p.error.empty()) {
    row["error"] = p.error;
    row["error_stage"] = "task";  // the task could not be set up (its repository): no strategy ran
    return row;
  }
  row["index_seconds"] = p.index_seconds;
  auto t0 = std::chrono::steady_clock::now();
  try {
    RetrievalQuery q;
    q.text = t.request;
    RetrievalResult res = make_retriever(strategy, *p.engine, models, o.retriever)->run(q);
    TaskScore s = score_task(p.engine->view(), p.gold, res.hits, o.entity_rule);
    row["seconds"] = seconds_since(t0);
    HitRankings rk = rankings_of_hits(p.engine->view(), res.hits, o.entity_rule);
    json ranked = json::object();
    for (size_t k : {1, 3, 5, 10}) {
      ranked["file@" + std::to_string(k)] = prf_json(prf_at(s.gold_files, rk.files, k));
      ranked["entity@" + std::to_string(k)] = prf_json(prf_at(s.gold_entities, rk.entities, k));
    }
    row["ranked"] = ranked;
    row["file_ranking"] = std::vector<std::string>(
        rk.files.begin(), rk.files.begin() + std::min<long>(10, static_cast<long>(rk.files.size())));
    row["entity_ranking"] = std::vector<std::string>(
        rk.entities.begin(), rk.entities.begin() + std::min<long>(10, static_cast<long>(rk.entities.size())));
    row["gold_entity_names"] = s.gold_entities;
    row["file"] = prf_json(s.file);
    row["entity"] = prf_json(s.entity);
    row["context_tokens"] = res.trace.is_object() ? res.trace.value("context_tokens", 0) : 0;
    row["stop_reason"] = res.trace.is_object() ? res.trace.value("stop_reason", "") : "";
    row["gold_files"] = s.gold_files;
    // Gold files the strategy cannot reach bound its file recall: the study's BM25 and ReAct agents read
    // their corpus (every text file by default), the others the indexed source files.
    bool reads_corpus = strategy == "study-bm25" || starts_with(strategy, "react-");
    const StudyCorpus* corpus = reads_corpus ? &study_corpus(*p.engine, o.retriever.study.corpus) : nullptr;
    json outside = json::array();
    for (const auto& f : s.gold_files)
      if (corpus ? !corpus->find(f) : !p.engine->view().file_by_path(f)) outside.push_back(f);
    row["gold_files_out_of_reach"] = outside;
    row["files"] = s.files;
    row["gold_entities"] = s.gold_entities.size();
    row["entities"] = s.entities.size();
    row["llm_usage"] = res.usage.to_json();
    if (o.write_traces && res.trace.is_object()) {
      std::string safe = t.id;
      for (char& c : safe)
        if (c == '/' || c == ' ') c = '_';
      fs::create_directories(o.out_dir + "/traces/" + strategy);
      std::ofstream(o.out_dir + "/traces/" + strategy + "/" + safe + ".json")
          << res.trace.dump(1, ' ', false, json::error_handler_t::replace) << "\n";
    }
  } catch (const Error& e) {
    if (e.code() == ExitCode::interrupted) throw;
    row["error"] = e.what();
    row["error_stage"] = "strategy";
    row["seconds"] = seconds_since(t0);
  }
  return row;
}

}  // namespace

size_t run_localize_eval(const std::vector<LocalizeTask>& tasks, const LocalizeEvalOptions& o, const Models& models) {
  if (o.shards < 1 || o.shard < 0 || o.shard >= o.shards)
    throw Error(ExitCode::usage,
                fmt::format("--shard {}/{} is not a shard (use i/n with 0 <= i < n)", o.shard, o.shards));
  std::error_code ec;
  fs::create_directories(o.out_dir, ec);
  if (ec) throw Error(ExitCode::bad_input, "cannot create the output folder '" + o.out_dir + "': " + ec.message());
  auto done = done_pairs(o.out_dir);
  std::string path = fmt::format("{}/results-{}of{}.jsonl", o.out_dir, o.shard, o.shards);
  std::ofstream out(path, std::ios::app);
  if (!out) throw Error(ExitCode::bad_input, "cannot write '" + path + "'");
  TaskEngineCache cache;
  size_t written = 0, taken = 0;
  for (size_t i = 0; i < tasks.size(); ++i) {
    if (static_cast<int>(i % static_cast<size_t>(o.shards)) != o.shard) continue;
    if (o.max_tasks && taken >= o.max_tasks) break;
    ++taken;
    const LocalizeTask& t = tasks[i];
    std::vector<std::string> todo;
    for (const auto& s : o.strategies)
      if (!done.count(t.id + "\t" + s)) todo.push_back(s);
    if (todo.empty()) continue;
    throw_if_interrupted("finished tasks are in " + path + "; re-run to resume");
    PreparedTask p;
    try {
      p = prepare_localize_task(t, o, cache);
    } catch (const Error& e) {
      if (e.code() == ExitCode::interrupted) throw;
      p.error = e.what();
    }
    for (const auto& s : todo) {
      json row = run_one_sample(t, p, s, o, models);
      out << row.dump(-1, ' ', false, json::error_handler_t::replace) << "\n";
      out.flush();
      ++written;
      log_info("{} {}: {}", t.id, s,
               row.contains("error")
                   ? "error: " + row["error"].get<std::string>()
                   : fmt::format("file F1 {:.2f}, entity F1 {:.2f}, {} tokens", row["file"]["f1"].get<double>(),
                                 row["entity"]["f1"].get<double>(), row["context_tokens"].get<int>()));
    }
  }
  return written;
}

// ------------------------------------------------------------------------------------------- table
namespace {

// A row whose task could not be set up (its repository missing) is skipped: no strategy ran on it. A row whose
// strategy failed counts as an empty retrieval (zero precision, recall and context), so that a strategy that
// fails often is not averaged over its successes alone.
bool skipped_row(const json& r) {
  return r.contains("error") && r.value("error_stage", "strategy") == "task";
}

struct Acc {
  int n = 0, errors = 0, skipped = 0;
  int recall_rows = 0;        // rows that list their gold files not indexed
  double recall_ceiling = 0;  // sum over those rows of the share of gold files the strategy can reach
  double fp = 0, fr = 0, ff = 0, ep = 0, er = 0, ef = 0, cl = 0, seconds = 0, index_seconds = 0;
  int indexed = 0;  // tasks whose index was built by this run (the others found it cached)
  void add(const json& r) {
    if (r.value("index_seconds", 0.0) > 0) {
      index_seconds += r["index_seconds"].get<double>();
      ++indexed;
    }
    if (skipped_row(r)) {
      ++skipped;
      return;
    }
    ++n;
    seconds += r.value("seconds", 0.0);
    if (r.contains("error")) {
      ++errors;
      return;
    }
    if (r.contains("gold_files_out_of_reach") && r.contains("gold_files") && !r["gold_files"].empty()) {
      double total = static_cast<double>(r["gold_files"].size());
      recall_ceiling += (total - static_cast<double>(r["gold_files_out_of_reach"].size())) / total;
      ++recall_rows;
    }
    fp += r["file"]["p"].get<double>();
    fr += r["file"]["r"].get<double>();
    ff += r["file"]["f1"].get<double>();
    ep += r["entity"]["p"].get<double>();
    er += r["entity"]["r"].get<double>();
    ef += r["entity"]["f1"].get<double>();
    cl += r.value("context_tokens", 0);
  }
  std::string cells() const {
    if (n == 0) return fmt::format("| – | – | – | – | – | – | – | 0 | 0 | {} |", skipped);
    double k = n;
    return fmt::format("| {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.0f} | {} | {} | {} |", fp / k,
                       fr / k, ff / k, ep / k, er / k, ef / k, cl / k, n, errors, skipped);
  }
  // Mean seconds per task of the strategy, and mean seconds of an index build (materialising the tree
  // included) over the tasks that built one.
  std::string times() const {
    return fmt::format(" {:.2f} | {} |", n ? seconds / n : 0.0,
                       indexed ? fmt::format("{:.1f} ({} built)", index_seconds / indexed, indexed) : "cached");
  }
};

// Ranked metrics: macro averages of files P/F1@1, files R@5/R@10, entities P/R/F1@3 and R@10 over
// the tasks whose rows carry rankings.
struct RankAcc {
  int n = 0;
  double fp1 = 0, ff1 = 0, fr5 = 0, fr10 = 0, ep3 = 0, er3 = 0, ef3 = 0, er10 = 0;
  void add(const json& r) {
    if (skipped_row(r)) return;
    if (r.contains("error")) {
      ++n;  // an empty ranking: zero at every cut-off
      return;
    }
    if (!r.contains("ranked")) return;
    const json& k = r["ranked"];
    ++n;
    fp1 += k["file@1"]["p"].get<double>();
    ff1 += k["file@1"]["f1"].get<double>();
    fr5 += k["file@5"]["r"].get<double>();
    fr10 += k["file@10"]["r"].get<double>();
    ep3 += k["entity@3"]["p"].get<double>();
    er3 += k["entity@3"]["r"].get<double>();
    ef3 += k["entity@3"]["f1"].get<double>();
    er10 += k["entity@10"]["r"].get<double>();
  }
  std::string cells() const {
    if (n == 0) return "| – | – | – | – | – | – | – | – | 0 |";
    double k = n;
    return fmt::format("| {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {:.3f} | {} |", fp1 / k,
                       ff1 / k, fr5 / k, fr10 / k, ep3 / k, er3 / k, ef3 / k, er10 / k, n);
  }
};

const char* const kRankedHead =
    "| Files P@1 | Files F1@1 | Files R@5 | Files R@10 | Entities P@3 | Entities R@3 | Entities F1@3 | "
    "Entities R@10 | tasks |\n";
const char* const kRankedRule = "|---|---|---|---|---|---|---|---|---|";

std::pair<std::string, std::string> axes(const std::string& s) {
  if (s == "study-bm25") return {"BM25", "Baseline"};
  if (s == "acr") return {"ACR Tools", "ACR"};
  if (starts_with(s, "react-")) {
    std::string tools = s.substr(6, s.rfind('-') - 6), crit = s.substr(s.rfind('-') + 1);
    for (char& c : crit) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
    return {tools == "bm25" ? "BM25" : "ACR Tools", "ReAct + " + crit};
  }
  return {s, "-"};
}

int strategy_rank(const std::string& s) {
  static const std::vector<std::string> order = {
      "files-bm25",    "locate",       "study-bm25",   "react-bm25-cl", "react-bm25-tc",
      "react-bm25-sr", "react-acr-cl", "react-acr-tc", "react-acr-sr",  "acr"};
  auto it = std::find(order.begin(), order.end(), s);
  return it == order.end() ? 100 : static_cast<int>(it - order.begin());
}

}  // namespace

namespace {

std::string ranked_section(const std::string& ds, const std::map<std::pair<int, std::string>, RankAcc>& strategies,
                           const std::map<std::string, std::map<std::pair<int, std::string>, RankAcc>>& repos) {
  bool any = false;
  for (const auto& [key, acc] : strategies) any = any || acc.n > 0;
  if (!any) return "";
  std::string out = "#### " + ds + " ranked: file and entity rankings at cut-offs (macro average over tasks)\n\n";
  out += std::string("| Strategy ") + kRankedHead + "|---" + kRankedRule + "\n";
  for (const auto& [key, acc] : strategies)
    if (acc.n) out += "| " + key.second + " " + acc.cells() + "\n";
  out += "\n##### " + ds + " ranked, per repository\n\n| Repository | Strategy " + kRankedHead + "|---|---" +
         kRankedRule + "\n";
  for (const auto& [repo, by_strategy] : repos)
    for (const auto& [key, acc] : by_strategy)
      if (acc.n) out += "| " + repo + " | " + key.second + " " + acc.cells() + "\n";
  return out + "\n";
}

}  // namespace

std::string localize_table(const std::string& dir) {
  std::map<std::string, std::map<std::pair<int, std::string>, Acc>> by_ds;
  std::map<std::string, std::map<std::string, std::map<std::pair<int, std::string>, Acc>>> by_repo;
  std::map<std::string, std::map<std::pair<int, std::string>, RankAcc>> ranked_ds;
  std::map<std::string, std::map<std::string, std::map<std::pair<int, std::string>, RankAcc>>> ranked_repo;
  std::map<std::string, std::set<std::string>> rules;  // entity rules per dataset (a row without one: enclosing)
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) throw Error(ExitCode::not_found, "no results folder '" + dir + "'");
  size_t rows = 0;
  for (const auto& ent : fs::directory_iterator(dir, ec)) {
    std::string name = ent.path().filename().string();
    if (!starts_with(name, "results-") || !ends_with(name, ".jsonl")) continue;
    std::ifstream in(ent.path());
    for (std::string line; std::getline(in, line);) {
      json r = json::parse(line, nullptr, false);
      if (!r.is_object() || !r.contains("strategy")) continue;
      std::string s = r["strategy"].get<std::string>();
      std::pair<int, std::string> key{strategy_rank(s), s};
      by_ds[r.value("dataset", "")][key].add(r);
      by_repo[r.value("dataset", "")][r.value("repo", "")][key].add(r);
      ranked_ds[r.value("dataset", "")][key].add(r);
      ranked_repo[r.value("dataset", "")][r.value("repo", "")][key].add(r);
      rules[r.value("dataset", "")].insert(r.value("entity_rule", "enclosing"));
      ++rows;
    }
  }
  if (rows == 0) throw Error(ExitCode::not_found, "no results-*.jsonl rows in '" + dir + "'");
  std::string head =
      "| Tools | Reasoning | File P | File R | File F1 | Entity P | Entity R | Entity F1 | Avg. CL | tasks | errors | "
      "skipped |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|---|\n";
  std::string out;
  for (const auto& [ds, strategies] : by_ds) {
    std::string rule;
    for (const auto& name : rules[ds]) rule += (rule.empty() ? "" : " and ") + name;
    if (rules[ds].size() > 1) rule += ": mixed rows, re-run into a fresh folder";
    out += "### " + ds + " (macro average over tasks; entities: " + rule + ")\n\n" + head;
    std::string ceilings;
    for (const auto& [key, acc] : strategies) {
      auto [tools, reasoning] = axes(key.second);
      out += "| " + tools + " | " + reasoning + " " + acc.cells() + "\n";
      if (acc.recall_rows)
        ceilings +=
            fmt::format("{}{} {:.3f}", ceilings.empty() ? "" : ", ", key.second, acc.recall_ceiling / acc.recall_rows);
    }
    if (!ceilings.empty())
      out +=
          "\nFile recall ceiling (the mean share of a task's gold files the strategy can reach: the study's "
          "BM25 and ReAct agents read every text file, the others the indexed source files): " +
          ceilings + ".\n";
    out += "\n#### " + ds +
           " per repository\n\n| Repository | Strategy | File P | File R | File F1 | Entity P | "
           "Entity R | Entity F1 | Avg. CL | tasks | errors | skipped | s/task | index s |\n"
           "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n";
    for (const auto& [repo, strategies2] : by_repo[ds])
      for (const auto& [key, acc] : strategies2)
        out += "| " + repo + " | " + key.second + " " + acc.cells() + acc.times() + "\n";
    out += "\n";
    out += ranked_section(ds, ranked_ds[ds], ranked_repo[ds]);
  }
  return out;
}

}  // namespace repoctx
