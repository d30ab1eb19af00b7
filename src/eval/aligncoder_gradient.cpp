#include "eval/aligncoder_gradient.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

namespace repoctx {

using nlohmann::json;

double encoder_loss(const AlignEncoder& enc, const FeatureBag& q, const std::vector<const FeatureBag*>& docs, int label,
                    EncoderGrad* g) {
  return EncoderGradient::loss(enc, q, docs, label, g);
}

void EncoderGrad::clear() {
  dense.setZero();
  rows.clear();
  if (head.size() > 0) head.setZero();
}

double EncoderGradient::loss(const AlignEncoder& enc, const FeatureBag& q, const std::vector<const FeatureBag*>& docs,
                             int label, EncoderGrad* g) {
  const EncoderConfig& cfg = enc.cfg_;
  const Eigen::VectorXd& params = enc.p_;
  const size_t n = docs.size();
  if (n == 0 || label < 0 || static_cast<size_t>(label) >= n) return 0;
  AlignEncoder::Forward fq = enc.forward(q);
  std::vector<AlignEncoder::Forward> fd;
  fd.reserve(n);
  for (const FeatureBag* d : docs) fd.push_back(enc.forward(*d));
  const double a = cfg.mix ? encoder_sigmoid(params[kSlots]) : 0.0;
  const bool head = cfg.mix && cfg.head > 0 && cfg.head_in > 0;
  std::vector<double> cos(n, 0.0), cg(n, 0.0), z(n);
  Eigen::VectorXd gq = cfg.mix ? enc.frozen_vector(q) : Eigen::VectorXd();
  std::vector<Eigen::VectorXd> gd(cfg.mix ? n : 0);
  for (size_t i = 0; i < n; ++i) {
    if (fq.norm > 0 && fd[i].norm > 0) cos[i] = fq.e.dot(fd[i].e) / (fq.norm * fd[i].norm);
    if (cfg.mix) cg[i] = encoder_cosine(gq, gd[i] = enc.frozen_vector(*docs[i]));
    z[i] = ((1 - a) * cos[i] + a * cg[i]) / cfg.tau;
  }
  double mx = *std::max_element(z.begin(), z.end()), sum = 0;
  std::vector<double> p(n);
  for (size_t i = 0; i < n; ++i) sum += (p[i] = std::exp(z[i] - mx));
  for (auto& x : p) x /= sum;
  double loss = -(z[static_cast<size_t>(label)] - mx - std::log(sum));
  if (!g) return loss;
  if (g->dense.size() != static_cast<Eigen::Index>(kSlots + 1)) g->dense = Eigen::VectorXd::Zero(kSlots + 1);
  if (head && g->head.size() != static_cast<Eigen::Index>(enc.head_size()))
    g->head = Eigen::VectorXd::Zero(static_cast<Eigen::Index>(enc.head_size()));
  Eigen::VectorXd de_q = Eigen::VectorXd::Zero(cfg.dim);
  // The head: d cos(u, v) / du = (v^ - cos u^) / |u| with u = W g_q, v = W g_d, and dW += du g_q^T + dv g_d^T.
  Eigen::VectorXd du_q = head ? Eigen::VectorXd::Zero(cfg.head) : Eigen::VectorXd();
  Eigen::VectorXd gq_in, gd_in;
  Eigen::Map<Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> dW(
      head ? g->head.data() : nullptr, head ? cfg.head : 0, head ? cfg.head_in : 0);
  if (head) gq_in = Eigen::Map<const Eigen::VectorXf>(q.frozen.data(), cfg.head_in).cast<double>();
  for (size_t i = 0; i < n; ++i) {
    double ds = (p[i] - (static_cast<int>(i) == label ? 1.0 : 0.0)) / cfg.tau;  // dL/ds_i
    if (cfg.mix) g->dense[kSlots] += ds * a * (1 - a) * (cg[i] - cos[i]);
    if (head && ds != 0) {
      double nu = gq.norm(), nv = gd[i].norm();
      if (nu > 0 && nv > 0) {
        double dcg = ds * a;
        Eigen::VectorXd uh = gq / nu, vh = gd[i] / nv;
        du_q += dcg * (vh - cg[i] * uh) / nu;
        gd_in = Eigen::Map<const Eigen::VectorXf>(docs[i]->frozen.data(), cfg.head_in).cast<double>();
        dW.noalias() += (dcg * (uh - cg[i] * vh) / nv) * gd_in.transpose();
      }
    }
    double dc = ds * (1 - a);  // dL/dcos_i
    if (dc == 0 || fq.norm == 0 || fd[i].norm == 0) continue;
    Eigen::VectorXd uq = fq.e / fq.norm, ud = fd[i].e / fd[i].norm;
    de_q += dc * (ud - cos[i] * uq) / fq.norm;
    Eigen::VectorXd de_d = dc * (uq - cos[i] * ud) / fd[i].norm;
    backward(enc, *docs[i], fd[i], de_d, *g);
  }
  backward(enc, q, fq, de_q, *g);
  if (head) dW.noalias() += du_q * gq_in.transpose();
  return loss;
}

void EncoderGradient::backward(const AlignEncoder& enc, const FeatureBag& b, const AlignEncoder::Forward& f,
                               const Eigen::VectorXd& de, EncoderGrad& g) {
  const EncoderConfig& cfg = enc.cfg_;
  const Eigen::VectorXd& params = enc.p_;
  for (size_t i = 0; i < b.size(); ++i) {
    if (f.w[i] != 0)
      if (int r = enc.vocab_row(b.ids[i]); r >= 0) {
        auto it = g.rows.find(r);
        if (it == g.rows.end()) it = g.rows.emplace(r, Eigen::VectorXd::Zero(cfg.dim)).first;
        it->second += f.w[i] * de;
      }
    double dw = enc.row_dot(b.ids[i], de);
    double dS = dw * b.idf[i] / (1.0 + f.S[i]);
    for (uint32_t k = b.begin[i]; k < b.begin[i + 1]; ++k) {
      int s = b.entries[k].first;
      g.dense[s] += dS * std::exp(params[s]) * b.entries[k].second;
    }
  }
}

// ------------------------------------------------------------------------------------------- Adam
void AdamState::apply(AlignEncoder& enc, const EncoderGrad& g, double scale) {
  Eigen::VectorXd& p = enc.params();
  if (m.size() != p.size()) {
    m = Eigen::VectorXd::Zero(p.size());
    v = Eigen::VectorXd::Zero(p.size());
  }
  ++step;
  const double c1 = 1 - std::pow(beta1, static_cast<double>(step)), c2 = 1 - std::pow(beta2, static_cast<double>(step));
  auto update = [&](Eigen::Index at, double grad, bool decay) {
    m[at] = beta1 * m[at] + (1 - beta1) * grad;
    v[at] = beta2 * v[at] + (1 - beta2) * grad * grad;
    p[at] -= lr * ((m[at] / c1) / (std::sqrt(v[at] / c2) + eps) + (decay ? weight_decay * p[at] : 0.0));
    if (l2_init > 0) p[at] = std::isinf(l2_init) ? 0.0 : p[at] / (1 + lr * l2_init);  // proximal L2 towards 0
  };
  if (g.dense.size() > 0)
    for (Eigen::Index i = 0; i < g.dense.size(); ++i) update(i, scale * g.dense[i], false);
  const int d = enc.config().dim;
  for (const auto& [r, row] : g.rows) {
    auto base = static_cast<Eigen::Index>(enc.delta_offset() + static_cast<size_t>(r) * d);
    for (int k = 0; k < d; ++k) update(base + k, scale * row[k], true);
  }
  // The head moves by Adam alone: the pull towards 0 (the untrained encoder) would erase the projection.
  const double saved = l2_init;
  l2_init = 0;
  auto base = static_cast<Eigen::Index>(enc.head_offset());
  for (Eigen::Index k = 0; k < g.head.size(); ++k) update(base + k, scale * g.head[k], false);
  l2_init = saved;
}

namespace {
std::string vec_b64(const Eigen::VectorXd& v) {
  std::vector<double> d(v.data(), v.data() + v.size());
  return base64_encode(d.data(), d.size() * sizeof(double));
}
std::string fmt_double(double x) {
  if (std::isinf(x)) return x > 0 ? "inf" : "-inf";
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", x);
  return buf;
}
Eigen::VectorXd b64_vec(const std::string& s) {
  std::string raw = base64_decode(s);
  Eigen::VectorXd v(static_cast<Eigen::Index>(raw.size() / sizeof(double)));
  // An empty vector has a null data(): memcpy with a null pointer is undefined even for 0 bytes.
  if (v.size() > 0) std::memcpy(v.data(), raw.data(), static_cast<size_t>(v.size()) * sizeof(double));
  return v;
}
}  // namespace

json AdamState::to_json() const {
  // l2_init as a string: JSON has no infinity.
  return {{"lr", lr},
          {"beta1", beta1},
          {"beta2", beta2},
          {"eps", eps},
          {"weight_decay", weight_decay},
          {"step", step},
          {"m", vec_b64(m)},
          {"v", vec_b64(v)},
          {"l2_init", fmt_double(l2_init)}};
}

AdamState AdamState::from_json(const json& j) {
  AdamState a;
  a.lr = j.at("lr");
  a.beta1 = j.at("beta1");
  a.beta2 = j.at("beta2");
  a.eps = j.at("eps");
  a.weight_decay = j.at("weight_decay");
  a.l2_init = std::stod(j.value("l2_init", std::string("0")));  // checkpoints before the option: 0
  a.step = j.at("step");
  a.m = b64_vec(j.at("m"));
  a.v = b64_vec(j.at("v"));
  return a;
}

}  // namespace repoctx
