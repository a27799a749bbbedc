// GCC 12 with AVX-512: false bounds warnings on a fixed-size Eigen vector copied
// with a 512-bit load
#pragma GCC diagnostic ignored "-Warray-bounds"
#pragma GCC diagnostic ignored "-Wstringop-overflow"
// The cube's methods (the ContactNets path, docs/learning.md): ContactNets with the
// Polytope or the Deep contact model (host/learning/contactnets_loss.h) and the End-to-end
// baseline, each as a Method for train()'s loop.
#include "host/learning/cube_methods.h"

#include <algorithm>
#include <cmath>
#include <memory>

#include "host/batch/qp_batch.h"
#include "host/dynamics/simulate.h"
#include "host/learning/contactnets_loss.h"
#include "host/learning/contactnets_model.h"
#include "host/learning/mlp.h"
#include "kernels/contactnets_device.h"
#include "solvers/error.h"

namespace impulse {

Eigen::VectorXd e2e_features(const State& x) {
  Eigen::VectorXd f(18);
  f.head<3>() = x.segment<3>(0);
  const Eigen::Matrix3d R = rotation(x);
  for (int r = 0; r < 3; ++r)
    for (int c = 0; c < 3; ++c) f(3 + 3 * r + c) = R(r, c);
  f.segment<6>(12) = x.segment<6>(7);
  return f;
}

namespace {

// ---- methods ------------------------------------------------------------------

class ContactNetsMethod : public Method {
 public:
  // device_assembly: keep the transitions on the GPU and assemble, solve and
  // differentiate there (the Polytope model); otherwise assemble on the CPU and
  // solve on the backend of `opt`.
  ContactNetsMethod(std::unique_ptr<LearnableContactModel> model, ContactNetsLossConfig cfg,
                    QpSettings<double> st, BatchOptions opt, int n_train, int n_valid,
                    bool device_assembly = false)
      : model_(std::move(model)), loss_(cfg, st, opt),
        scale_(model_->parameter_scale(cfg.length_unit)) {
    warm_[0].resize(n_train);
    warm_[1].resize(n_valid);
    if (device_assembly)
      device_ = std::make_unique<cuda::DeviceContactNets<double>>(loss_consts(cfg), st, opt.device_layout);
  }
  std::vector<double> variables() const override {
    std::vector<double> v = model_->parameters();
    for (size_t i = 0; i < v.size(); ++i) v[i] /= scale_[i];
    return v;
  }
  void set_variables(const std::vector<double>& v) override {
    std::vector<double> th(v.size());
    for (size_t i = 0; i < v.size(); ++i) th[i] = v[i] * scale_[i];
    model_->set_parameters(th);
  }
  double loss(const Transitions& t, const std::vector<int>& idx, int set,
              GradVector* grad, BatchStats& stats) override {
    const int B = static_cast<int>(idx.size());
    if (device_) return device_loss(t, idx, set, grad, stats);
    frames_.resize(B);
    warm_batch_.resize(B);
    for (int i = 0; i < B; ++i) {
      frames_[i].x = t.x[idx[i]];
      frames_[i].x_next = t.xn[idx[i]];
    }
    model_->frames(frames_, loss_.options().threads);
    for (int i = 0; i < B; ++i) warm_batch_[i].swap(warm_[set][idx[i]]);
    LossBatchResult r;
    loss_.evaluate(frames_, grad != nullptr, r, &warm_batch_);
    for (int i = 0; i < B; ++i) warm_[set][idx[i]].swap(warm_batch_[i]);
    stats.qp_iterations += r.iterations;
    stats.qp_count += B;
    stats.not_solved += r.not_solved;
    stats.slowest_iterations += r.max_iterations, stats.slowest_rho_updates += r.max_rho_updates;
    ++stats.slowest_calls;
    double sum = 0;
    for (int i = 0; i < B; ++i) sum += r.qp_loss[i] + r.reg_loss[i];
    if (grad) {
      std::vector<double> g(model_->parameter_count(), 0.0);
      model_->backprop_batch(frames_, r.grad, g.data());
      for (size_t j = 0; j < g.size(); ++j) (*grad)[j] += g[j] * scale_[j];
    }
    return sum;
  }
  nlohmann::json params_json() const override { return model_->to_json(); }
  double device_loss(const Transitions& t, const std::vector<int>& idx, int set,
                     GradVector* grad, BatchStats& stats) {
    if (uploaded_[set] != &t) {
      std::vector<double> xs(size_t(t.size()) * 13), xns(size_t(t.size()) * 13);
      for (int i = 0; i < t.size(); ++i)
        for (int e = 0; e < 13; ++e) xs[size_t(i) * 13 + e] = t.x[i](e), xns[size_t(i) * 13 + e] = t.xn[i](e);
      device_->upload_transitions(set, xs.data(), xns.data(), t.size());
      uploaded_[set] = &t;
      device_warm_.uploaded(*device_, set);
    }
    const std::vector<double> theta = model_->parameters();
    std::vector<double> loss(idx.size()), g(theta.size());
    const cuda::DeviceLossStats st = device_->evaluate(set, theta.data(), idx.data(),
                                                       static_cast<int>(idx.size()), loss.data(),
                                                       grad ? g.data() : nullptr);
    stats.qp_iterations += st.iterations;
    stats.qp_count += static_cast<int>(idx.size());
    stats.not_solved += st.not_solved;
    stats.slowest_iterations += st.max_iterations, stats.slowest_rho_updates += st.max_rho_updates;
    ++stats.slowest_calls;
    if (grad)
      for (size_t j = 0; j < g.size(); ++j) (*grad)[j] += g[j] * scale_[j];
    double sum = 0;
    for (double v : loss) sum += v;
    return sum;
  }
  // with the device, they live there (a checkpoint of a GPU run holds them as a CPU
  // run's: a resumed run continues bit for bit)
  NpyArray warm_starts(int set) const override {
    return device_ ? device_warm_.rows(*device_, set, uploaded_[set] != nullptr) : warm_rows(warm_[set]);
  }
  void set_warm_starts(int set, const NpyArray& a) override {
    std::vector<std::vector<double>> w = warm_from_rows(a, int64_t(warm_[set].size()));
    if (device_) device_warm_.put(*device_, set, uploaded_[set] != nullptr, std::move(w));
    else warm_[set] = std::move(w);
  }
  // the paper used 5e-4 with one transition per step; with 64 per step 5e-3
  // reaches the same validation loss in far fewer epochs (checked on the
  // synthetic and real tosses)
  double default_lr() const override { return 5e-3; }
  double default_weight_decay() const override { return 0.0; }

