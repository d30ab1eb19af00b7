// The `structural` strategy's candidates and features, shared by the retriever and by its trainer.
//
// Candidates come from the scopes a body can see (its class and bases, its module, the names and modules
// its file imports, the members of visible classes, the transitively importable files), from what the
// most similar functions reference, and from BM25. Each candidate gets features that never read the
// hidden body: scope tiers, kind, BM25, name overlap with the signature and docstring, votes of
// neighbour functions, usage by the rest of its file and class, imports used nowhere else in the file, and
// module co-use (which members of the candidate's module the repository uses, and uses together with those
// the target's file uses; the target's own function counted without its hidden body).
// A ranker over these features orders them: a linear model, or gradient-boosted trees (structural/gbdt.h);
// either is data (models/structural.json is the shipped one, models/structural_linear.json the linear one),
// trained by `repoctx train-structural` on other repositories than the ones it is evaluated on.
#pragma once

#include <functional>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "retrieve/engine.h"

namespace repoctx {

// A shortcut for tree models when a pool is ranked: every candidate goes through the model's first
// trees (GbdtRanker::kCascadePrefixTrees), and only the `keep` best by that partial score through all of
// them; the others are ranked after those, in the order of their partial scores. Scores of the kept
// candidates are the full model's, bit for bit. keep = 0: every candidate through every tree.
struct RankCascade {
  int keep = 150;
};

struct StructuralParams {
  RankCascade cascade;
  int neighbours = 20;        // most similar functions (by signature + docstring) whose references vote
  int bm25_candidates = 100;  // global BM25 candidates
  int accessible_candidates = 50;
  int max_class_members = 200;
  Bm25Params bm25;
};

const std::vector<std::string>& structural_feature_names();

struct StructuralCandidates {
  std::vector<int> entities;
  std::vector<std::vector<double>> features;  // one row per candidate, structural_feature_names() order
};

// Computes candidates and features; caches per-file usage and per-function references across queries.
class StructuralFeatures {
 public:
  explicit StructuralFeatures(const Engine& e);
  ~StructuralFeatures();
  StructuralCandidates build(const TargetContext& ctx, const std::string& query, const StructuralParams& p);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// The one interface both structural rankers implement: the linear model below and the
// gradient-boosted trees of retrieve/structural/gbdt.h. A model file says which it is ("ranker"); training
// (eval/train_structural.h) and inference (the retriever, eval-loro) only see this interface.
class StructuralRanker {
 public:
  virtual ~StructuralRanker() = default;
  virtual std::string kind() const = 0;  // "linear" or "gbdt", the model file's "ranker"
  // Scores of one target's candidate rows (structural_feature_names() order), higher = ranked first; one
  // call per target so a ranker can batch the pool.
  virtual std::vector<double> score_rows(const std::vector<std::vector<double>>& rows) const = 0;
  // The scores a pool is ranked by (score_rows, or a tree model's cascade): equal to score_rows' for every
  // candidate that can rank among the kept ones; the others only rank below them.
  virtual std::vector<double> rank_rows(const std::vector<std::vector<double>>& rows, const RankCascade&) const {
    return score_rows(rows);
  }
  virtual std::string to_json() const = 0;  // the model file
  virtual const std::string& provenance() const = 0;
};

// Logistic model over standardised features: p = sigmoid(bias + sum_i w_i * (x_i - mean_i) / scale_i).
struct StructuralModel : StructuralRanker {
  std::vector<std::string> features;
  std::vector<double> weights, mean, scale;
  double bias = 0;
  std::string provenance_json = "{}";  // what it was trained on, and the command

  double score(const std::vector<double>& x) const;
  std::string kind() const override { return "linear"; }
  std::vector<double> score_rows(const std::vector<std::vector<double>>& rows) const override;
  std::string to_json() const override;
  const std::string& provenance() const override { return provenance_json; }
  // Throws Error(bad_input) when the text is not a model or its features differ from this build's.
  static StructuralModel from_json(const std::string& text, const std::string& origin);
  static StructuralModel load(const std::string& path);  // empty path = the model built into repoctx
};

// The scores one target's pool is ranked by: each distinct row scored once (rank_rows), then given to every
// row equal to it. `rows` is as it was on return. The retriever and eval-loro both rank through this.
std::vector<double> rank_pool(const StructuralRanker& model, std::vector<std::vector<double>>& rows,
                              const RankCascade& cascade);

// Reads a model file of either kind (its "ranker" field; absent = linear). Empty path = the built-in model.
std::unique_ptr<StructuralRanker> load_structural_ranker(const std::string& path);
std::unique_ptr<StructuralRanker> structural_ranker_from_json(const std::string& text, const std::string& origin);
// load_structural_ranker, loaded once per process and model file (path, size, modification time) and shared:
// a retriever is made per request by the server and the API, and the shipped gbdt model takes ~0.5 s to
// parse and check (its evaluator against XGBoost's). Rankers are immutable and score_rows is thread-safe.
// The future's first get() loads it, on whichever thread asks first (preload_ranker asks on a thread of its
// own while a cold process opens the index and builds the candidates); a load error is kept with it, as the
// same file (same size and modification time) fails the same way again.
using RankerFuture = std::shared_future<std::shared_ptr<const StructuralRanker>>;
RankerFuture structural_ranker_future(const std::string& path);
std::shared_ptr<const StructuralRanker> shared_structural_ranker(const std::string& path);  // its get()

// Builds the structural strategy's per-repository and per-file facts of `e` (references resolved per file,
// member use counts, class members, import closures) that its requests otherwise build on first use: on
// sympy a request on a file no request had touched took 6-8x the CPU of a warm one. A server runs this in
// the background for each snapshot it loads. Stops between files once `stop` says so (false: stopped early);
// thread-safe: requests running meanwhile share what it built.
bool warm_structural(const Engine& e, const std::function<bool()>& stop = {});

}  // namespace repoctx
