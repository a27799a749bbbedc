// Mlp: forward against a hand-written evaluation, and every derivative against
// central finite differences in double (dL/dθ and dL/dx of an output loss, the
// input Jacobian, and the gradient of a Jacobian-dependent loss, in both
// Jacobian modes, for tanh and relu, with normalization on); deterministic
// init; bit-exact JSON round trip; workspace reuse. AdamW: a hand-computed
// step, a quadratic bowl, decoupled weight decay, bit-exact resume.
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <random>

#include "host/optim/adam.h"
#include "host/learning/mlp.h"

namespace impulse {
namespace {

using Eigen::MatrixXd;
using Eigen::VectorXd;

// portable uniform(-1, 1) data
MatrixXd random_matrix(Eigen::Index r, Eigen::Index c, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  MatrixXd m(r, c);
  for (Eigen::Index j = 0; j < c; ++j)
    for (Eigen::Index i = 0; i < r; ++i) m(i, j) = 2.0 * (double(rng() >> 11) * 0x1.0p-53) - 1.0;
  return m;
}

MlpConfig small_config(Activation act, bool normalized, std::vector<int> hidden = {7, 6},
                       int in = 5, int out = 3) {
  MlpConfig c;
  c.input_size = in;
  c.hidden_sizes = std::move(hidden);
  c.output_size = out;
  c.activation = act;
  if (normalized) {
    c.input_mean = random_matrix(in, 1, 11);
    c.input_std = (random_matrix(in, 1, 12).array() + 1.6).matrix();  // in [0.6, 2.6]
  }
  return c;
}

// a network whose hidden units are not saturated and whose inputs are spread
Mlp small_net(Activation act, bool normalized = true, std::vector<int> hidden = {7, 6}, int in = 5,
              int out = 3) {
  MlpInit init;
  init.seed = 3;
  Mlp m(small_config(act, normalized, std::move(hidden), in, out), init);
  m.params() += 0.3 * random_matrix(m.num_params(), 1, 4);  // non-trivial biases too
  return m;
}

// L = Σ dY ⊙ f(X) + Σ G ⊙ J(X) (G may be empty)
double loss(const Mlp& m, const MatrixXd& X, const MatrixXd& dY, const MatrixXd& G,
            JacobianMode mode) {
  MlpWorkspace ws;
  MatrixXd Y(m.output_size(), X.cols()), J(m.output_size(), m.input_size() * X.cols());
  m.forward_jacobian(X, Y, J, ws, mode);
  double L = (dY.array() * Y.array()).sum();
  if (G.size()) L += (G.array() * J.array()).sum();
  return L;
}

struct FdGradients {
  VectorXd params;
  MatrixXd inputs;
};

FdGradients fd_gradients(const Mlp& m0, const MatrixXd& X, const MatrixXd& dY, const MatrixXd& G,
                         JacobianMode mode, double h = 1e-6) {
  Mlp m = m0;
  FdGradients fd{VectorXd(m.num_params()), MatrixXd(X.rows(), X.cols())};
  for (Eigen::Index p = 0; p < m.num_params(); ++p) {
    const double t = m.params()[p];
    m.params()[p] = t + h;
    const double lp = loss(m, X, dY, G, mode);
    m.params()[p] = t - h;
    const double lm = loss(m, X, dY, G, mode);
    m.params()[p] = t;
    fd.params[p] = (lp - lm) / (2 * h);
  }
  for (Eigen::Index j = 0; j < X.cols(); ++j)
    for (Eigen::Index i = 0; i < X.rows(); ++i) {
      MatrixXd Xp = X, Xm = X;
      Xp(i, j) += h;
      Xm(i, j) -= h;
      fd.inputs(i, j) = (loss(m, Xp, dY, G, mode) - loss(m, Xm, dY, G, mode)) / (2 * h);
    }
  return fd;
}

void expect_close(const MatrixXd& got, const MatrixXd& want, double tol, const char* what) {
  ASSERT_EQ(got.rows(), want.rows());
  ASSERT_EQ(got.cols(), want.cols());
  for (Eigen::Index j = 0; j < got.cols(); ++j)
    for (Eigen::Index i = 0; i < got.rows(); ++i)
      EXPECT_NEAR(got(i, j), want(i, j), tol * std::max(1.0, std::abs(want(i, j))))
          << what << " (" << i << ", " << j << ")";
}

const char* name(Activation a) { return to_string(a); }

// ---- forward ----------------------------------------------------------------

TEST(Mlp, ForwardMatchesHandWrittenEvaluation) {
  for (Activation act : {Activation::kTanh, Activation::kRelu}) {
    const Mlp m = small_net(act);
    const MatrixXd X = 2.0 * random_matrix(5, 4, 7);
    MatrixXd Y(3, 4);
    MlpWorkspace ws;
    m.forward(X, Y, ws);
    // the documented layout: per layer W (column-major) then b
    const MlpConfig& c = m.config();
    const std::vector<int> n = c.layer_sizes();
    for (int s = 0; s < 4; ++s) {
      VectorXd h = (X.col(s) - c.input_mean).cwiseQuotient(c.input_std);
      Eigen::Index off = 0;
      for (size_t k = 0; k + 1 < n.size(); ++k) {
        const Eigen::Map<const MatrixXd> W(m.params().data() + off, n[k + 1], n[k]);
        const Eigen::Map<const VectorXd> b(m.params().data() + off + n[k + 1] * n[k], n[k + 1]);
        off += n[k + 1] * (n[k] + 1);
        VectorXd z = W * h + b;
        if (k + 2 < n.size())
          h = act == Activation::kTanh ? VectorXd(z.array().tanh()) : VectorXd(z.cwiseMax(0.0));
        else
          h = z;
      }
      EXPECT_EQ(off, m.num_params());
      for (int o = 0; o < 3; ++o) EXPECT_NEAR(Y(o, s), h[o], 1e-14) << name(act);
      const VectorXd y1 = m(X.col(s));
      // a single column (a matrix-vector product) may round differently from a batch
      for (int o = 0; o < 3; ++o) EXPECT_NEAR(y1[o], Y(o, s), 1e-15);
    }
  }
}

TEST(Mlp, TanhIsWithinAFewUlpOfStdTanh) {
  // y = tanh(x) through a 1 -> 1 -> 1 network with unit weights and zero biases
  MlpConfig c;
  c.input_size = c.output_size = 1;
  c.hidden_sizes = {1};
  Mlp m(c);
  m.params() << 1, 0, 1, 0;
  std::vector<double> xs{0.0, 1e-300, -1e-12, 1e-6, 0.1,  -0.3,  0.6249999, 0.625, -0.625,
                         0.7, 1.0,    -2.5,   10.0, 19.0, -30.0, 400.0,     -1e300};
  for (int i = 0; i < 2000; ++i) xs.push_back(-4.0 + 8.0 * i / 1999.0);
  MatrixXd X = Eigen::Map<const MatrixXd>(xs.data(), 1, Eigen::Index(xs.size())), Y(1, X.cols());
  MlpWorkspace ws;
  m.forward(X, Y, ws);
  for (Eigen::Index j = 0; j < X.cols(); ++j) {
    const double want = std::tanh(X(0, j));
    const double ulp = std::nextafter(std::abs(want), 2.0) - std::abs(want);
    EXPECT_LE(std::abs(Y(0, j) - want),
              4 * (want == 0 ? std::numeric_limits<double>::denorm_min() : ulp))
        << "x = " << X(0, j);
  }
}

// ---- (b) backward of an output loss ---------------------------------------------

TEST(Mlp, OutputGradientsMatchFiniteDifferences) {
  for (Activation act : {Activation::kTanh, Activation::kRelu}) {
    const Mlp m = small_net(act);
    const MatrixXd X = 2.0 * random_matrix(5, 4, 21), dY = random_matrix(3, 4, 22);
    MlpWorkspace ws;
    MatrixXd Y(3, 4), dX = MatrixXd::Zero(5, 4);
    VectorXd grad = VectorXd::Zero(m.num_params());
    m.forward(X, Y, ws);
    m.backward(ws, dY, grad, &dX);
    const FdGradients fd = fd_gradients(m, X, dY, MatrixXd(), JacobianMode::kForward);
    expect_close(grad, fd.params, 1e-7, name(act));
    expect_close(dX, fd.inputs, 1e-7, name(act));
    // gradients accumulate
    m.backward(ws, dY, grad, &dX);
    expect_close(grad, 2 * fd.params, 1e-7, name(act));
    expect_close(dX, 2 * fd.inputs, 1e-7, name(act));
  }
}

// ---- (c) input Jacobian ----------------------------------------------------------

TEST(Mlp, InputJacobianMatchesFiniteDifferences) {
  for (Activation act : {Activation::kTanh, Activation::kRelu})
    for (JacobianMode mode : {JacobianMode::kForward, JacobianMode::kReverse})
      for (int out : {3, 8}) {  // 8 outputs > 5 inputs: auto picks forward mode
        const Mlp m = small_net(act, true, {7, 6}, 5, out);
        const int B = 4;
        const MatrixXd X = 2.0 * random_matrix(5, B, 31);
        MlpWorkspace ws;
        MatrixXd Y(out, B), J(out, 5 * B);
        m.forward_jacobian(X, Y, J, ws, mode);
        EXPECT_EQ(ws.mode, mode);
        const double h = 1e-6;
        MatrixXd Jfd(out, 5 * B);
        for (int s = 0; s < B; ++s)
          for (int i = 0; i < 5; ++i) {
            VectorXd xp = X.col(s), xm = X.col(s);
            xp[i] += h;
            xm[i] -= h;
            Jfd.col(s * 5 + i) = (m(xp) - m(xm)) / (2 * h);
          }
        expect_close(J, Jfd, 1e-7, name(act));
        // the single-sample helper gives the same block
        expect_close(m.input_jacobian(X.col(2)), J.middleCols(10, 5), 1e-14, name(act));
      }
}

TEST(Mlp, AutoModePicksTheCheaperSide) {
  EXPECT_EQ(small_net(Activation::kTanh, false, {7, 6}, 5, 3).auto_jacobian_mode(),
            JacobianMode::kReverse);
  EXPECT_EQ(small_net(Activation::kTanh, false, {7, 6}, 5, 8).auto_jacobian_mode(),
            JacobianMode::kForward);
  EXPECT_EQ(small_net(Activation::kTanh, false, {256, 256}, 12, 1).auto_jacobian_mode(),
            JacobianMode::kReverse);
}

// ---- (d) gradient of a Jacobian-dependent loss -----------------------------------

void check_jacobian_loss(Activation act, JacobianMode mode, std::vector<int> hidden, int out,
                         bool with_dy) {
  SCOPED_TRACE(std::string(name(act)) + (mode == JacobianMode::kForward ? " forward" : " reverse") +
               " hidden " + std::to_string(hidden.size()) + " out " + std::to_string(out) +
               (with_dy ? " with dY" : ""));
  const Mlp m = small_net(act, true, hidden, 5, out);
  const int B = 3;
  const MatrixXd X = 2.0 * random_matrix(5, B, 41);
  const MatrixXd dY = with_dy ? random_matrix(out, B, 42) : MatrixXd::Zero(out, B);
  const MatrixXd G = random_matrix(out, 5 * B, 43);
  MlpWorkspace ws;
  MatrixXd Y(out, B), J(out, 5 * B), dX = MatrixXd::Zero(5, B);
  VectorXd grad = VectorXd::Zero(m.num_params());
  m.forward_jacobian(X, Y, J, ws, mode);
  m.backward(ws, with_dy ? dY : MatrixXd(), G, grad, &dX);
  const FdGradients fd = fd_gradients(m, X, dY, G, mode);
  expect_close(grad, fd.params, 2e-7, "dL/dθ");
  expect_close(dX, fd.inputs, 2e-7, "dL/dx");
  if (act == Activation::kRelu && !with_dy) {
    // relu: J is locally constant in x (σ'' = 0), so the J-only loss has dL/dx = 0
    EXPECT_EQ(dX.norm(), 0.0);
    EXPECT_LT(fd.inputs.lpNorm<Eigen::Infinity>(), 1e-9);
    EXPECT_GT(grad.norm(), 0.1);  // but J depends on θ
  }
}

TEST(Mlp, JacobianLossGradientsMatchFiniteDifferences) {
  for (Activation act : {Activation::kTanh, Activation::kRelu})
    for (JacobianMode mode : {JacobianMode::kForward, JacobianMode::kReverse})
      for (bool with_dy : {false, true}) {
        check_jacobian_loss(act, mode, {7, 6}, 3, with_dy);
        check_jacobian_loss(act, mode, {7}, 4, with_dy);
        check_jacobian_loss(act, mode, {4, 7, 6}, 2, with_dy);
      }
  // no hidden layer: J = W D, constant in x
  check_jacobian_loss(Activation::kTanh, JacobianMode::kForward, {}, 3, true);
}

TEST(Mlp, ForwardAndReverseModesAgree) {
  for (Activation act : {Activation::kTanh, Activation::kRelu}) {
    const Mlp m = small_net(act, true, {7, 6}, 5, 3);
    const int B = 6;
    const MatrixXd X = 2.0 * random_matrix(5, B, 51), dY = random_matrix(3, B, 52),
                   G = random_matrix(3, 5 * B, 53);
    MatrixXd J[2], dX[2];
    VectorXd grad[2];
    for (int r = 0; r < 2; ++r) {
      MlpWorkspace ws;
      MatrixXd Y(3, B);
      J[r].resize(3, 5 * B);
      dX[r] = MatrixXd::Zero(5, B);
      grad[r] = VectorXd::Zero(m.num_params());
      m.forward_jacobian(X, Y, J[r], ws, r ? JacobianMode::kReverse : JacobianMode::kForward);
      m.backward(ws, dY, G, grad[r], &dX[r]);
    }
    expect_close(J[1], J[0], 1e-13, "J");
    expect_close(grad[1], grad[0], 1e-12, "grad");
    expect_close(dX[1], dX[0], 1e-12, "dX");
  }
}

// ---- init, persistence, workspace, misuse ------------------------------------------

TEST(Mlp, InitIsDeterministicAndPyTorchLike) {
  const MlpConfig c = small_config(Activation::kTanh, false);
  MlpInit init;
  init.seed = 42;
  const Mlp a(c, init), b(c, init);
  EXPECT_EQ(a.params(), b.params());
  init.seed = 43;
  const Mlp d(c, init);
  EXPECT_NE(a.params(), d.params());
  // golden values: mt19937_64 is fully specified and the uniform is ours, so
  // these hold on every standard library
  EXPECT_EQ(a.params()[0], 0x1.d363fbb453f9fp-3);
  EXPECT_EQ(a.params()[a.num_params() - 1], -0x1.e1b2d317a0964p-4);
  // bounds 1/sqrt(fan_in)
  const std::vector<int> n = c.layer_sizes();
  for (int k = 0; k < a.num_layers(); ++k) {
    const double bound = 1 / std::sqrt(double(n[k]));
    EXPECT_LE(a.weight(k).cwiseAbs().maxCoeff(), bound);
    EXPECT_LE(a.bias(k).cwiseAbs().maxCoeff(), bound);
    EXPECT_GT(a.weight(k).cwiseAbs().maxCoeff(), 0.5 * bound);
  }
  // output_scale scales the output layer only
  init.seed = 42;
  init.output_scale = 0.01;
  const Mlp s(c, init);
  const int last = a.num_layers() - 1;
  EXPECT_EQ(s.weight(0), a.weight(0));
  EXPECT_EQ(s.weight(last), (0.01 * a.weight(last)).eval());
  EXPECT_EQ(s.bias(last), (0.01 * a.bias(last)).eval());
  init.output_scale = 0;
  EXPECT_EQ(Mlp(c, init)(VectorXd::Ones(5)), VectorXd::Zero(3));
}

TEST(Mlp, JsonRoundTripIsBitExact) {
  for (Activation act : {Activation::kTanh, Activation::kRelu})
    for (bool normalized : {false, true}) {
      const Mlp m = small_net(act, normalized);
      const std::string text = m.to_json().dump();
      const Mlp r = Mlp::from_json(nlohmann::json::parse(text));
      EXPECT_EQ(r.params(), m.params());
      EXPECT_EQ(r.config().layer_sizes(), m.config().layer_sizes());
      EXPECT_EQ(r.config().activation, act);
      EXPECT_EQ(r.config().normalized(), normalized);
      const MatrixXd X = 3.0 * random_matrix(5, 9, 61);
      MatrixXd Y0(3, 9), Y1(3, 9), J0(3, 45), J1(3, 45);
      MlpWorkspace w0, w1;
      m.forward_jacobian(X, Y0, J0, w0);
      r.forward_jacobian(X, Y1, J1, w1);
      EXPECT_EQ(Y0, Y1);
      EXPECT_EQ(J0, J1);
      EXPECT_EQ(r.to_json().dump(), text);
    }
  nlohmann::json bad = small_net(Activation::kTanh).to_json();
  bad["params"].erase(0);
  EXPECT_THROW(Mlp::from_json(bad), Error);
  bad = small_net(Activation::kTanh).to_json();
  bad["activation"] = "sigmoid";
  EXPECT_THROW(Mlp::from_json(bad), Error);
  bad.erase("hidden_sizes");
  EXPECT_THROW(Mlp::from_json(bad), Error);
}

TEST(Mlp, RepeatedCallsReuseTheWorkspaceAndAreDeterministic) {
  const Mlp m = small_net(Activation::kTanh);
  const int B = 16;
  const MatrixXd X = random_matrix(5, B, 71), dY = random_matrix(3, B, 72),
                 G = random_matrix(3, 5 * B, 73);
  MlpWorkspace ws;
  MatrixXd Y(3, B), J[2] = {MatrixXd(3, 5 * B), MatrixXd(3, 5 * B)};
  const JacobianMode modes[2] = {JacobianMode::kForward, JacobianMode::kReverse};
  VectorXd g0 = VectorXd::Zero(m.num_params()), g1 = g0;
  for (int r = 0; r < 2; ++r) {
    m.forward_jacobian(X, Y, J[r], ws, modes[r]);
    m.backward(ws, dY, G, g0);
  }
  // the buffers are sized now: the same calls (and smaller batches) keep them
  auto collect = [&] {
    std::vector<const double*> p{ws.xhat.data(), ws.zbar[0].data(), ws.zbar[1].data(),
                                 ws.tbar[0].data(), ws.tbar[1].data()};
    for (auto* v : {&ws.act, &ws.dact, &ws.tan, &ws.sbar})
      for (const VectorXd& x : *v) p.push_back(x.data());
    return p;
  };
  const std::vector<const double*> ptrs = collect();
  for (int r = 0; r < 2; ++r) {
    MatrixXd J2(3, 5 * B);
    m.forward_jacobian(X, Y, J2, ws, modes[r]);
    m.backward(ws, dY, G, g1);
    EXPECT_EQ(collect(), ptrs);
    EXPECT_EQ(J2, J[r]);
  }
  EXPECT_EQ(g1, g0);  // bit-identical repeat of both passes
  MatrixXd Ys(3, 4), Js(3, 20);
  m.forward_jacobian(X.leftCols(4), Ys, Js, ws);
  EXPECT_EQ(collect(), ptrs);
}

TEST(Mlp, MisuseThrows) {
  MlpConfig c = small_config(Activation::kTanh, true);
  c.input_std[2] = 0;
  EXPECT_THROW(Mlp{c}, Error);
  c = small_config(Activation::kTanh, true);
  c.input_mean.resize(4);
  EXPECT_THROW(Mlp{c}, Error);
  c = small_config(Activation::kTanh, false, {7, 0});
  EXPECT_THROW(Mlp{c}, Error);
  EXPECT_THROW(parse_activation("gelu"), Error);

  const Mlp m = small_net(Activation::kTanh);
  MlpWorkspace ws;
  MatrixXd X = random_matrix(5, 4, 1), Y(3, 4), J(3, 20);
  VectorXd grad = VectorXd::Zero(m.num_params());
  MatrixXd Ybad(3, 3), Xbad(4, 4);
  EXPECT_THROW(m.forward(Xbad, Y, ws), Error);
  EXPECT_THROW(m.forward(X, Ybad, ws), Error);
  MatrixXd Jbad(3, 19);
  EXPECT_THROW(m.forward_jacobian(X, Y, Jbad, ws), Error);
  m.forward(X, Y, ws);
  EXPECT_THROW(m.backward(ws, MatrixXd::Ones(3, 4), MatrixXd::Ones(3, 20), grad), Error);  // no J
  EXPECT_THROW(m.backward(ws, MatrixXd::Ones(3, 5), grad), Error);
  VectorXd short_grad(m.num_params() - 1);
  EXPECT_THROW(m.backward(ws, MatrixXd::Ones(3, 4), short_grad), Error);
  const Mlp other = small_net(Activation::kTanh, true, {7}, 5, 3);
  VectorXd other_grad = VectorXd::Zero(other.num_params());
  EXPECT_THROW(other.backward(ws, MatrixXd::Ones(3, 4), other_grad), Error);
  try {
    m.forward(Xbad, Y, ws);
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected 5 x 4, got 4 x 4"), std::string::npos)
        << e.what();
  }
}

// ---- AdamW --------------------------------------------------------------------

TEST(AdamW, OneStepMatchesHandComputedUpdate) {
  AdamWSettings s;
  s.lr = 0.1;
  s.weight_decay = 0.5;
  AdamW opt(3, s);
  VectorXd theta(3), g(3);
  theta << 1.0, -2.0, 0.5;
  g << 0.3, -0.0, 4.0;
  const VectorXd theta0 = theta;
  opt.step(theta, g);
  for (int i = 0; i < 3; ++i) {
    // t = 1: m̂ = g, v̂ = g², so the step is lr g / (|g| + eps)
    const double m = 0.1 * g[i], v = 0.001 * g[i] * g[i];
    const double mhat = m / (1 - 0.9), vhat = v / (1 - 0.999);
    const double want = theta0[i] * (1 - 0.1 * 0.5) - 0.1 * mhat / (std::sqrt(vhat) + 1e-8);
    EXPECT_NEAR(theta[i], want, 1e-14) << i;
  }
  EXPECT_EQ(opt.step_count(), 1);
  // second step, by hand
  VectorXd g2(3);
  g2 << -1.0, 2.0, 0.0;
  const VectorXd theta1 = theta, m1 = opt.first_moment(), v1 = opt.second_moment();
  opt.step(theta, g2);
  for (int i = 0; i < 3; ++i) {
    const double m = 0.9 * m1[i] + 0.1 * g2[i], v = 0.999 * v1[i] + 0.001 * g2[i] * g2[i];
    const double mhat = m / (1 - 0.81), vhat = v / (1 - 0.999 * 0.999);
    const double want = theta1[i] * 0.95 - 0.1 * mhat / (std::sqrt(vhat) + 1e-8);
    EXPECT_NEAR(theta[i], want, 1e-14) << i;
  }
}

TEST(AdamW, QuadraticBowlConverges) {
  // f = ½ Σ a_i (θ_i - c_i)², badly scaled
  const int n = 6;
  VectorXd a(n), c(n);
  a << 1e-2, 0.1, 1, 10, 100, 1000;
  c << 1, -2, 3, -4, 5, -6;
  AdamWSettings s;
  s.lr = 0.05;
  s.weight_decay = 0;
  AdamW opt(n, s);
  VectorXd theta = VectorXd::Zero(n);
  for (int t = 0; t < 3000; ++t) {
    if (t == 2000) opt.set_lr(0.005);
    const VectorXd g = a.cwiseProduct(theta - c);
    opt.step(theta, g);
  }
  EXPECT_LT((theta - c).lpNorm<Eigen::Infinity>(), 1e-2) << theta.transpose();
}

TEST(AdamW, WeightDecayIsDecoupled) {
  AdamWSettings s;
  s.lr = 0.01;
  s.weight_decay = 0.1;
  // zero gradients: only the decay acts, θ_t = θ_0 (1 - lr wd)^t
  {
    AdamW opt(2, s);
    VectorXd theta(2);
    theta << 3.0, -1.5;
    const VectorXd theta0 = theta;
    for (int t = 0; t < 100; ++t) opt.step(theta, VectorXd::Zero(2));
    for (int i = 0; i < 2; ++i) EXPECT_NEAR(theta[i], theta0[i] * std::pow(1 - 1e-3, 100), 1e-14);
  }
  // with gradients, the decay does not enter the moments: one step differs from
  // wd = 0 by exactly -lr wd θ_0, whatever the gradient scale
  AdamWSettings s0 = s;
  s0.weight_decay = 0;
  AdamW with(3, s), without(3, s0);
  VectorXd t1(3), t0(3), g(3);
  t1 << 2.0, -1.0, 0.5;
  t0 = t1;
  g << 1e-3, 5.0, -2.0;
  const VectorXd theta0 = t1;
  with.step(t1, g);
  without.step(t0, g);
  EXPECT_EQ(with.first_moment(), without.first_moment());
  EXPECT_EQ(with.second_moment(), without.second_moment());
  for (int i = 0; i < 3; ++i) EXPECT_NEAR(t1[i] - t0[i], -0.01 * 0.1 * theta0[i], 1e-15);
}

TEST(AdamW, StateRestoreContinuesIdentically) {
  const int n = 5;
  AdamWSettings s;
  s.lr = 0.03;
  auto grad = [](const VectorXd& th, int t) {  // a θ-dependent gradient sequence
    return (th.array().sin() + 0.1 * t).matrix().eval();
  };
  AdamW opt(n, s);
  VectorXd theta = random_matrix(n, 1, 81);
  for (int t = 0; t < 7; ++t) opt.step(theta, grad(theta, t));
  const std::string saved = opt.to_json().dump();
  const VectorXd saved_vec = opt.state_vector();
  const VectorXd theta_saved = theta;
  for (int t = 7; t < 15; ++t) opt.step(theta, grad(theta, t));

  AdamW a = AdamW::from_json(nlohmann::json::parse(saved));
  AdamW b(n, s);
  b.set_state_vector(saved_vec);
  EXPECT_EQ(a.step_count(), 7);
  EXPECT_EQ(b.step_count(), 7);
  VectorXd ta = theta_saved, tb = theta_saved;
  for (int t = 7; t < 15; ++t) {
    a.step(ta, grad(ta, t));
    b.step(tb, grad(tb, t));
  }
  EXPECT_EQ(ta, theta);
  EXPECT_EQ(tb, theta);
  EXPECT_EQ(a.state_vector(), opt.state_vector());
}

TEST(AdamW, MisuseThrows) {
  AdamWSettings s;
  s.lr = -1;
  EXPECT_THROW(AdamW(3, s), Error);
  s = AdamWSettings{};
  s.beta2 = 1;
  EXPECT_THROW(AdamW(3, s), Error);
  AdamW opt(3);
  VectorXd theta = VectorXd::Ones(3);
  EXPECT_THROW(opt.step(theta, VectorXd::Ones(2)), Error);
  VectorXd g = VectorXd::Ones(3);
  g[1] = std::numeric_limits<double>::quiet_NaN();
  EXPECT_THROW(opt.step(theta, g), Error);
  EXPECT_EQ(theta, VectorXd::Ones(3));  // untouched
  EXPECT_EQ(opt.step_count(), 0);
  EXPECT_THROW(opt.set_state_vector(VectorXd::Zero(6)), Error);
  VectorXd st = VectorXd::Zero(7);
  st[0] = 1.5;
  EXPECT_THROW(opt.set_state_vector(st), Error);
}

}  // namespace
}  // namespace impulse
