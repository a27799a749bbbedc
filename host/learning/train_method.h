// What the trainer (trainer.cc) asks of a learning method: its optimizer
// variables, the summed loss and gradient of a set of transitions, readable
// parameters and solver warm starts. Internal to host/learning.
#pragma once

#include <vector>

#include <Eigen/Dense>
#include <nlohmann/json.hpp>

#include "host/dynamics/rigid_body.h"
#include "io/npy.h"

namespace impulse {

// Observed transitions (x_k, x_{k+1}) of the tosses of one split: cube states
// (rigid_body.h's layout) for the ContactNets methods, or multibody states
// (multibody.h's layout, 13 + 2nj) for the CCN family.
struct Transitions {
  std::vector<State> x, xn;
  std::vector<Eigen::VectorXd> mx, mxn;
  int size() const { return static_cast<int>(mx.empty() ? x.size() : mx.size()); }
};

// A gradient the methods add into: aligned as Eigen's own vectors, so that
// vectorized products writing into it round the same way on every run (a
// std::vector's 16-byte alignment varies with the heap, and with it Eigen's
// peeling).
using GradVector = std::vector<double, Eigen::aligned_allocator<double>>;

struct BatchStats {
  long qp_iterations = 0;
  int qp_count = 0, not_solved = 0;
  // per loss call (a training step's mini-batch): the slowest QP's iterations and the
  // most ρ updates, summed over the calls that count them (ContactNets)
  long slowest_iterations = 0, slowest_rho_updates = 0;
  int slowest_calls = 0;
};

// warm starts as a checkpoint holds them: rows x width (the longest entry), NaN rows
// for the entries of another length (empty: never solved); and back, an entry per
// row (empty where the row has a NaN or Inf: never solved, or a failed solve's
// numbers, which a resumed run takes as a cold start). Error when the array is not
// 2-D or (rows >= 0) has another number of rows.
NpyArray warm_rows(const std::vector<std::vector<double>>& w);
std::vector<std::vector<double>> warm_from_rows(const NpyArray& a, int64_t rows = -1);

// The warm starts a checkpoint gives a method whose transitions live on the device
// (ContactNets and CCN with the GPU backend; Device: cuda::DeviceContactNets or
// cuda::DeviceCcn). They go onto the device at once when the set's transitions are
// there, else when they are uploaded (an upload resets the device's warm starts).
template <class Device>
class DeviceWarmStarts {
 public:
  // the checkpoint's list for `set`
  void put(Device& dev, int set, bool uploaded, std::vector<std::vector<double>> w) {
    pending_[set] = std::move(w);
    if (uploaded) this->uploaded(dev, set);
  }
  // right after the set's transitions went onto the device
  void uploaded(Device& dev, int set) {
    if (!pending_[set].empty()) dev.upload_warm_starts(set, pending_[set]);
    pending_[set] = {};
  }
  // what a checkpoint keeps: the device's, or those still waiting for the set
  NpyArray rows(const Device& dev, int set, bool uploaded) const {
    return warm_rows(uploaded ? dev.download_warm_starts(set) : pending_[set]);
  }

 private:
  std::vector<std::vector<double>> pending_[2];
};

class Method {
 public:
  virtual ~Method() = default;
  // the optimizer's variables (θ / scale)
  virtual std::vector<double> variables() const = 0;
  virtual void set_variables(const std::vector<double>& v) = 0;
  // Σ over idx of the per-transition loss; grad (if given) += its gradient in
  // the optimizer's variables. `set` 0 = train, 1 = valid (selects warm starts).
  virtual double loss(const Transitions& t, const std::vector<int>& idx, int set,
                      GradVector* grad, BatchStats& stats) = 0;
  virtual nlohmann::json params_json() const = 0;
  // the solver warm starts (ContactNets: per-transition (λ, y) of the last
  // solve) so that a resumed run continues bit for bit: rows x width, NaN rows
  // for transitions never solved. Empty when the method has none.
  virtual NpyArray warm_starts(int) const { return {}; }
  virtual void set_warm_starts(int, const NpyArray&) {}
  virtual double default_lr() const = 0;
  virtual double default_weight_decay() const = 0;
};

}  // namespace impulse
