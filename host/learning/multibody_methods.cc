#include "host/learning/multibody_methods.h"

#include <algorithm>
#include <cmath>

#include "host/learning/ccn.h"
#include "host/learning/diffsim.h"
#include "host/learning/mlp.h"
#include "kernels/ccn_device.h"
#include "solvers/error.h"

namespace impulse {

bool is_multibody_method(const std::string& m) {
  return m == "ccn" || m == "ccn-r" || m == "diffsim" || m == "diffsim-r" || m == "end-to-end";
}

KnownGroups known_groups(const std::string& list) {
  KnownGroups k;
  size_t start = 0;
  while (start <= list.size()) {
    const size_t comma = std::min(list.find(',', start), list.size());
    const std::string item = list.substr(start, comma - start);
    bool* flag = item == "geometry" ? &k.geometry : item == "friction" ? &k.friction
                                                   : item == "inertia" ? &k.inertia : nullptr;
    if (!flag)
      throw Error("train: --known: '" + item + "' is not a parameter group (geometry, friction, inertia)");
    if (*flag) throw Error("train: --known: '" + item + "' is named twice");
    *flag = true;
    start = comma + 1;
  }
  return k;
}

namespace {

std::vector<double> to_std(const Eigen::VectorXd& v) { return std::vector<double>(v.data(), v.data() + v.size()); }

// What CCN and DiffSim share: the CCN model, the optimizer's variables θ/scale,
// and the loss over chunks of transitions (so that validation over thousands
// of them keeps memory small); each says how one chunk is evaluated.
class StructuredMethod : public Method {
 public:
  StructuredMethod(const TrainConfig& c, const MultibodyData& d, bool residual)
      : model_(d.system, residual, c.seed * 7919 + 3, ResidualShape{c.residual_layers, c.residual_width}) {
    // the given groups keep the system's published values (the model as
    // constructed), the others start from the paper's random initialization
    const Eigen::VectorXd nominal = model_.parameters();
    model_.randomize(c.seed * 7919 + 1);
    scale_ = model_.parameter_scale();
    known_.setZero(nominal.size());
    if (!c.known.empty()) {
      const KnownGroups k = known_groups(c.known);
      const int inertia = model_.inertia_offset(), mu = model_.mu_offset();
      if (k.geometry) known_.head(inertia).setOnes();
      if (k.inertia) known_.segment(inertia, mu - inertia).setOnes();
      if (k.friction) known_(mu) = 1;
    }
    given_ = nominal;
    apply_known();
  }
  std::vector<double> variables() const override { return to_std(model_.parameters().cwiseQuotient(scale_)); }
  // the known groups are set back to their given values: the optimizer's
  // copy of them (moved only by a weight decay) is never used
  void set_variables(const std::vector<double>& v) override {
    model_.set_parameters(Eigen::Map<const Eigen::VectorXd>(v.data(), Eigen::Index(v.size())).cwiseProduct(scale_));
    apply_known();
  }
  double loss(const Transitions& t, const std::vector<int>& idx, int, GradVector* grad, BatchStats& stats) override {
    double total = 0;
    const size_t chunk = 512;
    for (size_t b = 0; b < idx.size(); b += chunk) {
      const size_t e = std::min(idx.size(), b + chunk);
      batch_.resize(e - b);
      for (size_t i = b; i < e; ++i) {
        batch_[i - b].x = t.mx[static_cast<size_t>(idx[i])];
        batch_[i - b].x_next = t.mxn[static_cast<size_t>(idx[i])];
      }
      long long iterations = 0;
      int not_solved = 0;
      const double mean = evaluate_chunk(grad ? &g_ : nullptr, iterations, not_solved);
      const double n = static_cast<double>(e - b);
      total += mean * n;
      stats.qp_iterations += iterations;
      stats.qp_count += static_cast<int>(e - b);
      stats.not_solved += not_solved;
      if (grad)
        for (Eigen::Index i = 0; i < g_.size(); ++i)
          if (known_(i) == 0) (*grad)[static_cast<size_t>(i)] += g_(i) * scale_(i) * n;
    }
    return total;
  }
  nlohmann::json params_json() const override { return model_.to_json(); }
  double default_lr() const override { return 3e-3; }
  double default_weight_decay() const override { return 0; }

