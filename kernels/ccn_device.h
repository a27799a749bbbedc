// The CCN loss on the device (host/learning/ccn.h), as the ContactNets one
// (kernels/contactnets_device.h): the transitions stay resident in device
// memory; per Adam step the host sends θ (the structured parameters, up to
// ccnqp::DeviceCapacity::kTheta numbers), the mini-batch indices and, for CCN-R, the
// residual accelerations δ of the batch (computed by the host's network), and
// gets back the per-transition losses, the summed θ gradient and ∂loss/∂δ per
// transition (for the network's backward pass). One thread per transition
// assembles the QP with solvers/ccn_qp.h (the CPU loss's code), solves it with
// solvers/qp_admm.h, warm-started from its previous solution, and computes the
// envelope gradient; a second kernel sums the θ gradients.
// Without CUDA (kernels/no_cuda.cc) every method throws "CUDA not available".
#pragma once

#include <memory>
#include <vector>

#include "kernels/contactnets_device.h"
#include "solvers/ccn_qp.h"
#include "solvers/qp_admm.h"

namespace impulse {
namespace cuda {

template <class T>
class DeviceCcn {
 public:
  // throws Error when no device is usable or the settings are invalid.
  DeviceCcn(const ccnqp::System<double, ccnqp::DeviceCapacity>& system, const QpSettings<T>& settings);
  ~DeviceCcn();
  DeviceCcn(const DeviceCcn&) = delete;
  DeviceCcn& operator=(const DeviceCcn&) = delete;

  // the transitions of set `set` (0 train, 1 valid): count states x and next
  // states x_next, system.width() numbers each (SI); resets the set's warm starts.
  void upload_transitions(int set, const double* x, const double* x_next, int count);

  // transitions idx[0 .. count) of `set` at θ (theta_size, SI): losses into
  // loss (count); when grad is given, the sum over the batch of their θ
  // gradients (theta_size). delta (nv x count, column-major, or null) is the
  // residual of each; grad_delta (nv x count, or null) receives ∂loss/∂δ.
  DeviceLossStats evaluate(int set, const double* theta, const double* delta, const int* idx, int count,
                           double* loss, double* grad, double* grad_delta);

  // the warm starts of set `set`, per transition: its last solve's x and y (n + m
  // numbers), or empty where it has not been solved since its upload; and back (as
  // DeviceContactNets', without a ρ: the CCN kernel's ρ starts at the settings').
  std::vector<std::vector<double>> download_warm_starts(int set) const;
  void upload_warm_starts(int set, const std::vector<std::vector<double>>& warm);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template class DeviceCcn<float>;
extern template class DeviceCcn<double>;

}  // namespace cuda
}  // namespace impulse
