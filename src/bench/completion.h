// `repoctx bench-completion`: the speed of the completion pipeline on a real repository, each number next
// to a reference measured in the same run: tasks built per second (reference: BM25 coarse queries per
// second), fine-retrieval latency per query (reference: the BM25 pool it re-ranks), training time per epoch
// and peak memory (reference: building the epoch's samples).
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "eval/aligncoder_training.h"

namespace repoctx {

struct CompletionBenchOptions {
  int tasks = 100;          // API + line tasks built and queried
  std::string model_path;   // AlignRetriever for the latency (empty = built-in)
  int cold_runs = 10;       // cold `retrieve --file F --line N` processes timed
  std::string db;           // the index they read (--db; empty: the default for the repository)
  AlignTrainOptions train;  // samples_per_epoch (3,000), threads (2)
};

nlohmann::json bench_completion(const Engine& e, const std::string& root, const std::vector<TrainingRepo>& train,
                                const CompletionBenchOptions& o);
std::string completion_bench_text(const nlohmann::json& report);

}  // namespace repoctx
