#include "retrieve/structural/gbdt.h"

#include <fmt/core.h>
#include <xgboost/c_api.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <set>
#include <tuple>

#include "retrieve/structural/xgboost_api.h"
#include "util/cancel.h"
#include "util/error.h"
#include "util/file_io.h"
#include "util/hash.h"
#include "util/paths.h"

namespace repoctx {

nlohmann::json GbdtParams::to_json() const {
  return {{"objective", objective},
          {"trees", trees},
          {"max_depth", max_depth},
          {"eta", eta},
          {"min_child_weight", min_child_weight},
          {"lambda", lambda},
          {"nthread", nthread},
          {"seed", seed}};
}

GbdtParams GbdtParams::from_json(const nlohmann::json& j) {
  GbdtParams p;
  p.objective = j.value("objective", p.objective);
  p.trees = j.value("trees", p.trees);
  p.max_depth = j.value("max_depth", p.max_depth);
  p.eta = j.value("eta", p.eta);
  p.min_child_weight = j.value("min_child_weight", p.min_child_weight);
  p.lambda = j.value("lambda", p.lambda);
  p.nthread = j.value("nthread", p.nthread);
  p.seed = j.value("seed", p.seed);
  return p;
}

// XGBoost's predictor walks each tree node by node with a data-dependent branch per level; for a structural
// request (~1,100 candidates x 200 trees of depth 6 on sympy) that was 40% of the request (perf,
// docs/BENCHMARKS.md), mostly mispredicted branches. Stored as complete binary trees of the
// forest's depth (a leaf above the last level is copied into every leaf below it, the split nodes under it
// are never decisive), a tree is walked without branches: node = 2 * node + 1 + (x >= threshold), the same
// number of steps for every row. No packaged library compiles XGBoost trees (Treelite is not in Debian), so
// this is hand-written; it is used only when it reproduces XGBoost exactly: numerical splits, one output,
// an objective whose prediction is the raw margin, no missing value in the rows (those go to XGBoost), and
// the scores equal to XGBoost's bit for bit on rows at every split threshold and just below it (checked
// when the model loads).
struct GbdtRanker::CompleteForest {
  int depth = 0;
  size_t n_trees = 0, n_features = 0;
  float base_score = 0;
  std::vector<uint32_t> feature;  // n_trees x (2^depth - 1) split nodes, level order
  std::vector<float> threshold;   // go right when x >= threshold (XGBoost: left when x < split condition)
  std::vector<float> leaf;        // n_trees x 2^depth leaf values
  std::vector<uint8_t> decisive;  // per split node: 1 = a split of the model, 0 = padding under a leaf

  // The same trees for QuickScorer's traversal (Lucchese et al., SIGIR 2015): per feature, the model's
  // splits in ascending threshold order, each with its tree and the bitmask of that tree's leaves that
  // remain when the row goes right (its left subtree's leaves cleared). A row clears, feature by feature,
  // the masks of the splits whose threshold it reaches, and each tree's exit leaf is its leftmost leaf
  // still set. On sympy's pools a row reaches ~1,000 of the shipped forest's 11,209 splits where the level
  // walk takes 1,200 steps: 3-20% faster in-process (docs/BENCHMARKS.md, "Structural request CPU").
  // Built only when every tree has at most 64 leaves (one uint64_t); same sum order, same floats.
  struct Quick {
    size_t tree_begin = 0, tree_end = 0;  // the block's trees (tree ids below are relative to tree_begin)
    std::vector<uint32_t> begin;          // n_features + 1 offsets into the arrays below
    std::vector<float> threshold;
    std::vector<uint32_t> tree;
    std::vector<uint64_t> mask;
  };
  // The whole forest as one block, and as two (trees before kCascadePrefixTrees, then the rest) for the
  // cascade; empty when QuickScorer does not apply (over 64 leaves per tree).
  std::unique_ptr<Quick> quick;
  std::unique_ptr<Quick> quick_head, quick_tail;
  std::unique_ptr<Quick> build_quick(size_t tree_begin, size_t tree_end) const;
  void build_quick();