 private:
  std::unique_ptr<LearnableContactModel> model_;
  ContactNetsLoss loss_;
  std::vector<double> scale_;
  std::vector<std::vector<double>> warm_[2];
  std::vector<std::vector<double>> warm_batch_;
  std::vector<TransitionFrame> frames_;
  std::unique_ptr<cuda::DeviceContactNets<double>> device_;
  const Transitions* uploaded_[2] = {nullptr, nullptr};
  DeviceWarmStarts<cuda::DeviceContactNets<double>> device_warm_;
};


// End-to-end baseline (paper Sec. 5.2.3): an MLP on [p, vec R, v, ω] predicting
// the contact impulse F_c (ν coordinates, in the loss's length unit), trained on
// ‖F_data − F̂‖² per transition; inputs normalized by the training set.

// F_data = M(ν' − ν) − F_s in units of `L` (linear /L, angular /L²).
Vec6 observed_impulse(const State& x, const State& xn, const BodyParams& body, double dt, double L) {
  Vec6 F = body.mass_matrix() * (velocity(xn) - velocity(x)) - smooth_impulse(x, body, dt);
  F.head<3>() /= L;
  F.tail<3>() /= L * L;
  return F;
}

MlpConfig e2e_config() {
  MlpConfig c;
  c.input_size = 18;
  c.hidden_sizes = {256, 256, 256, 256};
  c.output_size = 6;
  c.activation = Activation::kRelu;
  return c;
}

class EndToEndMethod : public Method {
 public:
  EndToEndMethod(const Transitions& train, const BodyParams& body, double dt, double L, uint64_t seed)
      : body_(body), dt_(dt), L_(L) {
    MlpConfig c = e2e_config();
    // input normalization from the training transitions
    Eigen::VectorXd mean = Eigen::VectorXd::Zero(18), sq = Eigen::VectorXd::Zero(18);
    for (int i = 0; i < train.size(); ++i) {
      const Eigen::VectorXd f = e2e_features(train.x[i]);
      mean += f;
      sq += f.cwiseProduct(f);
    }
    const double n = std::max(1, train.size());
    mean /= n;
    Eigen::VectorXd sd = (sq / n - mean.cwiseProduct(mean)).cwiseMax(0.0).cwiseSqrt();
    for (int i = 0; i < 18; ++i) sd(i) = std::max(sd(i), 1e-6);
    c.input_mean = mean;
    c.input_std = sd;
    MlpInit init;
    init.seed = seed;
    net_ = Mlp(c, init);
  }
  std::vector<double> variables() const override {
    return std::vector<double>(net_.params().data(), net_.params().data() + net_.params().size());
  }
  void set_variables(const std::vector<double>& v) override {
    net_.params() = Eigen::Map<const Eigen::VectorXd>(v.data(), Eigen::Index(v.size()));
  }
  double loss(const Transitions& t, const std::vector<int>& idx, int, GradVector* grad,
              BatchStats&) override {
    const int B = static_cast<int>(idx.size());
    X_.resize(18, B);
    F_.resize(6, B);
    Y_.resize(6, B);
    for (int i = 0; i < B; ++i) {
      X_.col(i) = e2e_features(t.x[idx[i]]);
      F_.col(i) = observed_impulse(t.x[idx[i]], t.xn[idx[i]], body_, dt_, L_);
    }
    net_.forward(X_, Y_, ws_);
    const Eigen::MatrixXd r = Y_ - F_;
    if (grad) {
      Eigen::Map<Eigen::VectorXd> g(grad->data(), Eigen::Index(grad->size()));
      const Eigen::MatrixXd dY = 2.0 * r;
      net_.backward(ws_, dY, g);
    }
    return r.squaredNorm();
  }
  nlohmann::json params_json() const override {
    nlohmann::json j;
    j["network"] = net_.to_json();
    j["length_unit"] = L_;
    j["output"] = "contact impulse in nu coordinates; linear / length_unit, angular / length_unit^2";
    return j;
  }
  // ten times the paper's 3e-5, as for ContactNets, for 64-transition steps
  double default_lr() const override { return 3e-4; }
  double default_weight_decay() const override { return 1e-3; }

