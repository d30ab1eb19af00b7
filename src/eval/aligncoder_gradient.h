// AlignRetriever training's arithmetic (AlignCoder III-C, eq. 21-22): the contrastive loss of one query over
// its candidate snippets, its gradient over the encoder's flat parameters, and the Adam optimiser. The
// encoder itself (retrieve/aligncoder/encoder.h) only infers; training lives here, in the lab.
//
// The gradient is written by hand (Eigen has no reverse-mode autodiff); tests/unit/test_aligncoder.cpp
// checks it against finite differences.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "retrieve/aligncoder/encoder.h"

namespace repoctx {

// A gradient over the flat parameters, sparse in the rows of delta.
struct EncoderGrad {
  Eigen::VectorXd dense;  // theta + mix
  std::unordered_map<int, Eigen::VectorXd> rows;
  Eigen::VectorXd head;  // the head's weights (row-major), when the encoder has one
  void clear();
};

// Adam over the flat parameters, lazy on delta rows (only rows with a gradient move), with decoupled
// weight decay on delta (the learned rows stay close to the random projection unless the data says
// otherwise), and an optional L2 pull of every moved parameter towards the untrained encoder (all
// parameters 0: theta = 0 is plain idf * log-tf, delta = 0 the random projection). The pull is applied
// as the proximal step of the penalty l2_init/2 * |p|^2 after each Adam step, p <- p / (1 + lr * l2_init):
// unlike a penalty gradient fed through Adam (whose steps have size ~lr whatever the gradient's scale),
// it is exact at both ends: l2_init = 0 is plain Adam, l2_init = infinity keeps the untrained encoder.
struct AdamState {
  double lr = 0.01, beta1 = 0.9, beta2 = 0.999, eps = 1e-8, weight_decay = 1e-4, l2_init = 0;
  int64_t step = 0;
  Eigen::VectorXd m, v;
  void apply(AlignEncoder& enc, const EncoderGrad& g, double scale);
  nlohmann::json to_json() const;
  static AdamState from_json(const nlohmann::json& j);
};

// eq. 21-22 for one query: -log softmax(s / tau)[label] over the scores of `docs`; adds the gradient to `g`
// when given.
double encoder_loss(const AlignEncoder& enc, const FeatureBag& q, const std::vector<const FeatureBag*>& docs, int label,
                    EncoderGrad* g);

// Reads the encoder's forward pass (a friend of AlignEncoder) to back-propagate through it.
class EncoderGradient {
 public:
  static double loss(const AlignEncoder& enc, const FeatureBag& q, const std::vector<const FeatureBag*>& docs,
                     int label, EncoderGrad* g);

 private:
  static void backward(const AlignEncoder& enc, const FeatureBag& b, const AlignEncoder::Forward& f,
                       const Eigen::VectorXd& de, EncoderGrad& g);
};

}  // namespace repoctx
