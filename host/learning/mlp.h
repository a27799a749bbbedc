// A fully-connected network in double precision (Eigen): affine layers with tanh
// or relu on the hidden layers and a linear output, an optional fixed per-input
// normalization, and all parameters in one flat vector so that an optimizer
// (host/optim/adam.h) treats every model parameter alike.
//
// Besides forward and backward, the batch API gives the input Jacobian
// J = ∂f/∂x of every sample and the parameter gradient of a loss that depends
// on J (mixed second derivatives, σ'' for tanh; 0 for relu). ContactNets Deep
// needs this: φ = f(features(q)), ∂φ/∂q = J ∂x/∂q, loss(φ, ∂φ/∂q).
//
// Layout. A batch holds one sample per column: X is input_size x B, Y is
// output_size x B. Jacobians are stored side by side: J is output_size x
// (input_size * B), sample s's Jacobian in columns [s * input_size, (s + 1) *
// input_size). Parameters, layer by layer from the input: the weight W_k
// (fan_out x fan_in, column-major) and then the bias b_k. Gradients use the
// same layout as params().
//
// Model and data (MuJoCo's split): Mlp is constant during a pass, MlpWorkspace
// holds what a forward pass leaves for backward. Const methods may run
// concurrently on one Mlp with distinct workspaces.
//
// Allocation: a workspace's buffers only grow; repeated calls with a batch
// size and Jacobian mode the workspace has already seen do not allocate in this
// code. Eigen's matrix products may still allocate packing buffers of their
// own for products larger than EIGEN_STACK_ALLOCATION_LIMIT (128 KiB).
//
// Determinism: results are bit-identical for repeated calls with the same
// parameters, batch size, Eigen thread count and build. Eigen parallelizes large
// products with OpenMP when called outside a parallel region; its blocking may
// depend on the thread count, so different thread counts (or batch sizes) may
// round differently. Parameter gradients are reduced by GEMMs, never by
// atomics. Initialization (seeded std::mt19937_64 and our own uniform) is
// identical across standard libraries. tanh is our vectorized version (within
// 3 ulp of glibc's; std::tanh is scalar and dominated the forward pass).
// Inputs are not checked for NaN or inf; they propagate.
//
// Cost (multiply-adds per sample, n_k the layer sizes): forward Σ n_k n_{k+1};
// forward_jacobian adds input_size Σ_{k>=1} n_k n_{k+1} (forward mode) or
// output_size Σ_{k<=L-2} n_k n_{k+1} (reverse mode); backward with dJ is about
// twice its forward_jacobian.
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "solvers/error.h"

namespace impulse {

enum class Activation { kTanh, kRelu };
const char* to_string(Activation a);                // "tanh" | "relu"
Activation parse_activation(const std::string& s);  // throws Error

struct MlpConfig {
  int input_size = 0;                         // > 0
  std::vector<int> hidden_sizes;              // each > 0; empty: one affine layer
  int output_size = 0;                        // > 0
  Activation activation = Activation::kTanh;  // on hidden layers; the output is linear
  // optional fixed normalization (x - mean) / std before the first layer; both
  // empty (off) or both input_size long with finite mean and finite std > 0.
  Eigen::VectorXd input_mean, input_std;

  bool normalized() const { return input_std.size() > 0; }
  // {input_size, hidden_sizes..., output_size}
  std::vector<int> layer_sizes() const;
  void validate() const;  // throws Error naming the bad field
};

struct MlpInit {
  std::uint64_t seed = 0;
  // PyTorch's nn.Linear default: W and b ~ uniform(-1/sqrt(fan_in), 1/sqrt(fan_in)).
  // The output layer's W and b are multiplied by output_scale (e.g. 1e-2 so a
  // residual network starts near zero; 0 starts it at exactly zero).
  double output_scale = 1.0;
};

// How forward_jacobian computes J. Forward mode pushes input_size tangents
// through the layers, reverse mode pulls output_size adjoints back; kAuto picks
// the one with fewer multiply-adds (reverse for a scalar output).
enum class JacobianMode { kAuto, kForward, kReverse };

// What a forward pass leaves for backward, and scratch. Sized by the calls
// (grow-only); one workspace per concurrent caller. Fields are internal.
struct MlpWorkspace {
  Eigen::Index batch = 0;
  int tangent_width = 0;  // 0 after forward(); input_size or output_size after forward_jacobian
  JacobianMode mode = JacobianMode::kForward;  // resolved mode of the last forward_jacobian
  std::vector<int> sizes;                      // layer sizes of the model that filled it
  Eigen::VectorXd xhat;                        // normalized input, input_size x B
  std::vector<Eigen::VectorXd> act, dact;      // hidden a = σ(z) and σ'(z), n x B
  std::vector<Eigen::VectorXd> tan;            // hidden tangents (n x width*B)
  std::vector<Eigen::VectorXd> sbar;           // σ'' terms of the reverse-mode backward, n x B
  Eigen::VectorXd zbar[2], tbar[2];            // backward ping-pong buffers
};

class Mlp {
 public:
  Mlp() = default;
  // validates the config and initializes the parameters.
  explicit Mlp(MlpConfig config, const MlpInit& init = {});