 private:
  BodyParams body_;
  double dt_, L_;
  Mlp net_;
  MlpWorkspace ws_;
  Eigen::MatrixXd X_, F_, Y_;
};

}  // namespace

std::unique_ptr<Method> make_cube_method(const TrainConfig& c, const TossMeta& meta, const Transitions& train,
                                         int n_valid) {
  const int n_train = train.size();
  if (c.method == "end-to-end")
    return std::make_unique<EndToEndMethod>(train, body_from_meta(meta), meta.dt, meta.half_width,
                                            c.seed * 7919 + 2);
  ContactNetsLossConfig lc;
  lc.friction = c.friction == "octagon" ? FrictionModel::kOctagon : FrictionModel::kCone;
  lc.length_unit = meta.half_width;
  lc.dt = meta.dt;
  lc.body = body_from_meta(meta);
  QpSettings<double> st;
  st.eps_abs = c.eps;
  st.eps_rel = c.eps;
  // the loss QP's P is PSD by construction (QpSettings::check_psd; tested in
  // ContactNetsLoss.AssembledPIsPositiveSemidefinite): no factorization of it per solve
  st.check_psd = false;
  BatchOptions opt;
  opt.threads = c.threads;
  opt.backend = parse_backend(c.backend);
  opt.device_layout = cuda::parse_device_layout(c.layout);
  const std::vector<double> truth = true_polytope_parameters(meta);
  const PolytopeParams init =
      perturb_polytope(PolytopeParams::unpack(truth.data()), c.init_noise, c.seed * 7919 + 1);
  if (c.method == "contactnets-polytope")
    return std::make_unique<ContactNetsMethod>(std::make_unique<PolytopeContactModel>(init), lc,
                                               st, opt, n_train, n_valid,
                                               opt.backend == Backend::kCuda);
  return std::make_unique<ContactNetsMethod>(
      std::make_unique<DeepContactModel>(init, meta.half_width, c.seed * 7919 + 3), lc, st, opt,
      n_train, n_valid);
}



}  // namespace impulse
