// Training of the `structural` strategy's logistic model from real repositories: every sampled documented
// function is a query, the repository symbols its real body references are the positives among the
// candidates, the other candidates the negatives.
//
// Extraction (candidates and features of every sampled target, which needs the repository's engine) and
// fitting (which needs only the extracted rows) are separate, so that the leave-one-repository-out
// protocol (eval/loro.h) extracts each repository once and fits one model per held-out repository.
#pragma once

#include <string>
#include <vector>

#include "retrieve/structural/gbdt.h"
#include "retrieve/structural/structural.h"

namespace repoctx {

struct TrainOptions {
  int samples = 300;    // targets per repository
  uint64_t seed = 7;    // differs from `repoctx eval`'s default seed 1
  int negatives = 100;  // negatives kept per target (reweighted to stand for all of them)
  double l2 = 1.0;
  int iterations = 30;  // Newton steps
  bool include_tests = false;
  // "logistic": every candidate a binary example (negatives subsampled and reweighted); "listwise": per
  // target, a softmax over all its candidates, maximising the mean log-probability of its positives
  // (every target counts the same, however large its pool).
  std::string loss = "listwise";
  // "gbdt" (gradient-boosted trees with gbdt.objective, the shipped kind; the negatives are subsampled per
  // target like the linear model's, `negatives` <= 0 keeps all of them) or "linear" (the model above, `loss`).
  std::string ranker = "gbdt";
  GbdtParams gbdt;
  StructuralParams params;
};

// One sampled target: its candidates in the retriever's tie-break order (entity_before), their features,
// which of them the real body uses, and how many repository entities the real body uses in all (the
// recall denominator: oracle entities outside the candidate pool count as misses).
struct StructuralTargetSample {
  int entity = -1;
  std::vector<int> candidates;
  std::vector<std::vector<double>> features;
  std::vector<char> positive;
  size_t oracle_size = 0;
};

struct StructuralRepoSamples {
  std::string repo;  // the repository root
  std::vector<StructuralTargetSample> targets;
};

// Samples targets like `repoctx eval` (sample_targets with o.samples, o.seed) and builds their candidates.
StructuralRepoSamples extract_structural_samples(const Engine& e, const TrainOptions& o);

struct TrainReport {
  size_t targets = 0, rows = 0, positives = 0;
  double log_loss = 0;
  std::vector<std::string> repos;
};

// Fits the model on the given repositories' samples (in order; deterministic).
StructuralModel fit_structural(const std::vector<const StructuralRepoSamples*>& repos, const TrainOptions& o,
                               TrainReport* rep);

// The ranker o.ranker names: fit_structural for "linear", gradient-boosted trees for "gbdt".
std::unique_ptr<StructuralRanker> fit_structural_ranker(const std::vector<const StructuralRepoSamples*>& repos,
                                                        const TrainOptions& o, TrainReport* rep);

// extract_structural_samples on each engine, then fit_structural_ranker.
std::unique_ptr<StructuralRanker> train_structural(const std::vector<const Engine*>& engines, const TrainOptions& o,
                                                   TrainReport* rep);

}  // namespace repoctx
