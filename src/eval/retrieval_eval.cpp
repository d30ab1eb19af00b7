#include "eval/retrieval_eval.h"

#include <fmt/core.h>

#include <algorithm>
#include <chrono>
#include <unordered_set>

#include "util/cancel.h"
#include "util/hash.h"
#include "util/progress.h"
#include "util/text.h"

namespace repoctx {

std::vector<EvalTarget> sample_targets(const Engine& e, const EvalOptions& o) {
  const auto& v = e.view();
  const auto& ents = v.entities();
  std::vector<std::pair<uint64_t, int>> pool;
  for (size_t i = 0; i < ents.size(); ++i) {
    const EntityRec& en = ents[i];
    if (!is_callable(en.kind) || en.docstring.empty() || en.body_start_line <= 0) continue;
    if (en.qualname.find("<locals>") != std::string::npos) continue;
    if (!o.include_tests && is_test_path(v.files()[en.file].path)) continue;
    pool.emplace_back(hash64(std::to_string(o.seed) + "|" + e.target_name(static_cast<int>(i))), static_cast<int>(i));
  }
  // Hash order is a deterministic shuffle that does not change when unrelated functions are added.
  std::sort(pool.begin(), pool.end());
  std::vector<EvalTarget> out;
  for (const auto& [h, idx] : pool) {
    if (static_cast<int>(out.size()) >= o.samples) break;
    EvalTarget t;
    t.entity = idx;
    t.oracle = e.graph().referenced_entities(idx);
    if (t.oracle.empty()) continue;
    out.push_back(std::move(t));
  }
  return out;
}

EvalReport run_retrieval_eval(const Engine& e, const Models& models, const EvalOptions& o) {
  EvalReport rep;
  rep.repo = e.view().root();
  auto targets = sample_targets(e, o);
  rep.candidates = static_cast<int>(targets.size());
  double oracle_sum = 0;
  for (const auto& t : targets) oracle_sum += static_cast<double>(t.oracle.size());
  rep.mean_oracle = targets.empty() ? 0 : oracle_sum / static_cast<double>(targets.size());
  int depth = std::max(o.depth, *std::max_element(o.ks.begin(), o.ks.end()));
  for (const auto& name : o.strategies) {
    auto r = make_retriever(name, e, models, o.retriever);
    StrategyScores sc;
    sc.strategy = name;
    std::vector<double> ms;
    Progress prog("eval " + name, targets.size());
    for (const auto& t : targets) {
      throw_if_interrupted("nothing is written before the table");
      RetrievalQuery q;
      q.target = TargetRef{e.view().entities()[t.entity].file, t.entity};
      q.top_k = depth;
      auto t0 = std::chrono::steady_clock::now();
      auto hits = r->retrieve(q);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
      std::vector<int> ranked;
      std::unordered_set<int> seen;
      const auto& ents = e.view().entities();
      for (const auto& h : hits) {
        if (h.type == Hit::Type::entity && h.entity >= 0) {
          if (seen.insert(h.entity).second) ranked.push_back(h.entity);
        } else if (h.type == Hit::Type::snippet && h.file >= 0 && h.label != "dependency") {
          // A code snippet hands over every definition it shows: entities overlapping its lines.
          const FileRec& fr = e.view().files()[h.file];
          for (int i = fr.first_entity; i < fr.first_entity + fr.n_entities; ++i)
            if (ents[i].decorated_start_line <= h.end_line && ents[i].end_line >= h.start_line && i != t.entity &&
                !e.view().is_within(i, t.entity) && seen.insert(i).second)
              ranked.push_back(i);
        } else if (h.label == "dependency" && h.entity >= 0 && seen.insert(h.entity).second) {
          ranked.push_back(h.entity);
        }
      }
      for (int k : o.ks) {
        int found = 0;
        for (int i = 0; i < std::min<int>(k, static_cast<int>(ranked.size())); ++i)
          found += std::binary_search(t.oracle.begin(), t.oracle.end(), ranked[i]) ? 1 : 0;
        sc.recall[k] += static_cast<double>(found) / static_cast<double>(t.oracle.size());
      }
      for (size_t i = 0; i < ranked.size(); ++i) {
        if (std::binary_search(t.oracle.begin(), t.oracle.end(), ranked[i])) {
          sc.mrr += 1.0 / static_cast<double>(i + 1);
          break;
        }
      }
      prog.add();
    }
    prog.finish();
    sc.targets = static_cast<int>(targets.size());
    if (!targets.empty()) {
      for (auto& [k, r2] : sc.recall) r2 /= static_cast<double>(targets.size());
      sc.mrr /= static_cast<double>(targets.size());
      std::sort(ms.begin(), ms.end());
      sc.ms_p50 = ms[ms.size() / 2];
      double sum = 0;
      for (double x : ms) sum += x;
      sc.ms_mean = sum / static_cast<double>(ms.size());
    }
    rep.scores.push_back(std::move(sc));
  }
  return rep;
}

std::string eval_markdown(const std::vector<EvalReport>& reports, const std::vector<int>& ks) {
  std::string out = "| repository | targets | strategy |";
  for (int k : ks) out += fmt::format(" R@{} |", k);
  out += " MRR | ms/query (p50) |\n|---|---|---|";
  for (size_t i = 0; i < ks.size(); ++i) out += "---|";
  out += "---|---|\n";
  for (const auto& r : reports) {
    std::string name = r.repo.substr(r.repo.rfind('/') == std::string::npos ? 0 : r.repo.rfind('/') + 1);
    for (const auto& s : r.scores) {
      out += fmt::format("| {} | {} | {} |", name, s.targets, s.strategy);
      for (int k : ks) out += fmt::format(" {:.3f} |", s.recall.count(k) ? s.recall.at(k) : 0.0);
      out += fmt::format(" {:.3f} | {:.2f} |\n", s.mrr, s.ms_p50);
    }
  }
  return out;
}

}  // namespace repoctx
