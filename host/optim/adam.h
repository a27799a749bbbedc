// AdamW over one flat parameter vector, with PyTorch's semantics
// (torch.optim.AdamW, single-tensor path, amsgrad off): per step t
//   θ ← θ (1 - lr wd)                       decoupled weight decay
//   m ← m + (1 - β1)(g - m)                 (torch's lerp)
//   v ← β2 v + (1 - β2) g²
//   θ ← θ - lr / (1 - β1^t) · m / (sqrt(v) / sqrt(1 - β2^t) + eps)
// Weight decay applies to every entry; for parameter groups (e.g. no decay on
// biases) own one AdamW per group. The state (step count, m, v) saves to JSON
// or a flat vector and restores bit-exactly, so training resumes identically.
// step() does not allocate; results are deterministic (element-wise, serial).
#pragma once

#include <Eigen/Dense>
#include <cstdint>
#include <nlohmann/json_fwd.hpp>

#include "solvers/error.h"

namespace impulse {

struct AdamWSettings {
  double lr = 1e-3;            // > 0 (may change between steps, e.g. a schedule)
  double beta1 = 0.9;          // in [0, 1)
  double beta2 = 0.999;        // in [0, 1)
  double eps = 1e-8;           // > 0
  double weight_decay = 1e-2;  // >= 0; torch.optim.AdamW's default
  void validate() const;       // throws Error naming the bad field
};

class AdamW {
 public:
  AdamW() = default;
  // zero moments for `size` parameters; validates the settings.
  explicit AdamW(Eigen::Index size, const AdamWSettings& settings = {});

  const AdamWSettings& settings() const { return settings_; }
  void set_settings(const AdamWSettings& s);  // validates; keeps the state
  void set_lr(double lr);

  Eigen::Index size() const { return m_.size(); }
  std::int64_t step_count() const { return step_; }
  const Eigen::VectorXd& first_moment() const { return m_; }
  const Eigen::VectorXd& second_moment() const { return v_; }
  void reset();  // zero moments and step count

  // one update of params with grad (both size() long). Throws Error on a size
  // mismatch or a non-finite gradient entry (naming the first), before
  // touching the parameters or the state.
  void step(Eigen::Ref<Eigen::VectorXd> params, const Eigen::Ref<const Eigen::VectorXd>& grad);

  // {"format": "impulse.adamw", "version": 1, "settings": {...}, "step": t,
  //  "m": [...], "v": [...]}; doubles round-trip exactly.
  nlohmann::json to_json() const;
  static AdamW from_json(const nlohmann::json& j);  // throws Error

  // [t, m..., v...] (1 + 2 size() entries; t is exact below 2^53); the
  // settings are not included.
  Eigen::VectorXd state_vector() const;
  void set_state_vector(const Eigen::Ref<const Eigen::VectorXd>& state);  // throws Error

 private:
  AdamWSettings settings_;
  std::int64_t step_ = 0;
  Eigen::VectorXd m_, v_;
};

}  // namespace impulse
