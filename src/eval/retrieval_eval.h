// LLM-free retrieval quality: sample documented functions of a real repository, hide each body, and
// measure how well a strategy ranks the repository symbols the real body references (the oracle, from
// the repository model's resolution). Reports Recall@k and MRR per strategy. Snippet strategies are
// scored by the definitions their snippets show (entities overlapping a snippet's lines, the entities a
// dependency snippet summarises), in rank order.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "retrieve/retriever.h"

namespace repoctx {

struct EvalOptions {
  std::vector<std::string> strategies = {"sparse", "same-file", "imports", "structural"};
  int samples = 200;
  uint64_t seed = 1;
  std::vector<int> ks = {1, 5, 10, 20};
  int depth = 100;             // ranking depth for MRR
  bool include_tests = false;  // also sample functions of test files
  RetrieverOptions retriever;
};

struct EvalTarget {
  int entity = -1;
  std::vector<int> oracle;  // sorted entity indices referenced by the real body
};

struct StrategyScores {
  std::string strategy;
  int targets = 0;
  std::map<int, double> recall;  // mean Recall@k
  double mrr = 0;
  double ms_mean = 0, ms_p50 = 0;
};

struct EvalReport {
  std::string repo;
  int candidates = 0;  // documented functions with a non-empty oracle
  double mean_oracle = 0;
  std::vector<StrategyScores> scores;
};

// Documented, non-nested functions and methods with a body, outside test files (unless asked), whose
// body references at least one repository symbol; a deterministic sample of `samples` of them.
std::vector<EvalTarget> sample_targets(const Engine& e, const EvalOptions& o);

// `models`: what the strategies need (an embedder for dense/hybrid; none for the LLM-free ones).
EvalReport run_retrieval_eval(const Engine& e, const Models& models, const EvalOptions& o);
std::string eval_markdown(const std::vector<EvalReport>& reports, const std::vector<int>& ks);

}  // namespace repoctx
