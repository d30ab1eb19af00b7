// Weighted, L2-regularised logistic regression by Newton's method (IRLS), shared by the structural model's
// logistic loss (train_structural.cpp) and locate's file and entity models (train_locate.cpp). Eigen's LDLT
// solves the (d+1)x(d+1) system each step; column 0 of X is the bias, which is not regularised.
#pragma once

#include <Eigen/Dense>

namespace repoctx {

// Returns beta (bias first); `total_loss` gets the weighted log loss summed over rows (not averaged).
// Honours Ctrl-C between steps (nothing is written by a fit).
Eigen::VectorXd fit_logistic_irls(const Eigen::MatrixXd& X, const Eigen::VectorXd& y, const Eigen::VectorXd& sw,
                                  double l2, int iterations, double* total_loss);

}  // namespace repoctx
