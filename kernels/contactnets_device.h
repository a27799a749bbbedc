// ContactNets training on the device: transitions stay resident in device
// memory; per Adam step the host sends θ (57 numbers) and the indices of the
// mini-batch, and gets back the per-transition losses and the summed gradient
// (57 numbers). Host-device traffic per step is O(parameters + batch), not
// O(transitions x QP size). Per transition: the loss QP is assembled
// (solvers/contactnets_qp.h), solved by qp_admm_solve's algorithm (warm-started
// from the transition's previous solution and the ρ it ended at, kept on the device;
// as the CPU's ContactNetsLoss), and the envelope
// gradient computed; a last kernel sums the gradients. A warp per transition
// assembles (a lane per column of B = [J_nᵀ J_tᵀ]) and eight lanes per transition (a
// lane per contact) compute the gradient; the layout (kernels/qp_kernels.h) is the
// QP's: warp (what kAuto takes: the QP has n = 32), the warp-per-problem QP kernel
// with the working set on chip; thread, the thread-per-problem QP kernel on
// batch-fastest arrays. (The thread layout was one fused kernel a thread per
// transition: 255 registers and 2 KB of spills a thread on sm_90.)
// Without CUDA (kernels/no_cuda.cc) every method throws "CUDA not available".
#pragma once

#include <memory>
#include <vector>

#include "kernels/qp_kernels.h"
#include "solvers/contactnets_qp.h"
#include "solvers/qp_admm.h"

namespace impulse {
namespace cuda {

struct DeviceLossStats {
  long iterations = 0;  // ADMM iterations over the batch
  int not_solved = 0;   // QPs that did not reach tolerance
  // the batch's slowest QP: its most iterations and most ρ updates (refactorizations),
  // each over the batch (ContactNets; 0 where not counted). A device step waits for it.
  int max_iterations = 0, max_rho_updates = 0;
  long rho_updates = 0;  // ρ updates over the batch (counted where the maxima are)
  double kernel_ms = 0;
};

template <class T>
class DeviceContactNets {
 public:
  // throws Error when no device is usable.
  DeviceContactNets(const cn::LossConsts<T>& consts, const QpSettings<T>& settings,
                    DeviceLayout layout = DeviceLayout::kAuto);
  DeviceLayout layout() const;  // the layout it runs in (kAuto resolved)
  ~DeviceContactNets();
  DeviceContactNets(const DeviceContactNets&) = delete;
  DeviceContactNets& operator=(const DeviceContactNets&) = delete;

  // the transitions of set `set` (0 train, 1 valid): count states x and next
  // states x_next, 13 numbers each (SI); resets that set's warm starts.
  void upload_transitions(int set, const double* x, const double* x_next, int count);

  // losses (QP value + regularizers) of transitions idx[0 .. count) of `set`
  // at θ (57, SI) into loss (count); when grad is given, the sum over the batch
  // of their gradients (57) is written there.
  DeviceLossStats evaluate(int set, const double* theta, const int* idx, int count, double* loss,
                           double* grad);

  // the warm starts of set `set`, per transition: its last solve's x, y and final ρ
  // (n + m + 1 numbers, as ContactNetsLoss keeps them on the CPU), or empty where it has
  // not been solved since its upload. upload_warm_starts puts such a list back (an entry
  // of n + m starts at the settings' ρ; empty: cold); Error on a wrong count or width.
  std::vector<std::vector<double>> download_warm_starts(int set) const;
  void upload_warm_starts(int set, const std::vector<std::vector<double>>& warm);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

extern template class DeviceContactNets<float>;
extern template class DeviceContactNets<double>;

}  // namespace cuda
}  // namespace impulse