 protected:
  // the mean loss of batch_ (and its gradient in θ when g is given)
  virtual double evaluate_chunk(Eigen::VectorXd* g, long long& iterations, int& not_solved) = 0;

  void apply_known() {
    if (known_.sum() == 0) return;
    Eigen::VectorXd theta = model_.parameters();
    for (Eigen::Index i = 0; i < known_.size(); ++i)
      if (known_(i) != 0) theta(i) = given_(i);
    model_.set_parameters(theta);
  }

  CcnModel model_;
  Eigen::VectorXd known_, given_;  // 1 where θ_i is given (--known), and its value
  Eigen::VectorXd scale_, g_;
  std::vector<CcnTransition> batch_;
};

class CcnMethod : public StructuredMethod {
 public:
  CcnMethod(const TrainConfig& c, const MultibodyData& d, bool residual) : StructuredMethod(c, d, residual) {
    CcnLossConfig lc;
    lc.dt = d.dt;
    // Table 2: the residual's weights differ between real and simulated data
    lc.weights.res = c.w_res >= 0 ? c.w_res : (d.synthetic ? 0.001 : 1.0);
    lc.weights.res_w = c.w_res_w >= 0 ? c.w_res_w : (d.synthetic ? 0.0 : 0.1);
    QpSettings<double> st;
    st.eps_abs = c.eps;
    st.eps_rel = c.eps;
    BatchOptions opt;
    opt.threads = c.threads;
    opt.backend = parse_backend(c.backend);
    loss_ = CcnLoss(lc, st, opt);
    // the GPU backend: transitions resident on the device, the loss assembled,
    // solved and differentiated there (kernels/ccn_device.h); the residual
    // network stays on the host (δ up, ∂loss/∂δ down, per batch)
    if (opt.backend == Backend::kCuda) device_ = std::make_unique<cuda::DeviceCcn<double>>(ccn_device_system(model_, lc), st);
  }
  double loss(const Transitions& t, const std::vector<int>& idx, int set, GradVector* grad,
              BatchStats& stats) override {
    return device_ ? device_loss(t, idx, set, grad, stats) : StructuredMethod::loss(t, idx, set, grad, stats);
  }
  // the device warm-starts each transition's QP from its last answer (the CPU solves
  // cold): a checkpoint keeps those, so a resumed GPU run continues bit for bit
  NpyArray warm_starts(int set) const override {
    return device_ ? device_warm_.rows(*device_, set, uploaded_[set] != nullptr) : NpyArray{};
  }
  void set_warm_starts(int set, const NpyArray& a) override {
    if (device_) device_warm_.put(*device_, set, uploaded_[set] != nullptr, warm_from_rows(a));
  }

 private:
  double evaluate_chunk(Eigen::VectorXd* g, long long& iterations, int& not_solved) override {
    const CcnLossResult r = loss_.evaluate(model_, batch_, g);
    iterations = r.iterations;
    not_solved = r.not_solved;
    return r.loss;
  }

