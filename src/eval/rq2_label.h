// ProjAgent RQ2's labelling stage (section 5.3, "Dataset Labeling"): an LLM judges each (target step,
// context step) pair of a pairs file (`retrieve --strategy procedural --rq2-pairs`) as procedurally similar
// or not, from both descriptions and the context step's snippet, with one similar and one dissimilar
// example in the prompt (contrastive in-context learning; prompts/rq2_label.txt). The labels file it
// writes is what `repoctx rq2 --labels` reads. Every call goes through the backend's cache; pairs already
// labelled in the output file are skipped, so an interrupted run resumes where it stopped.
#pragma once

#include <string>
#include <vector>

#include "eval/rq2.h"
#include "llm/backend.h"
#include "llm/metered.h"

namespace repoctx {

struct Rq2LabelOptions {
  int max_tokens = 256;      // one verdict and a one-sentence reason
  int snippet_chars = 4000;  // the context snippet is cut here (a bound on the prompt)
  int description_chars = 2000;
};

struct Rq2LabelReport {
  int pairs = 0;
  int reused = 0;                   // already in the output file
  int labelled = 0;                 // written by this run
  int unusable = 0;                 // answers with no usable verdict (not written; reported with their reasons)
  int similar = 0;                  // of labelled
  std::vector<std::string> errors;  // the first few unusable answers' reasons
  LlmUsage usage;
};

// Labels the pairs not yet in `out_path` (JSONL lines {"target_step", "context_step", "similar", "reason",
// "model"}), appending each as its chunk finishes. Throws Error(interrupted) on Ctrl-C (written labels kept).
Rq2LabelReport label_rq2_pairs(LlmBackend& llm, const std::vector<Rq2Pair>& pairs, const std::string& out_path,
                               const Rq2LabelOptions& o = {});

// Agreement of two label sets on the pairs both label: observed agreement and Cohen's kappa (the paper
// reports kappa between the LLM's labels and the authors'). kappa is 0 when chance agreement is 1.
struct Rq2Agreement {
  int pairs = 0;
  double observed = 0, kappa = 0;
};
Rq2Agreement rq2_agreement(const Rq2Labels& a, const Rq2Labels& b);

}  // namespace repoctx
