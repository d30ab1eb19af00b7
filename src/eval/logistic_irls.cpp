#include "eval/logistic_irls.h"

#include <algorithm>
#include <cmath>

#include "util/cancel.h"

namespace repoctx {

Eigen::VectorXd fit_logistic_irls(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const Eigen::VectorXd& sw,
                                  double l2, int iterations, double* total_loss) {
  const long d1 = X.cols(), n = X.rows();
  Eigen::VectorXd beta = Eigen::VectorXd::Zero(d1);
  Eigen::MatrixXd reg = Eigen::MatrixXd::Identity(d1, d1) * l2;
  reg(0, 0) = 0;
  double loss = 0;
  for (int it = 0; it < iterations; ++it) {
    throw_if_interrupted("no model is written");
    Eigen::VectorXd z = X * beta;
    Eigen::VectorXd p = z.unaryExpr([](double v) { return 1.0 / (1.0 + std::exp(-v)); });
    Eigen::VectorXd w = (p.array() * (1.0 - p.array()) * sw.array()).max(1e-12).matrix();
    Eigen::VectorXd grad = X.transpose() * (sw.array() * (p - y).array()).matrix() + reg * beta;
    Eigen::MatrixXd H = X.transpose() * w.asDiagonal() * X + reg;
    Eigen::VectorXd step = H.ldlt().solve(grad);
    beta -= step;
    loss = 0;
    for (long i = 0; i < n; ++i) {
      double pi = std::clamp(p(i), 1e-12, 1 - 1e-12);
      loss -= sw(i) * (y(i) * std::log(pi) + (1 - y(i)) * std::log(1 - pi));
    }
    if (step.norm() < 1e-8) break;
  }
  if (total_loss) *total_loss = loss;
  return beta;
}

}  // namespace repoctx