  double device_loss(const Transitions& t, const std::vector<int>& idx, int set, GradVector* grad,
                     BatchStats& stats) {
    const MultibodySystem& sys = model_.system();
    const int W = sys.width(), nv = sys.nv(), nth = model_.net_offset();
    if (uploaded_[set] != &t) {  // first use of this set: upload its transitions once
      std::vector<double> xs, xns;
      xs.reserve(static_cast<size_t>(t.size()) * W);
      xns.reserve(xs.capacity());
      for (int i = 0; i < t.size(); ++i) {
        xs.insert(xs.end(), t.mx[static_cast<size_t>(i)].data(), t.mx[static_cast<size_t>(i)].data() + W);
        xns.insert(xns.end(), t.mxn[static_cast<size_t>(i)].data(), t.mxn[static_cast<size_t>(i)].data() + W);
      }
      device_->upload_transitions(set, xs.data(), xns.data(), t.size());
      uploaded_[set] = &t;
      device_warm_.uploaded(*device_, set);
    }
    const Eigen::VectorXd theta = model_.parameters();
    const double res_w = loss_.config().weights.applied(loss_.config().dt).res_w;
    double total = 0;
    const size_t chunk = 2048;  // device memory: QP work per transition
    for (size_t b = 0; b < idx.size(); b += chunk) {
      const int B = static_cast<int>(std::min(idx.size(), b + chunk) - b);
      std::vector<const Eigen::VectorXd*> xs;
      for (int i = 0; i < B; ++i) xs.push_back(&t.mx[static_cast<size_t>(idx[b + i])]);
      MlpWorkspace ws;
      const Eigen::MatrixXd D = model_.residuals(xs, ws);
      Eigen::MatrixXd gD(nv, B);
      std::vector<double> l(static_cast<size_t>(B)), g(static_cast<size_t>(nth));
      const cuda::DeviceLossStats st =
          device_->evaluate(set, theta.data(), model_.has_residual() ? D.data() : nullptr, idx.data() + b, B, l.data(),
                            grad ? g.data() : nullptr, grad && model_.has_residual() ? gD.data() : nullptr);
      stats.qp_iterations += st.iterations;
      stats.qp_count += B;
      stats.not_solved += st.not_solved;
      for (double v : l) total += v;
      // the residual's weight penalty, once per transition as on the CPU
      Eigen::VectorXd gnet = Eigen::VectorXd::Zero(model_.has_residual() ? model_.network().num_params() : 0);
      total += model_.residual_weight_penalty(res_w * B, gnet.data());
      if (grad) {
        if (model_.has_residual()) model_.network().backward(ws, gD, gnet);
        for (int i = 0; i < nth; ++i) (*grad)[static_cast<size_t>(i)] += g[static_cast<size_t>(i)] * scale_(i);
        for (Eigen::Index i = 0; i < gnet.size(); ++i) (*grad)[static_cast<size_t>(nth + i)] += gnet(i);
      }
    }
    return total;
  }

  CcnLoss loss_{CcnLossConfig{}};
  std::unique_ptr<cuda::DeviceCcn<double>> device_;
  const Transitions* uploaded_[2] = {nullptr, nullptr};
  DeviceWarmStarts<cuda::DeviceCcn<double>> device_warm_;
};

// DiffSim (host/learning/diffsim.h): the CCN model trained on the one-step
// prediction error through the Anitescu step, with the same initialization.
class DiffSimMethod : public StructuredMethod {
 public:
  DiffSimMethod(const TrainConfig& c, const MultibodyData& d, bool residual) : StructuredMethod(c, d, residual) {
    DiffSimConfig dc;
    dc.dt = d.dt;
    dc.w_res = c.w_res >= 0 ? c.w_res : (d.synthetic ? 1.0 : 1000.0);
    dc.w_res_w = c.w_res_w >= 0 ? c.w_res_w : (d.synthetic ? 0.0 : 1.0);
    MultibodyStepOptions so;
    so.qp.eps_abs = std::min(c.eps, 1e-6);  // the implicit gradient needs an accurate λ
    so.qp.eps_rel = std::min(c.eps, 1e-6);
    so.batch.threads = c.threads;
    so.batch.backend = parse_backend(c.backend);
    loss_ = DiffSimLoss(dc, so);
  }

 private:
  double evaluate_chunk(Eigen::VectorXd* g, long long& iterations, int& not_solved) override {
    const DiffSimResult r = loss_.evaluate(model_, batch_, g);
    iterations = r.iterations;
    not_solved = r.not_solved;
    return r.loss;
  }