  const MlpConfig& config() const { return config_; }
  int input_size() const { return config_.input_size; }
  int output_size() const { return config_.output_size; }
  int num_layers() const { return static_cast<int>(sizes_.size()) - 1; }  // affine layers
  Eigen::Index num_params() const { return n_params_; }

  // all parameters (layout above); resizing them is misuse.
  Eigen::VectorXd& params() { return params_; }
  const Eigen::VectorXd& params() const { return params_; }
  // re-draws every parameter.
  void init_params(const MlpInit& init);

  // views into params() of layer k (0 = first): W_k is fan_out x fan_in.
  Eigen::Index weight_offset(int k) const { return offsets_[k]; }
  Eigen::Index bias_offset(int k) const {
    return offsets_[k] + Eigen::Index(sizes_[k + 1]) * sizes_[k];
  }
  Eigen::Map<Eigen::MatrixXd> weight(int k) {
    return {params_.data() + weight_offset(k), sizes_[k + 1], sizes_[k]};
  }
  Eigen::Map<const Eigen::MatrixXd> weight(int k) const {
    return {params_.data() + weight_offset(k), sizes_[k + 1], sizes_[k]};
  }
  Eigen::Map<Eigen::VectorXd> bias(int k) {
    return {params_.data() + bias_offset(k), sizes_[k + 1]};
  }
  Eigen::Map<const Eigen::VectorXd> bias(int k) const {
    return {params_.data() + bias_offset(k), sizes_[k + 1]};
  }

  // ---- batch API (X: input_size x B; throws Error on bad sizes) ----

  // Y = f(X), Y sized output_size x B by the caller.
  void forward(const Eigen::Ref<const Eigen::MatrixXd>& X, Eigen::Ref<Eigen::MatrixXd> Y,
               MlpWorkspace& ws) const;
  // Y = f(X) and J (output_size x input_size*B, layout above) = ∂f/∂x.
  void forward_jacobian(const Eigen::Ref<const Eigen::MatrixXd>& X, Eigen::Ref<Eigen::MatrixXd> Y,
                        Eigen::Ref<Eigen::MatrixXd> J, MlpWorkspace& ws,
                        JacobianMode mode = JacobianMode::kAuto) const;
  // For the loss L of the last pass through ws: adds dL/dθ to grad (num_params
  // long) and, when dX is given (input_size x B), adds dL/dx to it. dY =
  // dL/dY (output_size x B) and dJ = dL/dJ (layout of J) are the loss's
  // sensitivities; an empty matrix (0 columns) means zero. dJ needs the last
  // pass to be forward_jacobian. The parameters must not change in between.
  void backward(MlpWorkspace& ws, const Eigen::Ref<const Eigen::MatrixXd>& dY,
                const Eigen::Ref<const Eigen::MatrixXd>& dJ, Eigen::Ref<Eigen::VectorXd> grad,
                Eigen::MatrixXd* dX = nullptr) const;
  void backward(MlpWorkspace& ws, const Eigen::Ref<const Eigen::MatrixXd>& dY,
                Eigen::Ref<Eigen::VectorXd> grad, Eigen::MatrixXd* dX = nullptr) const;

  // the mode kAuto resolves to for this network.
  JacobianMode auto_jacobian_mode() const;

  // ---- single samples (allocate; for tests and tools) ----
  Eigen::VectorXd operator()(const Eigen::Ref<const Eigen::VectorXd>& x) const;
  Eigen::MatrixXd input_jacobian(const Eigen::Ref<const Eigen::VectorXd>& x) const;

  // ---- persistence ----
  // {"format": "impulse.mlp", "version": 1, "input_size", "hidden_sizes",
  //  "output_size", "activation", "input_mean", "input_std", "params"}; doubles
  // round-trip exactly, so a loaded model reproduces outputs bit for bit.
  nlohmann::json to_json() const;
  static Mlp from_json(const nlohmann::json& j);  // throws Error

 private:
  void check_ready() const;
  MlpConfig config_;
  std::vector<int> sizes_;             // layer_sizes()
  std::vector<Eigen::Index> offsets_;  // start of each layer's W in params_
  Eigen::VectorXd inv_std_;            // 1 / input_std (ones when off)
  Eigen::Index n_params_ = 0;
  Eigen::VectorXd params_;
};

}  // namespace impulse
