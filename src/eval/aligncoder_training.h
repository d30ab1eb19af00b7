// AlignRetriever training (AlignCoder III-C): training data from the import structure of repositories
// (III-C1), the reward of eq. 21-24, and the encoder's optimisation, seeded and resumable.
//
// III-C1 data: clusters = connected components of a repository's import graph (single files dropped),
// topologically ordered (imported files first); a sample's file is a non-first file of a cluster; the cursor
// stands at the start of a random non-blank line in the middle 60% of the file (never its first or last
// lines); the target is the next 16-96 whitespace-separated tokens (RLCoder's unit), inside the file.
// For each sample: the enhanced query (the unfinished code's window + candidate completions: the oracle
// target, sampled ones, or none; `candidate_rate` of the samples carry them), its candidate snippets C =
// BM25's best n over base + dependency snippets under the cut-copy rule, and the label c_mp:
//   ppl      eq. 23-24: the snippet that minimises the generator's perplexity of the target given the
//            prompt (snippet + unfinished code), from the backend's log-probabilities (through the cache);
//   overlap  LLM-free (a deviation, docs/DEVIATIONS.md): the snippet that defines the most of the target's
//            identifiers (2 points each) or contains them (1 point); ties go to BM25's order; a sample with
//            no overlap at all is skipped.
// Each epoch draws fresh samples (RLCoder's scheme), trains with Adam on mini-batches, and writes a
// checkpoint (model + optimiser + epoch) and the model file; a re-run with the same options resumes after
// the last finished epoch, and Ctrl-C keeps the last checkpoint.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/aligncoder_gradient.h"
#include "llm/models.h"
#include "retrieve/aligncoder/encoder.h"
#include "retrieve/aligncoder/params.h"
#include "retrieve/engine.h"

namespace repoctx {

struct AlignTrainOptions {
  std::string out_path;  // the model file; the checkpoint is <out_path>.ckpt
  int epochs = 20;       // paper: 20 epochs of 3,000 samples
  int samples_per_epoch = 3000;
  int batch = 16;
  double lr = 0.01;
  double weight_decay = 1e-4;
  // Generalisation to other repositories (docs/EVAL.md): a proximal L2 pull of every parameter
  // towards the untrained encoder (AdamState::l2_init; 0 = none, infinity = no change), each repository
  // drawn equally often (instead of each eligible file: a large library would dominate), and early stopping
  // on validation repositories (none of the training or test ones): the model file holds the epoch with the
  // lowest validation loss, epoch 0 (the untrained encoder) included, and training stops after `patience`
  // epochs without improvement.
  double l2_init = 0;
  bool balance_repos = false;
  int val_samples = 1000;
  int patience = 2;
  uint64_t seed = 0;
  int candidates_per_query = 10;   // n = |C|
  std::string labels = "defines";  // defines | overlap | ppl
  std::string query = "enhanced";  // enhanced (AlignCoder) | plain (RLCoder: the unfinished code only)
  // oracle (the target itself) | sample (the LLM, k samples, as III-C trains). The CLI's default, "auto", is
  // sample when a model is configured and oracle otherwise (LLM-free training; docs/DEVIATIONS.md).
  std::string candidate_source = "oracle";
  double candidate_rate = 0.5;  // share of samples whose enhanced query carries candidates
  int min_target_tokens = 16, max_target_tokens = 96;
  int threads = 2;       // sample construction (LLM labels and sampling use one)
  bool restart = false;  // ignore an existing checkpoint
  std::string command;   // the command line that trained the model (provenance only; not part of the fingerprint)
  EncoderConfig encoder;
  CompletionParams completion;  // query window, recent lines, sampling parameters
};

struct TrainingRepo {
  std::string name;
  const Engine* engine = nullptr;
};

// One training sample, ready for the encoder.
struct AlignSample {
  FeatureBag query;
  std::vector<FeatureBag> docs;
  int label = -1;
  std::string repo;  // TrainingRepo::name
  std::string file;
  int line = 0;
};

struct EpochReport {
  int epoch = 0;
  int samples = 0, skipped = 0;
  double loss = 0, top1 = 0;  // mean loss; share of samples whose label the model ranked first (before the update)
  double val_loss = 0, val_top1 = 0;  // on the validation repositories after the epoch (when there are any)
  bool best = false;                  // the model file now holds this epoch
  double build_seconds = 0, train_seconds = 0;
};

struct AlignTrainReport {
  std::vector<EpochReport> epochs;       // those run now
  int resumed_from = 0;                  // epochs found finished in the checkpoint
  double val_loss0 = 0, val_top1_0 = 0;  // the untrained encoder on the validation repositories
  int best_epoch = -1;                   // the epoch the model file holds (0: untrained; -1: no validation)
  bool stopped_early = false;
  double peak_rss_mb = 0;
  nlohmann::json to_json() const;
};

// Trains into o.out_path. `models` gives the LLM for ppl labels and sampled candidates (need_llm names
// the flags when they are missing). Throws Error(interrupted) on Ctrl-C, after the last finished epoch's
// checkpoint was written.
// `validation` (may be empty): repositories for early stopping, disjoint from `repos`.
AlignTrainReport train_aligncoder(const std::vector<TrainingRepo>& repos, const AlignTrainOptions& o,
                                  const Models& models, const std::vector<TrainingRepo>& validation = {});

// III-C1 pieces, exposed for tests and the benchmark.
// Files of `e` that may hold a sample: non-first files of import clusters of two or more files.
std::vector<int> training_files(const Engine& e);
// Samples of one epoch (deterministic for seed, epoch and the repositories).
std::vector<AlignSample> build_samples(const std::vector<TrainingRepo>& repos, const AlignTrainOptions& o,
                                       const Models& models, int epoch, int* skipped = nullptr);
// One pass of Adam over the samples (shuffled with `seed`); the report's loss and top-1 are measured before
// each update.
EpochReport train_one_epoch(AlignEncoder& enc, AdamState& adam, std::vector<AlignSample>& samples, int batch,
                            uint64_t seed);
// Mean loss and top-1 share of `enc` on samples, without updating anything.
std::pair<double, double> evaluate_samples(const AlignEncoder& enc, const std::vector<AlignSample>& samples);
// The LLM-free label: index into `candidates` or -1.
// The snippet defining the most of the target's identifiers, then the one containing the most; with
// require_definition, only snippets that define at least one.
int overlap_label(const std::string& target, const std::vector<std::string>& candidates,
                  bool require_definition = false);
// The K tokens with the highest document frequency over the repositories' snippets.
std::vector<uint64_t> frequent_tokens(const std::vector<TrainingRepo>& repos, int k);

}  // namespace repoctx