  // Null when the model is not one this evaluator reproduces.
  static std::unique_ptr<CompleteForest> from_xgboost(const nlohmann::json& model, size_t n_features);
  // Rows without NaN; the sum runs in float from the base score, tree by tree, as XGBoost's does.
  void predict(const float* x, size_t rows, float* out) const {
    if (quick) {
      for (size_t r = 0; r < rows; ++r) out[r] = add_block(*quick, x + r * n_features, base_score);
      return;
    }
    predict_walk(x, rows, out);
  }
  // acc plus the leaves of block q's trees that `row` reaches, added in tree order: blocks in sequence give
  // the whole forest's float sum.
  float add_block(const Quick& q, const float* row, float acc) const {
    const size_t leaves = size_t{1} << depth, n = q.tree_end - q.tree_begin;
    thread_local std::vector<uint64_t> alive;
    alive.assign(n, ~uint64_t{0});
    for (size_t k = 0; k < n_features; ++k) {
      const float v = row[k];
      // Splits of feature k in ascending threshold: the row goes right at each one up to the first
      // threshold above its value (XGBoost goes left when x < threshold).
      for (uint32_t i = q.begin[k], e = q.begin[k + 1]; i < e && v >= q.threshold[i]; ++i)
        alive[q.tree[i]] &= q.mask[i];
    }
    const float* lv = leaf.data() + q.tree_begin * leaves;
    for (size_t t = 0; t < n; ++t) acc += lv[t * leaves + static_cast<size_t>(__builtin_ctzll(alive[t]))];
    return acc;
  }
  void predict_walk(const float* x, size_t rows, float* out) const {
    // Rows go through the trees in blocks: the walks of a block's rows are independent chains of loads
    // that the CPU overlaps (one row at a time, each level waits on the one before). Each row still sums
    // its trees in order.
    constexpr size_t kBlock = 16;
    const size_t inner = (size_t{1} << depth) - 1, leaves = size_t{1} << depth;
    for (size_t r0 = 0; r0 < rows; r0 += kBlock) {
      const size_t n = std::min(kBlock, rows - r0);
      const float* block = x + r0 * n_features;
      float acc[kBlock];
      for (size_t i = 0; i < n; ++i) acc[i] = base_score;
      for (size_t t = 0; t < n_trees; ++t) {
        const uint32_t* f = feature.data() + t * inner;
        const float* th = threshold.data() + t * inner;
        size_t node[kBlock] = {};
        for (int d = 0; d < depth; ++d)
          for (size_t i = 0; i < n; ++i)
            node[i] = 2 * node[i] + 1 + static_cast<size_t>(block[i * n_features + f[node[i]]] >= th[node[i]]);
        const float* lv = leaf.data() + t * leaves;
        for (size_t i = 0; i < n; ++i) acc[i] += lv[node[i] - inner];
      }
      for (size_t i = 0; i < n; ++i) out[r0 + i] = acc[i];
    }
  }
};

namespace {

// One XGBoost tree (its JSON) into complete level-order arrays of `depth` levels; false when it has a
// shape the complete-tree evaluator does not cover.
bool complete_tree(const nlohmann::json& tree, int depth, size_t n_features, uint32_t* feature, float* threshold,
                   float* leaf, uint8_t* decisive) {
  const auto& left = tree.at("left_children");
  const auto& right = tree.at("right_children");
  const auto& split = tree.at("split_indices");
  const auto& cond = tree.at("split_conditions");
  if (tree.contains("split_type"))
    for (const auto& t : tree["split_type"])
      if (t.get<int>() != 0) return false;  // categorical split
  // (xgboost node, complete node, level) from the root down.
  std::vector<std::tuple<int, size_t, int>> stack{{0, 0, 0}};
  while (!stack.empty()) {
    auto [n, c, level] = stack.back();
    stack.pop_back();
    if (n < 0 || static_cast<size_t>(n) >= left.size()) return false;
    const size_t inner = (size_t{1} << depth) - 1;
    if (left[n].get<int>() == -1) {  // a leaf: every complete leaf below c holds its value
      size_t first = c, count = 1;
      for (int l = level; l < depth; ++l) {
        first = 2 * first + 1;
        count *= 2;
      }
      for (size_t i = 0; i < count; ++i) leaf[first + i - inner] = cond[n].get<float>();
      // The split nodes below a leaf never decide anything: feature 0, any threshold.
      continue;
    }
    if (level >= depth) return false;
    uint32_t f = split[n].get<uint32_t>();
    if (f >= n_features) return false;
    feature[c] = f;
    threshold[c] = cond[n].get<float>();
    decisive[c] = 1;
    stack.emplace_back(left[n].get<int>(), 2 * c + 1, level + 1);
    stack.emplace_back(right[n].get<int>(), 2 * c + 2, level + 1);
  }
  return true;
}

// Levels below `node`, counted no further than kMaxForestDepth + 1 (a deeper tree stays with XGBoost, and a
// damaged file's chain of nodes must not recurse without end).
constexpr int kMaxForestDepth = 12;
int tree_depth(const nlohmann::json& tree, int node, int level = 0) {
  const auto& left = tree.at("left_children");
  if (level > kMaxForestDepth || node < 0 || static_cast<size_t>(node) >= left.size() || left[node].get<int>() == -1)
    return 0;
  return 1 + std::max(tree_depth(tree, left[node].get<int>(), level + 1),
                      tree_depth(tree, tree["right_children"][node].get<int>(), level + 1));
}

}  // namespace

std::unique_ptr<GbdtRanker::CompleteForest> GbdtRanker::CompleteForest::from_xgboost(const nlohmann::json& model,
                                                                                     size_t n_features) {
  try {
    const auto& learner = model.at("learner");
    static const std::set<std::string> raw_margin = {"rank:pairwise", "rank:ndcg", "rank:map", "reg:squarederror"};
    if (!raw_margin.count(learner.at("objective").at("name").get<std::string>())) return nullptr;
    const auto& mp = learner.at("learner_model_param");
    if (std::stoi(mp.value("num_class", std::string("0"))) > 1) return nullptr;
    const auto& gb = learner.at("gradient_booster");
    if (gb.at("name").get<std::string>() != "gbtree") return nullptr;
    const auto& trees = gb.at("model").at("trees");
    auto f = std::make_unique<CompleteForest>();
    f->base_score = std::stof(mp.at("base_score").get<std::string>());
    f->n_trees = trees.size();
    f->n_features = n_features;
    for (const auto& t : trees) f->depth = std::max(f->depth, tree_depth(t, 0));
    if (f->depth > kMaxForestDepth) return nullptr;  // 2^depth leaves per tree: deep trees stay with XGBoost
    const size_t inner = (size_t{1} << f->depth) - 1, leaves = size_t{1} << f->depth;
    f->feature.assign(f->n_trees * inner, 0);
    f->threshold.assign(f->n_trees * inner, 0.0f);
    f->leaf.assign(f->n_trees * leaves, 0.0f);
    f->decisive.assign(f->n_trees * inner, 0);
    for (size_t i = 0; i < f->n_trees; ++i)
      if (!complete_tree(trees[i], f->depth, n_features, f->feature.data() + i * inner, f->threshold.data() + i * inner,
                         f->leaf.data() + i * leaves, f->decisive.data() + i * inner))
        return nullptr;
    f->build_quick();
    return f;
  } catch (const std::exception&) {
    return nullptr;  // a layout this build does not know: XGBoost predicts
  }
}

void GbdtRanker::CompleteForest::build_quick() {
  if (depth > 6 || n_trees > std::numeric_limits<uint32_t>::max()) return;  // leaves must fit one uint64_t
  quick = build_quick(0, n_trees);
  if (n_trees >= 2 * GbdtRanker::kCascadePrefixTrees) {
    quick_head = build_quick(0, GbdtRanker::kCascadePrefixTrees);
    quick_tail = build_quick(GbdtRanker::kCascadePrefixTrees, n_trees);
  }
}

std::unique_ptr<GbdtRanker::CompleteForest::Quick> GbdtRanker::CompleteForest::build_quick(size_t tree_begin,
                                                                                           size_t tree_end) const {
  const size_t inner = (size_t{1} << depth) - 1;
  struct Split {
    uint32_t feature;
    float threshold;
    uint32_t tree;
    uint64_t mask;
  };
  std::vector<Split> splits;
  for (size_t t = tree_begin; t < tree_end; ++t) {
    for (size_t c = 0; c < inner; ++c) {
      if (!decisive[t * inner + c]) continue;  // padding: every leaf below it holds the same value
      // The leaves under node c (level order) are a run of 2^(depth - level) in left-to-right order; its
      // left child's are the first half.
      size_t first = c, count = 1;
      while (first < inner) {
        first = 2 * first + 1;
        count *= 2;
      }
      const size_t lo = first - inner, half = count / 2;
      const uint64_t left = (half >= 64 ? ~uint64_t{0} : ((uint64_t{1} << half) - 1)) << lo;
      splits.push_back(
          {feature[t * inner + c], threshold[t * inner + c], static_cast<uint32_t>(t - tree_begin), ~left});
    }
  }
  // Stable: equal thresholds keep tree order (any order gives the same masks; this one is reproducible).
  std::stable_sort(splits.begin(), splits.end(), [](const Split& a, const Split& b) {
    return a.feature != b.feature ? a.feature < b.feature : a.threshold < b.threshold;
  });
  auto q = std::make_unique<Quick>();
  q->tree_begin = tree_begin;
  q->tree_end = tree_end;
  q->begin.assign(n_features + 1, 0);
  for (const Split& sp : splits) {
    q->begin[sp.feature + 1]++;
    q->threshold.push_back(sp.threshold);
    q->tree.push_back(sp.tree);
    q->mask.push_back(sp.mask);
  }
  for (size_t k = 0; k < n_features; ++k) q->begin[k + 1] += q->begin[k];
  return q;
}

bool GbdtRanker::can_cascade() const {
  return forest_ && forest_->quick_head;
}

const char* GbdtRanker::evaluator() const {
  return !forest_ ? "xgboost" : forest_->quick ? "quickscorer" : "complete-tree";
}

GbdtRanker::~GbdtRanker() {
  if (booster_) xgboost_api().XGBoosterFree(static_cast<BoosterHandle>(booster_));
}

namespace {

std::vector<float> float_rows(const std::vector<std::vector<double>>& rows, size_t d) {
  std::vector<float> x;
  x.reserve(rows.size() * d);
  for (const auto& row : rows) {
    if (row.size() != d)
      throw Error(ExitCode::failure,
                  "gbdt ranker got " + std::to_string(row.size()) + " features, expected " + std::to_string(d));
    for (double f : row) x.push_back(static_cast<float>(f));
  }
  return x;
}

}  // namespace

std::vector<float> GbdtRanker::predict_xgboost(const std::vector<float>& x, size_t rows) const {
  // In-place prediction over the dense rows (an __array_interface__ naming the buffer): no DMatrix is built,
  // and XGBoost documents it as safe and lock free from several threads (the output buffer is per thread),
  // so concurrent requests of a warm server predict in parallel. Through a DMatrix a lock was needed around
  // every prediction. The trees and the sum are those of the DMatrix path: the scores are the same floats.
  const std::string array = fmt::format(R"({{"data": [{}, true], "shape": [{}, {}], "typestr": "<f4", "version": 3}})",
                                        reinterpret_cast<uintptr_t>(x.data()), rows, features_.size());
  const bst_ulong* shape = nullptr;
  bst_ulong dim = 0;
  const float* out = nullptr;
  xgboost_check(xgboost_api().XGBoosterPredictFromDense(
                    static_cast<BoosterHandle>(booster_), array.c_str(),
                    R"({"type": 0, "training": false, "iteration_begin": 0, "iteration_end": 0, )"
                    R"("strict_shape": false, "missing": NaN, "cache_id": 0})",
                    nullptr, &shape, &dim, &out),
                "predicting");
  return std::vector<float>(out, out + rows);
}

std::vector<double> GbdtRanker::score_rows(const std::vector<std::vector<double>>& rows) const {
  if (rows.empty()) return {};
  std::vector<float> x = float_rows(rows, features_.size());
  if (!forest_ || std::any_of(x.begin(), x.end(), [](float v) { return std::isnan(v); }))
    return score_rows_xgboost(rows);
  std::vector<float> out(rows.size());
  forest_->predict(x.data(), rows.size(), out.data());
  return std::vector<double>(out.begin(), out.end());
}

std::vector<double> GbdtRanker::rank_rows(const std::vector<std::vector<double>>& rows, const RankCascade& c) const {
  if (c.keep <= 0 || rows.size() <= static_cast<size_t>(c.keep) || !forest_ || !forest_->quick_head)
    return score_rows(rows);
  std::vector<float> x = float_rows(rows, features_.size());
  if (std::any_of(x.begin(), x.end(), [](float v) { return std::isnan(v); })) return score_rows_xgboost(rows);
  const CompleteForest& f = *forest_;
  const size_t n = rows.size(), d = features_.size(), keep = static_cast<size_t>(c.keep);
  std::vector<float> head(n);
  for (size_t r = 0; r < n; ++r) head[r] = f.add_block(*f.quick_head, x.data() + r * d, f.base_score);
  // The `keep` best by the first trees' partial score (ties: the earlier row); the rest of the trees for them.
  std::vector<uint32_t> order(n);
  std::iota(order.begin(), order.end(), 0u);
  std::nth_element(order.begin(), order.begin() + static_cast<long>(keep), order.end(),
                   [&](uint32_t a, uint32_t b) { return head[a] != head[b] ? head[a] > head[b] : a < b; });
  std::vector<double> out(n);
  std::vector<char> kept(n, 0);
  double min_kept = std::numeric_limits<double>::infinity();
  for (size_t i = 0; i < keep; ++i) {
    const uint32_t r = order[i];
    kept[r] = 1;
    out[r] = static_cast<double>(f.add_block(*f.quick_tail, x.data() + r * d, head[r]));
    min_kept = std::min(min_kept, out[r]);
  }
  // The others after every kept candidate, in the order of their partial scores.
  double max_rest = -std::numeric_limits<double>::infinity();
  for (size_t r = 0; r < n; ++r)
    if (!kept[r]) max_rest = std::max(max_rest, static_cast<double>(head[r]));
  const double shift = max_rest - min_kept + 1.0;
  for (size_t r = 0; r < n; ++r)
    if (!kept[r]) out[r] = static_cast<double>(head[r]) - shift;
  return out;
}

std::vector<double> GbdtRanker::score_rows_xgboost(const std::vector<std::vector<double>>& rows) const {
  if (rows.empty()) return {};
  std::vector<float> out = predict_xgboost(float_rows(rows, features_.size()), rows.size());
  return std::vector<double>(out.begin(), out.end());
}

namespace {

// Which evaluator reproduces XGBoost on a model: the check below, or its verdict kept from an earlier process.
enum class Verdict { xgboost, walk, quick, quick_cascade };

// Bumped whenever CompleteForest's evaluation changes: verdicts kept by another version are not read.
constexpr const char* kEvaluatorVersion = "complete-forest-v1";

// The check's verdict is kept in the user's cache, per model text, XGBoost version and evaluator version: it is
// most of a cold process's load of the shipped model (~0.35 of ~0.5 s on this machine kind) and never changes
// for the same trees, the same library and the same evaluator. Without a cache folder every process checks.
std::string verdict_path(const std::string& model_text) {
  int major = 0, minor = 0, patch = 0;
  xgboost_api().XGBoostVersion(&major, &minor, &patch);
  return user_cache_dir() + "/gbdt-evaluator/" +
         content_hash(fmt::format("{}\n{}.{}.{}\n{}", kEvaluatorVersion, major, minor, patch, model_text));
}

std::optional<Verdict> read_verdict(const std::string& path) {
  auto text = read_file_if_present(path);
  if (!text) return std::nullopt;
  static const std::map<std::string, Verdict> names = {{"xgboost\n", Verdict::xgboost},
                                                       {"walk\n", Verdict::walk},
                                                       {"quick\n", Verdict::quick},
                                                       {"quick-cascade\n", Verdict::quick_cascade}};
  auto it = names.find(*text);
  return it == names.end() ? std::nullopt : std::optional<Verdict>(it->second);
}

void write_verdict(const std::string& path, Verdict v) {
  static const char* const names[] = {"xgboost\n", "walk\n", "quick\n", "quick-cascade\n"};
  std::error_code ec;
  std::filesystem::create_directories(std::filesystem::path(path).parent_path(), ec);
  write_file_atomically(path, names[static_cast<int>(v)]);  // a read-only cache: the next process checks again
}

}  // namespace

void GbdtRanker::compile_forest(const nlohmann::json& model, const std::string& model_text) {
  auto f = CompleteForest::from_xgboost(model, features_.size());
  if (!f) return;
  const std::string kept = user_cache_dir().empty() ? "" : verdict_path(model_text);
  std::optional<Verdict> verdict = kept.empty() ? std::nullopt : read_verdict(kept);
  if (!verdict) {
    verdict = static_cast<Verdict>(check_forest(*f));
    if (!kept.empty()) write_verdict(kept, *verdict);
  }
  if (*verdict == Verdict::xgboost) return;
  if (*verdict == Verdict::walk) f->quick.reset();
  if (*verdict != Verdict::quick_cascade) f->quick_head.reset();
  forest_ = std::move(f);
}

// Probe rows: for every split, its threshold and the float just below it on its feature, the other features at
// thresholds of their own (so that the rows take many paths). Any bit of difference from XGBoost and XGBoost
// keeps predicting.
int GbdtRanker::check_forest(CompleteForest& forest) const {
  CompleteForest* f = &forest;
  const size_t d = features_.size(), inner = (size_t{1} << f->depth) - 1;
  std::vector<std::vector<float>> by_feature(d);
  for (size_t i = 0; i < f->feature.size(); ++i) by_feature[f->feature[i]].push_back(f->threshold[i]);
  std::vector<float> x(d, 0.0f);  // and a row of zeros (a forest of single leaves has no split to probe)
  size_t rows = 1;
  for (size_t i = 0; i < f->feature.size(); ++i) {
    if (i % inner != 0 && f->threshold[i] == 0.0f && f->feature[i] == 0) continue;  // padding under a leaf
    for (float v : {f->threshold[i], std::nextafter(f->threshold[i], -std::numeric_limits<float>::infinity())}) {
      for (size_t j = 0; j < d; ++j)
        x.push_back(j == f->feature[i]      ? v
                    : by_feature[j].empty() ? 0.0f
                                            : by_feature[j][(i + j) % by_feature[j].size()]);
      ++rows;
    }
  }
  std::vector<float> mine(rows);
  std::vector<float> theirs = predict_xgboost(x, rows);
  bool quick = static_cast<bool>(f->quick), cascade = quick && f->quick_head;
  if (quick) {  // QuickScorer's traversal, else the level-by-level walk, whichever equals XGBoost
    f->predict(x.data(), rows, mine.data());
    quick = std::memcmp(mine.data(), theirs.data(), rows * sizeof(float)) == 0;
  }
  if (quick && cascade) {  // the cascade's two blocks in sequence must give the same sums
    for (size_t r = 0; r < rows; ++r)
      mine[r] =
          f->add_block(*f->quick_tail, x.data() + r * d, f->add_block(*f->quick_head, x.data() + r * d, f->base_score));
    cascade = std::memcmp(mine.data(), theirs.data(), rows * sizeof(float)) == 0;
  }
  if (quick) return static_cast<int>(cascade ? Verdict::quick_cascade : Verdict::quick);
  std::unique_ptr<CompleteForest::Quick> q = std::move(f->quick);  // the walk, without QuickScorer
  f->predict(x.data(), rows, mine.data());
  f->quick = std::move(q);
  return static_cast<int>(std::memcmp(mine.data(), theirs.data(), rows * sizeof(float)) == 0 ? Verdict::walk
                                                                                             : Verdict::xgboost);
}
std::string GbdtRanker::to_json() const {
  bst_ulong len = 0;
  const char* buf = nullptr;
  xgboost_check(xgboost_api().XGBoosterSaveModelToBuffer(static_cast<BoosterHandle>(booster_), R"({"format": "json"})",
                                                         &len, &buf),
                "saving the model");
  nlohmann::json j;
  j["ranker"] = "gbdt";
  j["features"] = features_;
  j["params"] = params_.to_json();
  j["provenance"] = nlohmann::json::parse(provenance_json_, nullptr, false);
  j["xgboost"] = nlohmann::json::parse(std::string(buf, len));
  return j.dump();  // compact: the trees are most of the file
}

std::unique_ptr<GbdtRanker> GbdtRanker::from_json(const nlohmann::json& j, const std::string& origin,
                                                  const std::vector<std::string>* expected_features) {
  xgboost_quiet();
  if (!j.is_object() || !j.contains("xgboost") || !j.contains("features") || !j["features"].is_array())
    throw Error(ExitCode::bad_input,
                "structural model '" + origin + "' is not a gbdt model file (JSON with features and xgboost)");
  std::unique_ptr<GbdtRanker> r(new GbdtRanker());
  r->features_ = j["features"].get<std::vector<std::string>>();
  if (r->features_ != (expected_features ? *expected_features : structural_feature_names()))
    throw Error(ExitCode::bad_input, "structural model '" + origin +
                                         "' was trained on other features than this build computes; retrain it with "
                                         "`repoctx train-structural --ranker gbdt`");
  if (j.contains("params")) r->params_ = GbdtParams::from_json(j["params"]);
  if (j.contains("provenance")) r->provenance_json_ = j["provenance"].dump();
  BoosterHandle b = nullptr;
  xgboost_check(xgboost_api().XGBoosterCreate(nullptr, 0, &b), "creating a booster");
  r->booster_ = b;
  std::string model = j["xgboost"].dump();
  if (xgboost_api().XGBoosterLoadModelFromBuffer(b, model.data(), model.size()) != 0)
    throw Error(ExitCode::bad_input, "structural model '" + origin + "': xgboost cannot load its trees (" +
                                         xgboost_error() + "); retrain it with `repoctx train-structural`");
  bst_ulong n_features = 0;
  xgboost_check(xgboost_api().XGBoosterGetNumFeature(b, &n_features), "reading the feature count");
  if (n_features != r->features_.size())
    throw Error(ExitCode::bad_input, "structural model '" + origin + "': its trees expect " +
                                         std::to_string(n_features) + " features, its feature list has " +
                                         std::to_string(r->features_.size()));
  xgboost_set_param(b, "nthread", "1");
  r->compile_forest(j["xgboost"], model);
  return r;
}

}  // namespace repoctx