  DiffSimLoss loss_{DiffSimConfig{}};
};

// End-to-end (CCN App. A.3): v' = σ_out ⊙ f(features(x)) + μ_out with f an MLP
// 4x256 tanh on the residual network's features, normalized by the training set.
class EndToEndMbMethod : public Method {
 public:
  EndToEndMbMethod(const TrainConfig& c, const MultibodyData& d, const Transitions& train) : sys_(d.system) {
    const int in = 12 + sys_.joints() + sys_.nv(), nv = sys_.nv();
    CcnModel feat(sys_, false);
    Eigen::MatrixXd X(in, train.size()), Y(nv, train.size());
    for (int i = 0; i < train.size(); ++i) {
      feat.residual_features(train.mx[static_cast<size_t>(i)], X.col(i));
      Y.col(i) = train.mxn[static_cast<size_t>(i)].tail(nv);
    }
    MlpConfig mc;
    mc.input_size = in;
    mc.hidden_sizes = {256, 256, 256, 256};
    mc.output_size = nv;
    mc.activation = Activation::kTanh;
    mc.input_mean = X.rowwise().mean();
    mc.input_std = ((X.colwise() - mc.input_mean).array().square().rowwise().mean()).sqrt().matrix();
    for (Eigen::Index i = 0; i < in; ++i)
      if (!(mc.input_std(i) > 1e-9)) mc.input_std(i) = 1;  // a constant feature
    out_mean_ = Y.rowwise().mean();
    out_std_ = ((Y.colwise() - out_mean_).array().square().rowwise().mean()).sqrt().matrix();
    for (Eigen::Index i = 0; i < nv; ++i)
      if (!(out_std_(i) > 1e-9)) out_std_(i) = 1;
    MlpInit init;
    init.seed = c.seed * 7919 + 2;
    net_ = Mlp(mc, init);
  }
  std::vector<double> variables() const override { return to_std(net_.params()); }
  void set_variables(const std::vector<double>& v) override {
    net_.params() = Eigen::Map<const Eigen::VectorXd>(v.data(), Eigen::Index(v.size()));
  }
  double loss(const Transitions& t, const std::vector<int>& idx, int, GradVector* grad,
              BatchStats&) override {
    const int nv = sys_.nv(), B = static_cast<int>(idx.size());
    CcnModel feat(sys_, false);
    X_.resize(net_.input_size(), B);
    Y_.resize(nv, B);
    T_.resize(nv, B);
    for (int i = 0; i < B; ++i) {
      feat.residual_features(t.mx[static_cast<size_t>(idx[static_cast<size_t>(i)])], X_.col(i));
      T_.col(i) = (t.mxn[static_cast<size_t>(idx[static_cast<size_t>(i)])].tail(nv) - out_mean_).cwiseQuotient(out_std_);
    }
    net_.forward(X_, Y_, ws_);
    const Eigen::MatrixXd R = Y_ - T_;  // in normalized units
    if (grad) {
      Eigen::VectorXd g = Eigen::VectorXd::Zero(net_.num_params());
      net_.backward(ws_, 2 * R, g);
      for (Eigen::Index i = 0; i < g.size(); ++i) (*grad)[static_cast<size_t>(i)] += g(i);
    }
    return R.squaredNorm();
  }
  nlohmann::json params_json() const override {
    return {{"format", "impulse.end-to-end-multibody"}, {"system", sys_.name}, {"network", net_.to_json()},
            {"output_mean", to_std(out_mean_)}, {"output_std", to_std(out_std_)}};
  }
  double default_lr() const override { return 1e-3; }
  double default_weight_decay() const override { return 0; }

 private:
  MultibodySystem sys_;
  Mlp net_;
  MlpWorkspace ws_;
  Eigen::VectorXd out_mean_, out_std_;
  Eigen::MatrixXd X_, Y_, T_;
};

}  // namespace

std::unique_ptr<Method> make_multibody_method(const TrainConfig& c, const MultibodyData& d, const Transitions& train) {
  if (c.method == "ccn") return std::make_unique<CcnMethod>(c, d, false);
  if (c.method == "ccn-r") return std::make_unique<CcnMethod>(c, d, true);
  if (c.method == "diffsim") return std::make_unique<DiffSimMethod>(c, d, false);
  if (c.method == "diffsim-r") return std::make_unique<DiffSimMethod>(c, d, true);
  if (c.method == "end-to-end") return std::make_unique<EndToEndMbMethod>(c, d, train);
  throw Error("method '" + c.method +
              "' is not available for multibody systems (ccn | ccn-r | diffsim | diffsim-r | end-to-end)");
}

}  // namespace impulse
