// AlignRetriever's encoder (AlignCoder III-C), trainable on a CPU and needing no pretrained weights (the
// paper fine-tunes UniXcoder, which is not available here; docs/DEVIATIONS.md).
//
//   tokens    the project's code tokens (util/text.h: sub-tokens and whole identifiers; the BM25 term ids),
//             each occurrence with its role (definition, call, attribute, keyword, other), its kind (whole
//             identifier or sub-token) and its place (query: the unfinished code above the window, the
//             window, its last lines, the imported names, a candidate completion of the enhanced query; or
//             a document, i.e. a snippet)
//   weight    w_t = idf(t) * log(1 + sum over occurrences of rho[place][kind][role]),  rho = exp(theta)
//   embedding e = sum_t w_t (r_t + delta_t): r_t a fixed pseudo-random row of +-1/sqrt(D) derived from
//             t's id (a random projection of the sparse vector: nothing stored), delta_t a learned row for
//             the K tokens most frequent in the training repositories (the vocabulary that carries across
//             repositories: keywords, self, common verbs); the long tail stays a random projection
//   score     s = cos(e_q, e_d), or (1 - a) cos + a cos_g with a GGUF embedding's cosine cos_g
//             (a = sigmoid(theta_mix), learned) when the model was trained with an embedder; with a head
//             (EncoderConfig::head > 0), cos_g = cos(W g_q, W g_d): a trained linear projection W (head x the
//             embedding's dimension, initialised as a seeded Gaussian random projection, which keeps cosines)
//             of the frozen embeddings g, the head the paper's fine-tuned encoder reduces to when the
//             embedding model itself stays frozen
//   loss      eq. 21-22: -log softmax_i(s_i / tau) at the label c_mp (tau = 0.05: RLCoder's scale of 20)
//
// Inference only: the loss, its gradient and the optimiser are the trainer's (eval/aligncoder_gradient.h).
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

namespace repoctx {

// Where a token stands: in the query (the unfinished code above the window, the window, its last lines,
// the names the file imports before the cursor, a candidate completion) or in a document (a snippet).
enum class TokenPlace : uint8_t { far = 0, code = 1, recent = 2, imported = 3, candidate = 4, document = 5 };
enum class TokenRole : uint8_t { other = 0, definition = 1, call = 2, attribute = 3, keyword = 4 };
constexpr int kPlaces = 6, kKinds = 2, kRoles = 5, kSlots = kPlaces * kKinds * kRoles;
inline int token_slot(TokenPlace p, bool whole, TokenRole r) {
  return (static_cast<int>(p) * kKinds + (whole ? 0 : 1)) * kRoles + static_cast<int>(r);
}

// A text as the encoder sees it: per distinct token, its idf and its occurrence counts by slot (CSR).
struct FeatureBag {
  std::vector<uint64_t> ids;
  std::vector<double> idf;
  std::vector<uint32_t> begin;                     // size ids + 1: slot entries of token i
  std::vector<std::pair<uint8_t, float>> entries;  // (slot, count)
  std::vector<float> frozen;                       // L2-normalised GGUF embedding (empty: none)
  size_t size() const { return ids.size(); }
};

struct QueryParts {
  std::string far;      // the unfinished code before the window
  std::string window;   // the query window: the last query_lines non-blank lines
  std::string imports;  // the names the file imports before the cursor, space-separated
  std::vector<std::string> candidates;
};

// Collects the tokens of texts, then makes a FeatureBag with the idf of each token.
class BagBuilder {
 public:
  void add(std::string_view text, TokenPlace place);
  // A query: the unfinished code above the window, the window (its last `recent_lines` non-blank lines count
  // as `recent`), the imported names and the candidate completions of an enhanced query.
  void add_query(const QueryParts& q, int recent_lines);
  FeatureBag build(const std::function<double(uint64_t)>& idf) const;
  const std::unordered_map<uint64_t, std::array<float, kSlots>>& counts() const { return counts_; }

