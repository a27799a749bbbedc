// Notation: layer k maps h_k (n_k) to z_{k+1} = W_k h_k + b_k; hidden layers
// apply a = σ(z); h_0 = x̂ = (x - mean) / std. Forward-mode tangents are Ȧ = ∂a/∂x
// (n x input_size per sample); reverse-mode adjoints are Δ = ∂y/∂z transposed
// (n x output_size per sample). The Jacobian-dependent backward is reverse-mode
// differentiation of those tangent computations. For tanh σ' = 1 - a² and
// σ'' = -2 a σ'; for relu σ' = [z > 0] and σ'' = 0.

#include "host/learning/mlp.h"

#include <cmath>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

namespace impulse {

using Eigen::Index;
using Eigen::Map;
using Eigen::MatrixXd;
using Eigen::VectorXd;
using MapM = Map<MatrixXd>;
using CMapM = Map<const MatrixXd, 0, Eigen::OuterStride<>>;

namespace {

// a grow-only buffer viewed as a rows x cols matrix.
MapM take(VectorXd& buf, Index rows, Index cols) {
  if (buf.size() < rows * cols) buf.resize(rows * cols);
  return {buf.data(), rows, cols};
}

CMapM view(const VectorXd& buf, Index rows, Index cols) {
  return {buf.data(), rows, cols, Eigen::OuterStride<>(rows)};
}

// M.col(s * w + j) ⊙= d.col(s) for every sample s and j < w.
template <class M, class D>
void scale_blocks(M&& m, const D& d, int w) {
  for (Index s = 0; s < d.cols(); ++s)
    for (int j = 0; j < w; ++j) m.col(s * w + j).array() *= d.col(s).array();
}

// out.col(s) (+)= -2 a.col(s) ⊙ Σ_j A.col(s * w + j) ⊙ T.col(s * w + j): the σ''
// term of tanh, since σ''(z) ⊙ Ż = -2 a ⊙ σ'(z) ⊙ Ż = -2 a ⊙ Ȧ.
template <class O, class A, class Ad, class T>
void tanh_curvature(O&& out, const A& a, const Ad& adj, const T& t, int w, bool accumulate) {
  for (Index s = 0; s < a.cols(); ++s) {
    auto o = out.col(s).array();
    if (!accumulate) o.setZero();
    for (int j = 0; j < w; ++j)
      o -= 2.0 * a.col(s).array() * adj.col(s * w + j).array() * t.col(s * w + j).array();
  }
}

// tanh in place, vectorized (std::tanh is scalar and dominated the forward
// pass): Cephes' rational form for |x| < 0.625, (1 - e)/(1 + e) with
// e = exp(-2|x|) beyond; within 3 ulp of glibc's tanh. Fixed-size blocks (the
// tail zero-padded) so an entry's value never depends on its position.
void tanh_inplace(double* p, Index n) {
  constexpr int K = 32;
  using A = Eigen::Array<double, K, 1>;
  auto kernel = [](A& x) {
    const A ax = x.abs();
    const A e = (-2.0 * ax).exp();
    const A big = (1.0 - e) / (1.0 + e);
    const A z = x.square();
    const A num =
        (-9.64399179425052238628e-1 * z - 9.92877231001918586564e1) * z - 1.61468768441708447952e3;
    const A den = ((z + 1.12811678491632931402e2) * z + 2.23548839060100448583e3) * z +
                  4.84406305325125486048e3;
    const A small = x + x * z * (num / den);
    x = (ax < 0.625).select(small, (x < 0.0).select(-big, big));
  };
  Index i = 0;
  for (; i + K <= n; i += K) {
    A x = Map<A>(p + i);
    kernel(x);
    Map<A>(p + i) = x;
  }
  if (i < n) {
    A x = A::Zero();
    for (Index j = i; j < n; ++j) x[j - i] = p[j];
    kernel(x);
    for (Index j = i; j < n; ++j) p[j] = x[j - i];
  }
}

// a uniform double in [0, 1) from the top 53 bits (the same on every library).
double uniform01(std::mt19937_64& rng) { return double(rng() >> 11) * 0x1.0p-53; }

std::string shape_str(Index r, Index c) { return std::to_string(r) + " x " + std::to_string(c); }

void check_shape(const char* what, Index r, Index c, Index er, Index ec) {
  if (r != er || c != ec)
    throw Error(std::string("Mlp: ") + what + ": expected " + shape_str(er, ec) + ", got " +
                shape_str(r, c));
}

}  // namespace

const char* to_string(Activation a) { return a == Activation::kTanh ? "tanh" : "relu"; }

Activation parse_activation(const std::string& s) {
  if (s == "tanh") return Activation::kTanh;
  if (s == "relu") return Activation::kRelu;
  throw Error("Mlp: activation: expected \"tanh\" or \"relu\", got \"" + s + "\"");
}

std::vector<int> MlpConfig::layer_sizes() const {
  std::vector<int> s{input_size};
  s.insert(s.end(), hidden_sizes.begin(), hidden_sizes.end());
  s.push_back(output_size);
  return s;
}

void MlpConfig::validate() const {
  if (input_size <= 0)
    throw Error("MlpConfig: input_size must be > 0, got " + std::to_string(input_size));
  if (output_size <= 0)
    throw Error("MlpConfig: output_size must be > 0, got " + std::to_string(output_size));
  for (size_t i = 0; i < hidden_sizes.size(); ++i)
    if (hidden_sizes[i] <= 0)
      throw Error("MlpConfig: hidden_sizes[" + std::to_string(i) + "] must be > 0, got " +
                  std::to_string(hidden_sizes[i]));
  if (input_mean.size() != input_std.size())
    throw Error("MlpConfig: input_mean and input_std: expected equal lengths, got " +
                std::to_string(input_mean.size()) + " and " + std::to_string(input_std.size()));
  if (input_std.size() != 0 && input_std.size() != input_size)
    throw Error("MlpConfig: input_std: expected " + std::to_string(input_size) + " entries, got " +
                std::to_string(input_std.size()));
  for (Index i = 0; i < input_std.size(); ++i) {
    if (!std::isfinite(input_mean[i]))
      throw Error("MlpConfig: input_mean[" + std::to_string(i) + "] is not finite");
    if (!(std::isfinite(input_std[i]) && input_std[i] > 0))
      throw Error("MlpConfig: input_std[" + std::to_string(i) + "] must be finite and > 0, got " +
                  std::to_string(input_std[i]));
  }
}

Mlp::Mlp(MlpConfig config, const MlpInit& init) : config_(std::move(config)) {
  config_.validate();
  sizes_ = config_.layer_sizes();
  Index n = 0;
  offsets_.clear();
  for (int k = 0; k + 1 < static_cast<int>(sizes_.size()); ++k) {
    offsets_.push_back(n);
    n += Index(sizes_[k + 1]) * (sizes_[k] + 1);
  }
  n_params_ = n;
  params_.resize(n);
  inv_std_ = config_.normalized() ? VectorXd(config_.input_std.cwiseInverse())
                                  : VectorXd(VectorXd::Ones(config_.input_size));
  init_params(init);
}

void Mlp::init_params(const MlpInit& init) {
  check_ready();
  std::mt19937_64 rng(init.seed);
  // layer by layer: W column-major, then b
  for (int k = 0; k < num_layers(); ++k) {
    const double bound = 1.0 / std::sqrt(double(sizes_[k]));
    const double scale = k + 1 == num_layers() ? init.output_scale : 1.0;
    const Index count = Index(sizes_[k + 1]) * (sizes_[k] + 1);
    for (Index i = 0; i < count; ++i)
      params_[offsets_[k] + i] = scale * (bound * (2.0 * uniform01(rng) - 1.0));
  }
}

void Mlp::check_ready() const {
  if (sizes_.empty()) throw Error("Mlp: used before construction from a config");
  if (params_.size() != n_params_)
    throw Error("Mlp: params: expected " + std::to_string(n_params_) + " entries, got " +
                std::to_string(params_.size()));
}

JacobianMode Mlp::auto_jacobian_mode() const {
  // forward mode multiplies W_k for k >= 1 by input_size tangents; reverse mode
  // W_k for k <= L - 2 by output_size adjoints.
  const int L = num_layers();
  if (L == 1) return JacobianMode::kForward;
  double fwd = 0, rev = 0;
  for (int k = 1; k < L; ++k) fwd += double(sizes_[k]) * sizes_[k + 1];
  for (int k = 0; k + 1 < L; ++k) rev += double(sizes_[k]) * sizes_[k + 1];
  return rev * output_size() < fwd * input_size() ? JacobianMode::kReverse : JacobianMode::kForward;
}

void Mlp::forward(const Eigen::Ref<const MatrixXd>& X, Eigen::Ref<MatrixXd> Y,
                  MlpWorkspace& ws) const {
  check_ready();
  const Index B = X.cols();
  check_shape("X", X.rows(), X.cols(), input_size(), B);
  check_shape("Y", Y.rows(), Y.cols(), output_size(), B);
  const int L = num_layers();
  ws.batch = B;
  ws.tangent_width = 0;
  ws.sizes = sizes_;
  if (ws.act.size() != size_t(L - 1)) {
    ws.act.resize(L - 1);
    ws.dact.resize(L - 1);
    ws.tan.resize(L - 1);
    ws.sbar.resize(L - 1);
  }
  // normalize
  MapM xh = take(ws.xhat, input_size(), B);
  if (config_.normalized())
    xh = (X.colwise() - config_.input_mean).array().colwise() / config_.input_std.array();
  else
    xh = X;
  // hidden layers
  for (int k = 0; k + 1 < L; ++k) {
    const Index n = sizes_[k + 1];
    MapM a = take(ws.act[k], n, B);
    MapM da = take(ws.dact[k], n, B);
    const CMapM h = k == 0 ? view(ws.xhat, input_size(), B) : view(ws.act[k - 1], sizes_[k], B);
    a.noalias() = weight(k) * h;
    a.colwise() += bias(k);
    if (config_.activation == Activation::kTanh) {
      tanh_inplace(a.data(), n * B);
      da = 1.0 - a.array().square();
    } else {
      da = (a.array() > 0.0).cast<double>();
      a = a.cwiseMax(0.0);
    }
  }
  // linear output
  const CMapM h = L == 1 ? view(ws.xhat, input_size(), B) : view(ws.act[L - 2], sizes_[L - 1], B);
  Y.noalias() = weight(L - 1) * h;
  Y.colwise() += bias(L - 1);
}

void Mlp::forward_jacobian(const Eigen::Ref<const MatrixXd>& X, Eigen::Ref<MatrixXd> Y,
                           Eigen::Ref<MatrixXd> J, MlpWorkspace& ws, JacobianMode mode) const {
  check_ready();
  const Index B = X.cols();
  const int nin = input_size(), nout = output_size(), L = num_layers();
  check_shape("J", J.rows(), J.cols(), nout, Index(nin) * B);
  forward(X, Y, ws);
  if (mode == JacobianMode::kAuto) mode = auto_jacobian_mode();
  if (L == 1) mode = JacobianMode::kForward;
  ws.mode = mode;
  if (mode == JacobianMode::kForward) {
    ws.tangent_width = nin;
    const Index W = Index(nin) * B;
    if (L == 1) {
      // J = W_0 D for every sample
      for (int i = 0; i < nin; ++i) J.col(i) = weight(0).col(i) * inv_std_[i];
      for (Index s = 1; s < B; ++s) J.middleCols(s * nin, nin) = J.leftCols(nin);
      return;
    }
    // Ȧ_1 = σ'(z_1) ⊙ W_0 D
    {
      MapM T = take(ws.tan[0], sizes_[1], W);
      const CMapM da = view(ws.dact[0], sizes_[1], B);
      for (Index s = 0; s < B; ++s)
        for (int i = 0; i < nin; ++i)
          T.col(s * nin + i) = (weight(0).col(i) * inv_std_[i]).cwiseProduct(da.col(s));
    }
    // Ȧ_{k+1} = σ'(z_{k+1}) ⊙ W_k Ȧ_k
    for (int k = 1; k + 1 < L; ++k) {
      MapM T = take(ws.tan[k], sizes_[k + 1], W);
      T.noalias() = weight(k) * view(ws.tan[k - 1], sizes_[k], W);
      scale_blocks(T, view(ws.dact[k], sizes_[k + 1], B), nin);
    }
    J.noalias() = weight(L - 1) * view(ws.tan[L - 2], sizes_[L - 1], W);
    return;
  }
  // reverse mode: Δ_top = σ'(z_top) ⊙ W_{L-1}^T per sample, then Δ_k = σ'(z_k) ⊙ W_k^T Δ_{k+1}
  ws.tangent_width = nout;
  const Index W = Index(nout) * B;
  {
    const int n = sizes_[L - 1];
    MapM D = take(ws.tan[L - 2], n, W);
    const CMapM da = view(ws.dact[L - 2], n, B);
    const auto Wt = weight(L - 1).transpose();
    for (Index s = 0; s < B; ++s)
      for (int o = 0; o < nout; ++o) D.col(s * nout + o) = Wt.col(o).cwiseProduct(da.col(s));
  }
  for (int k = L - 3; k >= 0; --k) {
    MapM D = take(ws.tan[k], sizes_[k + 1], W);
    D.noalias() = weight(k + 1).transpose() * view(ws.tan[k + 1], sizes_[k + 2], W);
    scale_blocks(D, view(ws.dact[k], sizes_[k + 1], B), nout);
  }
  // J_s^T = D W_0^T Δ_1
  MapM P = take(ws.tbar[0], nin, W);
  P.noalias() = weight(0).transpose() * view(ws.tan[0], sizes_[1], W);
  for (Index s = 0; s < B; ++s)
    for (int i = 0; i < nin; ++i)
      J.col(s * nin + i) = P.row(i).segment(s * nout, nout).transpose() * inv_std_[i];
}

void Mlp::backward(MlpWorkspace& ws, const Eigen::Ref<const MatrixXd>& dY,
                   Eigen::Ref<VectorXd> grad, MatrixXd* dX) const {
  backward(ws, dY, MatrixXd(), grad, dX);
}

void Mlp::backward(MlpWorkspace& ws, const Eigen::Ref<const MatrixXd>& dY,
                   const Eigen::Ref<const MatrixXd>& dJ, Eigen::Ref<VectorXd> grad,
                   MatrixXd* dX) const {
  check_ready();
  const int nin = input_size(), nout = output_size(), L = num_layers();
  const Index B = ws.batch;
  if (ws.sizes != sizes_) throw Error("Mlp: backward: the workspace holds no pass of this network");
  check_shape("grad", grad.rows(), grad.cols(), num_params(), 1);
  const bool has_y = dY.cols() != 0, has_j = dJ.cols() != 0;
  if (has_y) check_shape("dY", dY.rows(), dY.cols(), nout, B);
  if (has_j) {
    if (ws.tangent_width == 0)
      throw Error("Mlp: backward: dJ needs the last pass to be forward_jacobian, it was forward");
    check_shape("dJ", dJ.rows(), dJ.cols(), nout, Index(nin) * B);
  }
  if (dX) check_shape("dX", dX->rows(), dX->cols(), nin, B);
  const bool is_tanh = config_.activation == Activation::kTanh;
  const bool fwd_j = has_j && ws.mode == JacobianMode::kForward;
  const bool rev_j = has_j && ws.mode == JacobianMode::kReverse;
  const CMapM G(dJ.data(), nout, dJ.cols(), Eigen::OuterStride<>(dJ.outerStride()));

  auto gW = [&](int k) { return MapM(grad.data() + weight_offset(k), sizes_[k + 1], sizes_[k]); };
  auto gb = [&](int k) { return Map<VectorXd>(grad.data() + bias_offset(k), sizes_[k + 1]); };
  // h_k, the input of layer k; for hidden z_k (k >= 1): a_k, σ'(z_k) and the tangents
  auto h = [&](int k) {
    return k == 0 ? view(ws.xhat, nin, B) : view(ws.act[k - 1], sizes_[k], B);
  };
  auto a = [&](int k) { return view(ws.act[k - 1], sizes_[k], B); };
  auto da = [&](int k) { return view(ws.dact[k - 1], sizes_[k], B); };
  auto tan = [&](int k, Index w) { return view(ws.tan[k - 1], sizes_[k], w); };

  // reverse mode, bottom-up through the adjoint chain: weight terms and the
  // σ'' terms s_k of every hidden layer
  if (rev_j) {
    const Index W = Index(nout) * B;
    // J_s^T = D P_0 with P_0 = W_0^T Δ_1: P̄_0 = D G_s^T; W̄_0 += Δ_1 P̄_0^T; Δ̄_1 = W_0 P̄_0
    MapM Pb = take(ws.tbar[0], nin, W);
    for (Index s = 0; s < B; ++s)
      for (int i = 0; i < nin; ++i)
        Pb.row(i).segment(s * nout, nout) = G.col(s * nin + i).transpose() * inv_std_[i];
    gW(0).noalias() += tan(1, W) * Pb.transpose();
    int cur = 1;
    take(ws.tbar[cur], sizes_[1], W).noalias() = weight(0) * Pb;
    for (int k = 1; k < L; ++k) {
      // Δ_k = σ'(z_k) ⊙ P_k: s_k = σ''(z_k) ⊙ Σ_o Δ̄_k ⊙ P_k = -2 a_k ⊙ Σ_o Δ̄_k ⊙ Δ_k (tanh)
      const int n = sizes_[k];
      MapM Db = take(ws.tbar[cur], n, W);
      if (is_tanh) tanh_curvature(take(ws.sbar[k - 1], n, B), a(k), Db, tan(k, W), nout, false);
      scale_blocks(Db, da(k), nout);  // now P̄_k
      if (k + 1 < L) {
        // P_k = W_k^T Δ_{k+1}: W̄_k += Δ_{k+1} P̄_k^T; Δ̄_{k+1} = W_k P̄_k
        gW(k).noalias() += tan(k + 1, W) * Db.transpose();
        take(ws.tbar[1 - cur], sizes_[k + 1], W).noalias() = weight(k) * Db;
        cur = 1 - cur;
      } else {
        // P_{L-1} = W_{L-1}^T for every sample: W̄_{L-1} += Σ_s P̄_s^T
        MapM g = gW(L - 1);
        for (Index s = 0; s < B; ++s) g += Db.middleCols(s * nout, nout).transpose();
      }
    }
  }

  // top-down: z̄ (adjoint of z_{k+1}, n x B) and in forward mode T̄ (adjoint of
  // Ż_{k+1}, n x nin*B); a flag skips products with a z̄ known to be zero
  const Index Wf = Index(nin) * B;
  int zc = 0, tc = 0;
  bool z_zero = !has_y;
  if (has_y) take(ws.zbar[0], nout, B) = dY;
  for (int k = L - 1; k >= 0; --k) {
    // layer k: z_{k+1} = W_k h_k + b_k, and Ż_{k+1} = W_k Ḣ_k (Ḣ_0 = D) in forward mode
    const int nk = sizes_[k], nk1 = sizes_[k + 1];
    const CMapM zb = view(ws.zbar[zc], nk1, B);
    auto Tb = [&] { return k == L - 1 ? G : view(ws.tbar[tc], nk1, Wf); };
    if (!z_zero) {
      gW(k).noalias() += zb * h(k).transpose();
      // the bias sum one sample at a time: each entry summed in sample order
      // (Eigen's rowwise().sum() sums the rows its vector loop peels at the
      // buffer's alignment in another order, so a resumed run's first step, on
      // freshly allocated buffers, rounded a few biases differently)
      auto gbk = gb(k);
      for (Index s = 0; s < B; ++s) gbk += zb.col(s);
    }
    if (fwd_j) {
      if (k > 0) {
        gW(k).noalias() += Tb() * tan(k, Wf).transpose();
      } else {
        MapM g = gW(0);  // W̄_0[:, i] += d_i Σ_s T̄[:, s nin + i]
        const CMapM T = Tb();
        for (Index s = 0; s < B; ++s)
          for (int i = 0; i < nin; ++i) g.col(i) += T.col(s * nin + i) * inv_std_[i];
      }
    }
    if (k == 0) break;
    // hidden z_k: z̄_k = σ'(z_k) ⊙ W_k^T z̄_{k+1} (+ σ'' terms)
    MapM zn = take(ws.zbar[1 - zc], nk, B);
    if (z_zero)
      zn.setZero();
    else
      zn.noalias() = weight(k).transpose() * zb;
    zn.array() *= da(k).array();
    if (fwd_j) {
      // Ā = W_k^T T̄ (adjoint of Ȧ_k); z̄_k += σ'' ⊙ Σ_i Ā ⊙ Ż = -2 a ⊙ Σ_i Ā ⊙ Ȧ (tanh);
      // T̄_k = σ' ⊙ Ā
      MapM Ab = take(ws.tbar[1 - tc], nk, Wf);
      Ab.noalias() = weight(k).transpose() * Tb();
      if (is_tanh) tanh_curvature(zn, a(k), Ab, tan(k, Wf), nin, true);
      scale_blocks(Ab, da(k), nin);
      tc = 1 - tc;
    }
    if (rev_j && is_tanh) zn += view(ws.sbar[k - 1], nk, B);
    if (has_j && is_tanh) z_zero = false;
    zc = 1 - zc;
  }
  if (dX && !z_zero) {
    // x̄ = D W_0^T z̄_1
    MapM xb = take(ws.zbar[1 - zc], nin, B);
    xb.noalias() = weight(0).transpose() * view(ws.zbar[zc], sizes_[1], B);
    dX->array() += xb.array().colwise() * inv_std_.array();
  }
}

Eigen::VectorXd Mlp::operator()(const Eigen::Ref<const VectorXd>& x) const {
  MlpWorkspace ws;
  VectorXd y(output_size());
  forward(x, y, ws);
  return y;
}

Eigen::MatrixXd Mlp::input_jacobian(const Eigen::Ref<const VectorXd>& x) const {
  MlpWorkspace ws;
  VectorXd y(output_size());
  MatrixXd J(output_size(), input_size());
  forward_jacobian(x, y, J, ws);
  return J;
}

nlohmann::json Mlp::to_json() const {
  check_ready();
  nlohmann::json j;
  j["format"] = "impulse.mlp";
  j["version"] = 1;
  j["input_size"] = config_.input_size;
  j["hidden_sizes"] = config_.hidden_sizes;
  j["output_size"] = config_.output_size;
  j["activation"] = to_string(config_.activation);
  j["input_mean"] = std::vector<double>(config_.input_mean.data(),
                                        config_.input_mean.data() + config_.input_mean.size());
  j["input_std"] = std::vector<double>(config_.input_std.data(),
                                       config_.input_std.data() + config_.input_std.size());
  j["params"] = std::vector<double>(params_.data(), params_.data() + params_.size());
  return j;
}

Mlp Mlp::from_json(const nlohmann::json& j) {
  try {
    if (j.at("format").get<std::string>() != "impulse.mlp")
      throw Error("Mlp::from_json: format: expected \"impulse.mlp\", got \"" +
                  j.at("format").get<std::string>() + "\"");
    if (j.at("version").get<int>() != 1)
      throw Error("Mlp::from_json: version: expected 1, got " + j.at("version").dump());
    MlpConfig c;
    c.input_size = j.at("input_size").get<int>();
    c.hidden_sizes = j.at("hidden_sizes").get<std::vector<int>>();
    c.output_size = j.at("output_size").get<int>();
    c.activation = parse_activation(j.at("activation").get<std::string>());
    const auto mean = j.at("input_mean").get<std::vector<double>>();
    const auto sd = j.at("input_std").get<std::vector<double>>();
    c.input_mean = Map<const VectorXd>(mean.data(), Index(mean.size()));
    c.input_std = Map<const VectorXd>(sd.data(), Index(sd.size()));
    MlpInit zero;
    zero.output_scale = 0;
    Mlp m(std::move(c), zero);
    const auto p = j.at("params").get<std::vector<double>>();
    if (Index(p.size()) != m.num_params())
      throw Error("Mlp::from_json: params: expected " + std::to_string(m.num_params()) +
                  " entries, got " + std::to_string(p.size()));
    m.params_ = Map<const VectorXd>(p.data(), Index(p.size()));
    return m;
  } catch (const nlohmann::json::exception& e) {
    throw Error(std::string("Mlp::from_json: ") + e.what());
  }
}

}  // namespace impulse
