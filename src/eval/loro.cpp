#include "eval/loro.h"

#include <fmt/core.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <numeric>

#include "util/cancel.h"
#include "util/error.h"

namespace repoctx {

StrategyScores score_structural_samples(const StructuralRepoSamples& s, const StructuralRanker& m,
                                        const std::vector<int>& ks, int depth, const RankCascade& cascade) {
  StrategyScores sc;
  sc.strategy = "structural";
  for (int k : ks) sc.recall[k] = 0;
  for (const auto& t : s.targets) {
    std::vector<std::vector<double>> rows = t.features;  // rank_pool lends the rows out while it scores
    std::vector<double> score = rank_pool(m, rows, cascade);
    std::vector<size_t> order(t.candidates.size());
    std::iota(order.begin(), order.end(), size_t{0});
    // Candidates are stored in the retriever's tie-break order, so a stable sort reproduces its ranking.
    std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return score[a] > score[b]; });
    if (order.size() > static_cast<size_t>(depth)) order.resize(static_cast<size_t>(depth));
    double denom = static_cast<double>(std::max<size_t>(1, t.oracle_size));
    for (int k : ks) {
      int found = 0;
      for (size_t i = 0; i < std::min<size_t>(static_cast<size_t>(k), order.size()); ++i) found += t.positive[order[i]];
      sc.recall[k] += found / denom;
    }
    for (size_t i = 0; i < order.size(); ++i)
      if (t.positive[order[i]]) {
        sc.mrr += 1.0 / static_cast<double>(i + 1);
        break;
      }
  }
  sc.targets = static_cast<int>(s.targets.size());
  if (sc.targets > 0) {
    for (auto& [k, r] : sc.recall) r /= sc.targets;
    sc.mrr /= sc.targets;
  }
  return sc;
}

namespace {

std::string repo_name(const std::string& root) {
  std::string r = root;
  while (r.size() > 1 && r.back() == '/') r.pop_back();
  auto slash = r.rfind('/');
  return slash == std::string::npos ? r : r.substr(slash + 1);
}

void pool_ceiling(const StructuralRepoSamples& s, LoroFold& f) {
  double recall = 0, size = 0;
  for (const auto& t : s.targets) {
    size_t in_pool = 0;
    for (char p : t.positive) in_pool += p ? 1 : 0;
    recall += static_cast<double>(in_pool) / static_cast<double>(std::max<size_t>(1, t.oracle_size));
    size += static_cast<double>(t.candidates.size());
  }
  double n = static_cast<double>(std::max<size_t>(1, s.targets.size()));
  f.pool_recall = recall / n;
  f.pool_size = size / n;
}

// One JSON line per target: repository, target, oracle size, and [label, features...] per candidate.
void write_samples(std::ofstream& out, const std::string& name, const StructuralRepoSamples& s) {
  for (const auto& t : s.targets) {
    nlohmann::json rows = nlohmann::json::array();
    for (size_t i = 0; i < t.candidates.size(); ++i) {
      nlohmann::json row = nlohmann::json::array({static_cast<int>(t.positive[i])});
      for (double x : t.features[i]) row.push_back(x);
      rows.push_back(std::move(row));
    }
    out << nlohmann::json{{"repo", name}, {"target", t.entity}, {"oracle", t.oracle_size}, {"rows", rows}}.dump()
        << "\n";
  }
}

}  // namespace

LoroReport run_loro(const std::vector<std::string>& repos,
                    const std::function<std::unique_ptr<Engine>(const std::string&)>& open, const Models& models,
                    const LoroOptions& o) {
  if (repos.size() < 2)
    throw Error(ExitCode::usage,
                "leave-one-repository-out needs at least two repositories (got " + std::to_string(repos.size()) + ")");
  TrainOptions to = o.train;
  to.samples = o.samples;
  to.seed = o.seed;
  to.include_tests = o.include_tests;
  EvalOptions eo;
  eo.samples = o.samples;
  eo.seed = o.seed;
  eo.include_tests = o.include_tests;
  eo.ks = o.ks;
  eo.depth = o.depth;
  eo.strategies = o.baselines;
  LoroReport rep;
  rep.ks = o.ks;
  std::vector<StructuralRepoSamples> samples;
  std::ofstream dump;
  if (!o.samples_out.empty()) {
    dump.open(o.samples_out, std::ios::binary);
    if (!dump) throw Error(ExitCode::bad_input, "cannot write '" + o.samples_out + "' (does its folder exist?)");
  }
  for (const auto& repo : repos) {
    throw_if_interrupted("nothing is written before the table");
    auto eng = open(repo);
    LoroFold f;
    f.repo = repo;
    f.name = repo_name(eng->view().root());
    samples.push_back(extract_structural_samples(*eng, to));
    if (!o.baselines.empty()) f.baselines = run_retrieval_eval(*eng, models, eo).scores;
    f.targets = static_cast<int>(samples.back().targets.size());
    pool_ceiling(samples.back(), f);
    if (dump.is_open()) write_samples(dump, f.name, samples.back());
    rep.folds.push_back(std::move(f));
  }
  for (size_t h = 0; h < samples.size(); ++h) {
    throw_if_interrupted("nothing is written before the table");
    std::vector<const StructuralRepoSamples*> train;
    for (size_t i = 0; i < samples.size(); ++i)
      if (i != h) train.push_back(&samples[i]);
    TrainReport tr;
    LoroFold& f = rep.folds[h];
    f.model = fit_structural_ranker(train, to, &tr);
    f.trained_on = tr.repos;
    f.train_targets = tr.targets;
    f.structural =
        score_structural_samples(samples[h], *f.model, o.ks, std::max(o.depth, o.ks.back()), o.train.params.cascade);
  }
  std::vector<const StructuralRepoSamples*> all;
  for (const auto& s : samples) all.push_back(&s);
  rep.all = fit_structural_ranker(all, to, &rep.all_report);
  return rep;
}

