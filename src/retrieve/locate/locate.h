// Localization of a request text (an issue, a commit message) without a model: which files and which
// functions/classes a change for it edits.
//
//   files-bm25  Okapi BM25 over whole files (path + content): the file ranking; the entity ranking is
//               entity BM25 restricted to the five best files. The reference the `locate` targets are set
//               against.
//   locate      evidence from the text (evidence.h: stack-trace frames, paths, dotted module names,
//               identifiers in prose and code, string literals and exception messages) matched against the
//               index, plus BM25 over files and over entities, combined per file by a logistic model, then
//               per entity by a second one that also sees its file's score (file-level aggregation both
//               ways). Test files are ranked after every other file and listed apart in the trace. The
//               weights are data (models/locate.json, embedded at build time), trained by
//               `repoctx train-locate` on GitHub issues with their fixing patches from repositories outside
//               the evaluation sets (docs/EVAL.md, "Localization without an LLM").
//
// Hits: first the file ranking (Hit::Type::file, whole files), then the entity ranking (Hit::Type::entity);
// localize-eval scores each ranking at its cut-offs.
#pragma once

#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "retrieve/engine.h"
#include "retrieve/locate/evidence.h"
#include "retrieve/retriever.h"

namespace repoctx {

const std::vector<std::string>& locate_file_feature_names();
const std::vector<std::string>& locate_entity_feature_names();

// Logistic model over standardised features: logit = bias + sum_i w_i * (x_i - mean_i) / scale_i.
struct LogisticModel {
  std::vector<std::string> features;
  std::vector<double> weights, mean, scale;
  double bias = 0;
  double logit(const std::vector<double>& x) const;
  nlohmann::json to_json() const;
  static LogisticModel from_json(const nlohmann::json& j, const std::vector<std::string>& expected,
                                 const std::string& origin);
};

struct LocateModel {
  LogisticModel file, entity;
  nlohmann::json provenance = nlohmann::json::object();
  std::string to_json() const;
  // Throws Error(bad_input) when the text is not a model or its features differ from this build's.
  static LocateModel from_json(const std::string& text, const std::string& origin);
  // Empty path = the model built into repoctx (Error(not_found) when the build has none).
  static LocateModel load(const std::string& path);
};

// Whole-file BM25 over an engine's indexed files (built once per engine).
const Bm25Index& file_bm25(const Engine& e);

struct LocateFileCandidates {
  std::vector<int> files;
  std::vector<std::vector<double>> x;  // locate_file_feature_names() order
};
struct LocateEntityCandidates {
  std::vector<int> entities;  // entity indices; -1 - f stands for the module level of file f ("path::<module>")
  std::vector<std::vector<double>> x;  // locate_entity_feature_names() order
};

// "path::Qual.name" of a candidate, "path::<module>" for a module-level one (-1 - file).
std::string locate_entity_key(const RepoView& v, int candidate);

// Everything `locate` derives from one request over one engine; shared by the retriever and its trainer.
class LocateFeatures {
 public:
  LocateFeatures(const Engine& e, std::string_view request);
  ~LocateFeatures();
  const RequestEvidence& evidence() const;
  // Every indexed file with its features.
  LocateFileCandidates files() const;
  // Functions and classes of the `top_files` best files of `file_logits` (one per file of files(), same
  // order), every entity the text names, and the module level of those best files; their features include
  // their file's logit and rank.
  LocateEntityCandidates entities(const LocateFileCandidates& fc, const std::vector<double>& file_logits,
                                  size_t top_files) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

inline constexpr size_t kLocateEntityFiles = 10;  // files whose entities are entity candidates

std::unique_ptr<Retriever> make_files_bm25(const Engine&, const Models&, const RetrieverOptions&);
std::unique_ptr<Retriever> make_locate(const Engine&, const Models&, const RetrieverOptions&);

}  // namespace repoctx
