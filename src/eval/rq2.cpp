#include "eval/rq2.h"

#include <fmt/core.h>

#include <cmath>
#include <fstream>
#include <set>

#include <nlohmann/json.hpp>

#include "util/error.h"
#include "util/text.h"

namespace repoctx {

using json = nlohmann::json;

std::vector<Rq2Config> rq2_paper_configs() {
  return {{"A", 0.60, 2}, {"B", 0.65, 2}, {"C", 0.65, 3}, {"D", 0.70, 2}, {"E", 0.70, 3}, {"F", 0.80, 2}};
}

namespace {

// Calls fn(line_number, object) for every non-blank line; everything else is a bad_input error naming
// the file and the line, so that a hand-edited labels file is fixable from the message alone.
template <class Fn>
void for_each_jsonl(const std::string& path, const char* what, Fn fn) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error(ExitCode::not_found, fmt::format("cannot read the {} file '{}' (check the path)", what, path));
  int n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (trim(line).empty()) continue;
    json j = json::parse(line, nullptr, false);
    if (j.is_discarded() || !j.is_object())
      throw Error(ExitCode::bad_input,
                  fmt::format("{}:{}: not a JSON object; the {} file holds one object per line", path, n, what));
    fn(n, j);
  }
}

std::string string_field(const json& j, const char* key, const std::string& path, int line, bool required) {
  auto it = j.find(key);
  if (it == j.end() || it->is_null()) {
    if (required) throw Error(ExitCode::bad_input, fmt::format("{}:{}: missing \"{}\" (a string)", path, line, key));
    return {};
  }
  if (!it->is_string())
    throw Error(ExitCode::bad_input, fmt::format("{}:{}: \"{}\" must be a string", path, line, key));
  return it->get<std::string>();
}

double ratio(int num, int den) {
  return den > 0 ? static_cast<double>(num) / den : 0.0;
}

Rq2Group group(int pairs, int true_positives, int class_total) {
  Rq2Group g;
  g.pairs = pairs;
  g.true_positives = true_positives;
  g.class_total = class_total;
  g.precision = ratio(true_positives, pairs);
  g.recall = ratio(true_positives, class_total);
  g.f1 = g.precision + g.recall > 0 ? 2 * g.precision * g.recall / (g.precision + g.recall) : 0.0;
  return g;
}

// "9,598": the paper's thousands separator.
std::string thousands(int v) {
  std::string s = std::to_string(v < 0 ? -v : v), out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
    out += s[i];
  }
  return v < 0 ? "-" + out : out;
}

}  // namespace

void append_rq2_pairs(const std::string& path, const std::vector<Rq2Pair>& pairs) {
  std::ofstream f(path, std::ios::app);
  if (!f) throw Error(ExitCode::bad_input, "cannot append RQ2 pairs to '" + path + "': check the folder exists");
  for (const auto& p : pairs) f << p.to_jsonl() << "\n";
  if (!f) throw Error(ExitCode::bad_input, "writing RQ2 pairs to '" + path + "' failed");
}

std::vector<Rq2Pair> read_rq2_pairs(const std::string& path) {
  std::vector<Rq2Pair> out;
  std::map<Rq2Key, int> seen;
  for_each_jsonl(path, "pairs", [&](int line, const json& j) {
    Rq2Pair p;
    p.target_step = string_field(j, "target_step", path, line, true);
    p.context_step = string_field(j, "context_step", path, line, true);
    p.target_description = string_field(j, "target_description", path, line, false);
    p.context_description = string_field(j, "context_description", path, line, false);
    p.context_snippet = string_field(j, "context_snippet", path, line, false);
    auto it = j.find("seed_similarities");
    if (it == j.end() || !it->is_array())
      throw Error(
          ExitCode::bad_input,
          fmt::format("{}:{}: missing \"seed_similarities\" (an array of numbers, one per expanded seed)", path, line));
    for (const auto& v : *it) {
      if (!v.is_number())
        throw Error(ExitCode::bad_input,
                    fmt::format("{}:{}: \"seed_similarities\" holds a non-number ({})", path, line, v.dump()));
      p.seed_similarities.push_back(v.get<double>());
    }
    auto [pos, fresh] = seen.emplace(Rq2Key{p.target_step, p.context_step}, line);
    if (!fresh)
      throw Error(ExitCode::bad_input,
                  fmt::format("{}:{}: pair ({}, {}) already appears on line {}; each pair must appear once "
                              "(merge its seed similarities into one line)",
                              path, line, p.target_step, p.context_step, pos->second));
    out.push_back(std::move(p));
  });
  return out;
}