namespace {

// Strategy rows of a fold in table order: the baselines, then structural (LORO).
std::vector<const StrategyScores*> fold_rows(const LoroFold& f) {
  std::vector<const StrategyScores*> rows;
  for (const auto& b : f.baselines) rows.push_back(&b);
  rows.push_back(&f.structural);
  return rows;
}

std::string strategy_label(const StrategyScores& s) {
  return s.strategy == "structural" ? "structural (LORO)" : s.strategy;
}

}  // namespace

std::string loro_markdown(const LoroReport& r) {
  std::string out = "| repository | targets | pool ceiling | strategy |";
  for (int k : r.ks) out += fmt::format(" R@{} |", k);
  out += " MRR |\n|---|---|---|---|";
  for (size_t i = 0; i < r.ks.size(); ++i) out += "---|";
  out += "---|\n";
  std::vector<std::string> order;
  std::map<std::string, StrategyScores> mean;
  double ceiling = 0;
  for (const auto& f : r.folds) {
    ceiling += f.pool_recall;
    for (const StrategyScores* s : fold_rows(f)) {
      std::string label = strategy_label(*s);
      bool bold = s->strategy == "structural";
      out += fmt::format("| {} | {} | {:.3f} | {} |", f.name, f.targets, f.pool_recall,
                         bold ? "**" + label + "**" : label);
      for (int k : r.ks) out += fmt::format(" {:.3f} |", s->recall.count(k) ? s->recall.at(k) : 0.0);
      out += fmt::format(" {:.3f} |\n", s->mrr);
      if (!mean.count(label)) order.push_back(label);
      auto& m = mean[label];
      for (int k : r.ks) m.recall[k] += s->recall.count(k) ? s->recall.at(k) : 0.0;
      m.mrr += s->mrr;
      m.targets += 1;
    }
  }
  double n = static_cast<double>(std::max<size_t>(1, r.folds.size()));
  for (const auto& label : order) {
    const auto& m = mean[label];
    out += fmt::format("| **mean of {}** | | {:.3f} | {} |", m.targets, ceiling / n, label);
    for (int k : r.ks) out += fmt::format(" {:.3f} |", m.recall.at(k) / m.targets);
    out += fmt::format(" {:.3f} |\n", m.mrr / m.targets);
  }
  return out;
}

std::string loro_json(const LoroReport& r) {
  using nlohmann::json;
  auto scores = [&](const StrategyScores& s) {
    json j = {{"strategy", strategy_label(s)}, {"mrr", s.mrr}, {"targets", s.targets}};
    for (const auto& [k, v] : s.recall) j["recall@" + std::to_string(k)] = v;
    return j;
  };
  json folds = json::array();
  std::map<std::string, json> mean;
  std::vector<std::string> order;
  for (const auto& f : r.folds) {
    json fj = {{"repo", f.repo},
               {"name", f.name},
               {"targets", f.targets},
               {"pool_recall", f.pool_recall},
               {"pool_size", f.pool_size},
               {"trained_on", f.trained_on},
               {"train_targets", f.train_targets},
               {"strategies", json::array()}};
    for (const StrategyScores* s : fold_rows(f)) {
      json sj = scores(*s);
      fj["strategies"].push_back(sj);
      std::string label = strategy_label(*s);
      if (!mean.count(label)) {
        order.push_back(label);
        mean[label] = json{{"strategy", label}, {"mrr", 0.0}, {"repositories", 0}};
      }
      auto& m = mean[label];
      m["mrr"] = m["mrr"].get<double>() + s->mrr;
      m["repositories"] = m["repositories"].get<int>() + 1;
      for (const auto& [k, v] : s->recall) {
        std::string key = "recall@" + std::to_string(k);
        m[key] = (m.contains(key) ? m[key].get<double>() : 0.0) + v;
      }
    }
    folds.push_back(fj);
  }
  json means = json::array();
  for (const auto& label : order) {
    json m = mean[label];
    double n = m["repositories"].get<double>();
    for (auto& [key, v] : m.items())
      if (key == "mrr" || key.rfind("recall@", 0) == 0) v = v.get<double>() / n;
    means.push_back(m);
  }
  double ceiling = 0;
  for (const auto& f : r.folds) ceiling += f.pool_recall;
  return json{{"folds", folds},
              {"mean", means},
              {"pool_recall_mean", r.folds.empty() ? 0.0 : ceiling / static_cast<double>(r.folds.size())},
              {"all_model", r.all ? json::parse(r.all->provenance()) : json()}}
      .dump(1);
}

}  // namespace repoctx
