// Learnable contact models for the ContactNets loss: a ContactModel whose
// parameters live in one flat vector, with the chain rule from the loss's frame
// gradient (host/learning/contactnets_loss.h) into those parameters.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "host/dynamics/contact_model.h"
#include "host/learning/contactnets_loss.h"
#include "host/learning/mlp.h"
#include "host/dynamics/polytope.h"

namespace impulse {

class LearnableContactModel : public ContactModel {
 public:
  virtual std::string method() const = 0;
  virtual int parameter_count() const = 0;
  virtual std::vector<double> parameters() const = 0;  // SI
  virtual void set_parameters(const std::vector<double>& theta) = 0;
  // the natural size of each parameter (lengths: length_unit, others 1): the
  // optimizer works on θ / scale, as the reference implementation did in
  // block half-widths.
  virtual std::vector<double> parameter_scale(double length_unit) const = 0;
  // grad += dL/dθ for one transition (x, x') given dL/d(frame at x, φ at x').
  virtual void backprop(const State& x, const State& x_next, const FrameGradient& g,
                        double* grad) const = 0;
  virtual nlohmann::json to_json() const = 0;  // readable, SI

  // Batch forms used by training: fill frame and phi_next of every transition
  // (x, x_next already set), then, with the loss's frame gradients of those same
  // transitions, add dL/dθ summed over the batch into grad. The defaults loop
  // over evaluate and backprop (in parallel on `threads`); models with networks
  // override them with batched products.
  virtual void frames(std::vector<TransitionFrame>& batch, int threads);
  virtual void backprop_batch(const std::vector<TransitionFrame>& batch,
                              const std::vector<FrameGradient>& g, double* grad);
};

class PolytopeContactModel : public LearnableContactModel {
 public:
  explicit PolytopeContactModel(const PolytopeParams& p) : model_(p) {}
  std::string method() const override { return "contactnets-polytope"; }
  int contacts() const override { return PolytopeParams::kVertices; }
  void evaluate(const State& x, ContactFrame& out) const override { model_.evaluate(x, out); }
  int parameter_count() const override { return PolytopeParams::kSize; }
  std::vector<double> parameters() const override { return model_.params().pack(); }
  void set_parameters(const std::vector<double>& theta) override;
  std::vector<double> parameter_scale(double length_unit) const override;
  void backprop(const State& x, const State& x_next, const FrameGradient& g,
                double* grad) const override;
  nlohmann::json to_json() const override;
  const PolytopeParams& params() const { return model_.params(); }

 private:
  PolytopeModel model_;
};

// ContactNets Deep (paper eq. 20, App. A.2): the polytope plus a tanh network
// on the configuration, φ = φ_poly + 0.05 · L · f([p / L, vec R]) with f:
// 12 -> 256 -> 256 -> 24 (8 normal and 16 tangent outputs) and L the length unit;
// J_n, J_t are the exact Jacobians of these φ (forward-mode through f).
// Parameters: the polytope's 57, then the network's.
class DeepContactModel : public LearnableContactModel {
 public:
  static constexpr double kScale = 0.05;
  DeepContactModel(const PolytopeParams& p, double length_unit, uint64_t seed,
                   std::vector<int> hidden = {256, 256});
  DeepContactModel(const PolytopeParams& p, double length_unit, Mlp net);
  std::string method() const override { return "contactnets-deep"; }
  int contacts() const override { return PolytopeParams::kVertices; }
  void evaluate(const State& x, ContactFrame& out) const override;
  int parameter_count() const override;
  std::vector<double> parameters() const override;
  void set_parameters(const std::vector<double>& theta) override;
  std::vector<double> parameter_scale(double length_unit) const override;
  void backprop(const State& x, const State& x_next, const FrameGradient& g,
                double* grad) const override;
  nlohmann::json to_json() const override;
  void frames(std::vector<TransitionFrame>& batch, int threads) override;
  void backprop_batch(const std::vector<TransitionFrame>& batch,
                      const std::vector<FrameGradient>& g, double* grad) override;
  const Mlp& network() const { return net_; }

 private:
  Eigen::VectorXd features(const State& x) const;
  // ∂features/∂ν (12 x 6)
  Eigen::Matrix<double, 12, 6> feature_jacobian(const State& x) const;
  PolytopeContactModel poly_;
  double L_;
  Mlp net_;
  MlpWorkspace ws_, ws_next_;
  Eigen::MatrixXd X_, Xn_, Y_, Yn_, J_;
};

// readable JSON of polytope parameters (normal, tangent, friction = row norms of
// T, vertices in metres) and back.
nlohmann::json polytope_to_json(const PolytopeParams& p);
PolytopeParams polytope_from_json(const nlohmann::json& j);

// The paper's initialization: the true value plus Gaussian noise of std
// `fraction` × (RMS of the true values of that parameter group), seeded.
PolytopeParams perturb_polytope(const PolytopeParams& truth, double fraction, uint64_t seed);

}  // namespace impulse
