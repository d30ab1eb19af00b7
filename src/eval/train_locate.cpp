#include "eval/train_locate.h"

#include <Eigen/Dense>

#include <algorithm>
#include <cmath>
#include <set>

#include "eval/logistic_irls.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/log.h"

namespace repoctx {

LogisticModel fit_logistic(const std::vector<std::vector<double>>& rows, const std::vector<double>& labels,
                           const std::vector<double>& weights, const std::vector<std::string>& names,
                           const LocateTrainOptions& o, double* log_loss) {
  const size_t n = rows.size(), d = names.size();
  if (n == 0) throw Error(ExitCode::bad_input, "no training rows: every task was unusable");
  LogisticModel m;
  m.features = names;
  m.mean.assign(d, 0);
  m.scale.assign(d, 1);
  double wsum = 0;
  for (double w : weights) wsum += w;
  for (size_t j = 0; j < d; ++j) {
    double mu = 0, var = 0;
    for (size_t i = 0; i < n; ++i) mu += weights[i] * rows[i][j];
    mu /= wsum;
    for (size_t i = 0; i < n; ++i) var += weights[i] * (rows[i][j] - mu) * (rows[i][j] - mu);
    var /= wsum;
    m.mean[j] = mu;
    m.scale[j] = var > 1e-12 ? std::sqrt(var) : 1.0;
  }
  Eigen::MatrixXd X(static_cast<long>(n), static_cast<long>(d + 1));
  Eigen::VectorXd y(static_cast<long>(n)), sw(static_cast<long>(n));
  for (size_t i = 0; i < n; ++i) {
    auto li = static_cast<long>(i);
    X(li, 0) = 1.0;
    for (size_t j = 0; j < d; ++j) X(li, static_cast<long>(j + 1)) = (rows[i][j] - m.mean[j]) / m.scale[j];
    y(li) = labels[i];
    sw(li) = weights[i];
  }
  // The regularisation is relative to the total weight so that it means the same whatever the number of
  // tasks.
  double loss = 0;
  Eigen::VectorXd beta = fit_logistic_irls(X, y, sw, o.l2 * wsum / 100.0, o.iterations, &loss);
  if (log_loss) *log_loss = loss / wsum;
  m.bias = beta(0);
  m.weights.resize(d);
  for (size_t j = 0; j < d; ++j) m.weights[j] = beta(static_cast<long>(j + 1));
  return m;
}

namespace {

struct LocateRows {
  std::vector<std::vector<double>> x;
  std::vector<double> y, w;
  size_t positives = 0;
  // One task's candidates: positives and negatives each weigh 1 in total (a task without both adds nothing).
  void add_task(const std::vector<std::vector<double>>& xs, const std::vector<bool>& gold) {
    size_t pos = static_cast<size_t>(std::count(gold.begin(), gold.end(), true)), neg = gold.size() - pos;
    if (pos == 0 || neg == 0) return;
    for (size_t i = 0; i < xs.size(); ++i) {
      x.push_back(xs[i]);
      y.push_back(gold[i] ? 1.0 : 0.0);
      w.push_back(gold[i] ? 1.0 / static_cast<double>(pos) : 1.0 / static_cast<double>(neg));
    }
    positives += pos;
  }
};

// Runs `each(task, prepared)` over the usable tasks with a gold file at the base.
template <class F>
void for_each_task(const std::vector<LocalizeTask>& tasks, const LocalizeEvalOptions& where, F each,
                   LocateTrainReport* rep) {
  TaskEngineCache cache;
  for (const auto& t : tasks) {
    throw_if_interrupted("nothing is written until training ends");
    PreparedTask p;
    try {
      p = prepare_localize_task(t, where, cache);
    } catch (const Error& e) {
      if (e.code() == ExitCode::interrupted) throw;
      p.error = e.what();
    }
    if (!p.error.empty() || p.gold.empty()) {
      log_warn("train-locate: skipping {}: {}", t.id, p.error.empty() ? "no gold file at the base" : p.error);
      if (rep) ++rep->skipped;
      continue;
    }
    each(t, p);
  }
}

}  // namespace

LocateModel train_locate(const std::vector<LocalizeTask>& tasks, const LocalizeEvalOptions& where,
                         const LocateTrainOptions& o, LocateTrainReport* rep) {
  LocateTrainReport local;
  LocateTrainReport& r = rep ? *rep : local;
  std::set<std::string> repos;
  LocateRows files;
  for_each_task(
      tasks, where,
      [&](const LocalizeTask& t, const PreparedTask& p) {
        LocateFeatures feats(*p.engine, t.request);
        LocateFileCandidates fc = feats.files();
        std::vector<bool> gold;
        for (int f : fc.files) gold.push_back(p.gold.count(p.engine->view().files()[static_cast<size_t>(f)].path) > 0);
        files.add_task(fc.x, gold);
        repos.insert(t.repo);
        ++r.tasks;
      },
      &r);
  LocateModel m;
  m.file = fit_logistic(files.x, files.y, files.w, locate_file_feature_names(), o, &r.file_log_loss);
  r.file_rows = files.x.size();
  r.file_positives = files.positives;
  r.skipped = 0;  // counted again by the second pass
  LocateRows entities;
  for_each_task(
      tasks, where,
      [&](const LocalizeTask& t, const PreparedTask& p) {
        LocateFeatures feats(*p.engine, t.request);
        LocateFileCandidates fc = feats.files();
        std::vector<double> logits;
        for (const auto& x : fc.x) logits.push_back(m.file.logit(x));
        LocateEntityCandidates ec = feats.entities(fc, logits, kLocateEntityFiles);
        // The shipped model was trained on these labels: every enclosing scope of a changed line.
        std::set<std::string> gold = entities_of_lines(p.engine->view(), p.gold, EntityRule::enclosing);
        std::vector<bool> is_gold;
        const auto& v = p.engine->view();
        for (int en : ec.entities) is_gold.push_back(gold.count(locate_entity_key(v, en)) > 0);
        entities.add_task(ec.x, is_gold);
      },
      &r);
  m.entity = fit_logistic(entities.x, entities.y, entities.w, locate_entity_feature_names(), o, &r.entity_log_loss);
  r.entity_rows = entities.x.size();
  r.entity_positives = entities.positives;
  r.repos.assign(repos.begin(), repos.end());
  return m;
}

}  // namespace repoctx
