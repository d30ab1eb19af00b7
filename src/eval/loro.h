// Leave-one-repository-out evaluation of the `structural` strategy: every repository's sampled
// targets are extracted once (eval/train_structural.h); for each repository a model is fitted on all the
// other repositories' samples and scored on the held-out one, next to LLM-free baselines run on the same
// targets. Also reports the candidate pool's ceiling (share of the oracle the pool holds at all).
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "eval/retrieval_eval.h"
#include "eval/train_structural.h"

namespace repoctx {

struct LoroOptions {
  int samples = 200;  // targets per repository (the same targets score every strategy)
  uint64_t seed = 1;
  bool include_tests = false;
  std::vector<std::string> baselines = {"sparse", "same-file", "imports"};
  std::vector<int> ks = {1, 5, 10, 20};
  int depth = 100;
  std::string samples_out;  // when set: every target's candidate rows as JSON lines (for offline analysis)
  TrainOptions train;       // negatives, l2, iterations, candidate parameters (samples/seed/tests are ours)
};

struct LoroFold {
  std::string repo, name;
  int targets = 0;
  double pool_recall = 0;  // mean share of each target's oracle inside its candidate pool (the ceiling)
  double pool_size = 0;    // mean candidates per target
  StrategyScores structural;
  std::vector<StrategyScores> baselines;
  std::vector<std::string> trained_on;  // repositories whose samples fitted this fold's model
  size_t train_targets = 0;
  std::shared_ptr<const StructuralRanker> model;  // this fold's model (fitted without the held-out repository)
};

struct LoroReport {
  std::vector<LoroFold> folds;
  std::vector<int> ks;
  std::shared_ptr<const StructuralRanker> all;  // fitted on every repository: the model to ship
  TrainReport all_report;
};

// Ranks one held-out repository's samples with a model as the retriever ranks a pool (rank_pool, with
// `cascade`), then the retriever's tie-break; Recall@k against the full oracle and MRR within `depth`, as
// run_retrieval_eval computes them.
StrategyScores score_structural_samples(const StructuralRepoSamples& s, const StructuralRanker& m,
                                        const std::vector<int>& ks, int depth, const RankCascade& cascade = {});

// `open`: opens one repository's engine (called once per repository; the engine is released before the next).
LoroReport run_loro(const std::vector<std::string>& repos,
                    const std::function<std::unique_ptr<Engine>(const std::string&)>& open, const Models& models,
                    const LoroOptions& o);

std::string loro_markdown(const LoroReport& r);
std::string loro_json(const LoroReport& r);

}  // namespace repoctx
