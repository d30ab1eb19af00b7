// ProjAgent RQ2 (section 5.3, Table 3): how well projection similarity separates procedurally similar
// context steps from dissimilar ones. Every (target step, context step) pair carries its projection
// similarities to each expanded seed of the target step; a configuration (tau, k) promotes a pair when at
// least k of them exceed tau (strictly), and leaves it over otherwise. Against labels (similar or not),
// each group gets precision, recall and F1, the promoted group with "similar" as its positive class and
// the leftover group with "not similar" as its positive class.
#pragma once

#include <map>
#include <string>
#include <utility>
#include <vector>

#include "retrieve/procedural/types.h"

namespace repoctx {

using Rq2Key = std::pair<std::string, std::string>;  // (target step, context step)
using Rq2Labels = std::map<Rq2Key, bool>;            // true = procedurally similar

struct Rq2Config {
  std::string name;  // "A".."F" for the paper's configurations
  double tau = 0.65;
  int k = 2;
};
// The paper's six, A..F: (0.60,2) (0.65,2) (0.65,3) (0.70,2) (0.70,3) (0.80,2).
std::vector<Rq2Config> rq2_paper_configs();

struct Rq2Group {
  int pairs = 0;
  int true_positives = 0;  // pairs of the group's positive class inside the group
  int class_total = 0;     // pairs of the group's positive class in the whole labelled set
  // 0 when undefined (empty group, no pair of the class), like scikit-learn's zero_division=0.
  double precision = 0, recall = 0, f1 = 0;
};

struct Rq2Row {
  Rq2Config config;
  Rq2Group promoted;  // positive class: similar
  Rq2Group leftover;  // positive class: not similar
};

struct Rq2Report {
  int pairs = 0;                     // lines of the pairs file
  int labelled = 0;                  // pairs with a label: the only ones the metrics count
  int unlabelled = 0;                // pairs without a label (ignored)
  int labels_without_pair = 0;       // labels naming no pair (ignored)
  int similar = 0, not_similar = 0;  // among labelled pairs
  std::vector<Rq2Row> rows;
  int best_row = -1;  // highest promoted F1 (the paper's selection rule), first on ties; -1 if all 0
};

// Throws Error(bad_input) naming the file and line for malformed lines, missing or mistyped fields and
// duplicate pairs (a duplicate would be counted twice); Error(not_found) when the file cannot be read.
std::vector<Rq2Pair> read_rq2_pairs(const std::string& path);
// Appends pairs to a pairs file (JSONL, what read_rq2_pairs reads); Error(bad_input) naming the file when it
// cannot be written.
void append_rq2_pairs(const std::string& path, const std::vector<Rq2Pair>& pairs);
// Lines {"target_step", "context_step", "similar": true|false}. A repeated pair with the same label is
// accepted, with a conflicting label it is an error.
Rq2Labels read_rq2_labels(const std::string& path);

// Throws Error(usage) for a configuration with k < 1 or a tau outside [-1, 1].
Rq2Report evaluate_rq2(const std::vector<Rq2Pair>& pairs, const Rq2Labels& labels,
                       const std::vector<Rq2Config>& configs = rq2_paper_configs());
// Table 3's layout: Cfg, (tau, k), then #Pairs, Prec., Recall, F1 for promoted and for leftover; the best
// configuration in bold; a line with the counts (labelled, unlabelled, similar) under the table.
std::string rq2_markdown(const Rq2Report& r);

}  // namespace repoctx