Rq2Labels read_rq2_labels(const std::string& path) {
  Rq2Labels out;
  for_each_jsonl(path, "labels", [&](int line, const json& j) {
    Rq2Key key{string_field(j, "target_step", path, line, true), string_field(j, "context_step", path, line, true)};
    auto it = j.find("similar");
    if (it == j.end() || !it->is_boolean())
      throw Error(ExitCode::bad_input, fmt::format("{}:{}: \"similar\" must be true or false", path, line));
    bool similar = it->get<bool>();
    auto [pos, fresh] = out.emplace(key, similar);
    if (!fresh && pos->second != similar)
      throw Error(ExitCode::bad_input,
                  fmt::format("{}:{}: pair ({}, {}) is labelled both similar and not similar; keep one label", path,
                              line, key.first, key.second));
  });
  return out;
}

Rq2Report evaluate_rq2(const std::vector<Rq2Pair>& pairs, const Rq2Labels& labels,
                       const std::vector<Rq2Config>& configs) {
  for (const auto& c : configs) {
    if (c.k < 1)
      throw Error(ExitCode::usage, fmt::format("RQ2 configuration {}: k = {} must be at least 1", c.name, c.k));
    if (!(c.tau >= -1.0 && c.tau <= 1.0))
      throw Error(ExitCode::usage,
                  fmt::format("RQ2 configuration {}: tau = {} is not a cosine similarity in [-1, 1]", c.name, c.tau));
  }
  Rq2Report r;
  r.pairs = static_cast<int>(pairs.size());
  struct Labelled {
    const Rq2Pair* pair;
    bool similar;
  };
  std::vector<Labelled> used;
  std::set<Rq2Key> paired;
  for (const auto& p : pairs) {
    Rq2Key key{p.target_step, p.context_step};
    paired.insert(key);
    auto it = labels.find(key);
    if (it == labels.end()) {
      ++r.unlabelled;
      continue;
    }
    used.push_back({&p, it->second});
    (it->second ? r.similar : r.not_similar)++;
  }
  r.labelled = static_cast<int>(used.size());
  for (const auto& [key, similar] : labels)
    if (!paired.count(key)) ++r.labels_without_pair;

  for (const auto& c : configs) {
    int promoted = 0, promoted_similar = 0, leftover_not_similar = 0;
    for (const auto& u : used) {
      int above = 0;
      for (double s : u.pair->seed_similarities) above += s > c.tau;
      if (above >= c.k) {
        ++promoted;
        promoted_similar += u.similar;
      } else {
        leftover_not_similar += !u.similar;
      }
    }
    Rq2Row row;
    row.config = c;
    row.promoted = group(promoted, promoted_similar, r.similar);
    row.leftover = group(r.labelled - promoted, leftover_not_similar, r.not_similar);
    if (row.promoted.f1 > (r.best_row < 0 ? 0.0 : r.rows[r.best_row].promoted.f1))
      r.best_row = static_cast<int>(r.rows.size());
    r.rows.push_back(row);
  }
  return r;
}

std::string rq2_markdown(const Rq2Report& r) {
  std::string out =
      "| Cfg | (τ, k) | Promoted #Pairs | Prec. | Recall | F1 | Leftover #Pairs | Prec. | Recall | F1 |\n"
      "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|\n";
  for (size_t i = 0; i < r.rows.size(); ++i) {
    const Rq2Row& row = r.rows[i];
    std::vector<std::string> cells = {row.config.name,
                                      fmt::format("({:.2f}, {})", row.config.tau, row.config.k),
                                      thousands(row.promoted.pairs),
                                      fmt::format("{:.1f}%", 100 * row.promoted.precision),
                                      fmt::format("{:.1f}%", 100 * row.promoted.recall),
                                      fmt::format("{:.3f}", row.promoted.f1),
                                      thousands(row.leftover.pairs),
                                      fmt::format("{:.1f}%", 100 * row.leftover.precision),
                                      fmt::format("{:.1f}%", 100 * row.leftover.recall),
                                      fmt::format("{:.3f}", row.leftover.f1)};
    out += "|";
    bool bold = static_cast<int>(i) == r.best_row;
    for (const auto& c : cells) out += bold ? fmt::format(" **{}** |", c) : fmt::format(" {} |", c);
    out += "\n";
  }
  out += fmt::format(
      "\n{} labelled pairs ({} similar, {} not similar); {} pairs without a label and {} labels "
      "without a pair were ignored. Bold: the highest promoted F1.\n",
      thousands(r.labelled), thousands(r.similar), thousands(r.not_similar), thousands(r.unlabelled),
      thousands(r.labels_without_pair));
  return out;
}

}  // namespace repoctx