 private:
  std::unordered_map<uint64_t, std::array<float, kSlots>> counts_;
};

struct EncoderConfig {
  int dim = 256;
  int vocab = 1024;      // learned rows (K)
  double tau = 0.05;     // softmax temperature over cosines
  uint64_t seed = 1;     // the random projection
  bool mix = false;      // trained with a frozen GGUF embedding
  std::string embedder;  // its identity (when mix)
  int head = 0;          // with mix: rows of the trained linear head over the embedding (0 = its plain cosine)
  int head_in = 0;       // the embedding's dimension (set by init_head)
};

class EncoderGradient;  // eval/aligncoder_gradient.h: the loss and its gradient need the forward pass's internals

class AlignEncoder {
 public:
  static constexpr int kFormatVersion = 1;
  explicit AlignEncoder(EncoderConfig cfg = {});

  const EncoderConfig& config() const { return cfg_; }
  // The learned rows are for these token ids (the most frequent in training); set before training.
  void set_vocabulary(const std::vector<uint64_t>& ids);
  const std::vector<uint64_t>& vocabulary() const { return vocab_ids_; }

  Eigen::VectorXd embed(const FeatureBag& b) const;
  // Cosine scores of candidates against a query (mixed with the frozen cosine when the model mixes).
  std::vector<double> scores(const FeatureBag& q, const std::vector<const FeatureBag*>& docs) const;
  // The linear head over embeddings of dimension `in` (config().head rows), as a seeded random projection.
  void init_head(int in);
  // Parameters as one flat vector (theta, mix, delta, head), for the optimiser and the gradient check.
  Eigen::VectorXd& params() { return p_; }
  const Eigen::VectorXd& params() const { return p_; }
  size_t delta_offset() const { return kSlots + 1; }
  size_t head_offset() const { return delta_offset() + vocab_ids_.size() * static_cast<size_t>(cfg_.dim); }
  size_t head_size() const { return static_cast<size_t>(cfg_.head) * static_cast<size_t>(cfg_.head_in); }

  // The model file (format version, config, weights as float32; `exact`: float64, for checkpoints that
  // must resume bit for bit).
  nlohmann::json to_json(bool exact = false) const;
  static AlignEncoder from_json(const nlohmann::json& j, const std::string& origin);
  static AlignEncoder load(const std::string& path);  // Error(not_found / bad_input) naming the file
  void save(const std::string& path, const nlohmann::json& provenance = {}) const;  // atomic
  nlohmann::json provenance;                                                        // how it was trained

 private:
  friend class EncoderGradient;
  struct Forward {
    Eigen::VectorXd e;
    std::vector<double> S, w;  // per token: the weighted count and the weight
    double norm = 0;
  };
  Forward forward(const FeatureBag& b) const;
  void add_row(uint64_t id, double scale, Eigen::Ref<Eigen::VectorXd> out) const;  // out += scale * (r + delta)
  double row_dot(uint64_t id, const Eigen::VectorXd& v) const;                     // (r + delta) . v
  int vocab_row(uint64_t id) const;
  // The frozen side's vector: W g with a head, g without.
  Eigen::VectorXd frozen_vector(const FeatureBag& b) const;

  EncoderConfig cfg_;
  std::vector<uint64_t> vocab_ids_;
  std::unordered_map<uint64_t, int> vocab_index_;
  Eigen::VectorXd p_;  // [theta (kSlots), theta_mix, delta (vocab x dim, row-major)]
};

// The encoder of a model file; an empty path = the model built into repoctx for `method` ("aligncoder":
// models/aligncoder.json, trained on the enhanced query; "rlcoder": models/rlcoder.json, trained on the
// unfinished code alone), or Error(not_found) saying how to train one when this build has none; "untrained" =
// the encoder before any training (idf-weighted log counts, random projection: the ablation without III-C).
AlignEncoder load_align_encoder(const std::string& path, const std::string& method = "aligncoder");

// Base64 (RFC 4648) of raw bytes: how the model file carries its weights inside JSON.
std::string base64_encode(const void* data, size_t n);
std::string base64_decode(std::string_view s);  // throws std::invalid_argument on a bad character

// The token roles the encoder reads (exposed for tests): one entry per code token of `text`.
// The mix weight's logistic function (a = sigmoid(theta_mix)) and the cosine every score uses (0 when either
// vector is zero or their sizes differ); the trainer (eval/aligncoder_gradient.cpp) differentiates the same.
double encoder_sigmoid(double x);
double encoder_cosine(const Eigen::VectorXd& u, const Eigen::VectorXd& v);

struct TokenOccurrence {
  uint64_t id;
  bool whole;
  TokenRole role;
};
std::vector<TokenOccurrence> code_tokens(std::string_view text);

}  // namespace repoctx
