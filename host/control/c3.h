// Consensus complementarity control (C3; Aydinoglu, Wei, Posa 2023, as used by
// papers/adaptive-c3-residual-learning-2024.txt): MPC over an LCS (host/control/lcs.h),
//
//   minimize Σ_{k<N} (x_k − x̄_k)ᵀQ(x_k − x̄_k) + u_kᵀRu_k + (x_N − x̄_N)ᵀQ_N(x_N − x̄_N)
//   s.t. LCS dynamics and complementarity at every step, x_0 = current state,
//
// solved by ADMM on the copies z_k = (x_k, λ_k, u_k) (dynamics) and δ_k
// (complementarity). Iteration i (ρ_i = ρ_0 · rho_scale^i):
//   (a) QP step: z = argmin cost + Σ_k (ρ_i/2)‖z_k − (δ_k − w_k)‖²_G s.t. dynamics, solved
//       by a Riccati recursion (HorizonQp) written for this structure, O(N (nx+nl+nu)³);
//   (b) projection step, per time step: δ_k = argmin ‖δ − (z_k + w_k)‖²_U over the
//       complementarity set {0 ≤ λ ⊥ Ex + Fλ + Hu + c + r ≥ 0} (ComplementarityProjector,
//       exact);
//   (c) dual step: w_k ← (w_k + z_k − δ_k) / rho_scale (scaled dual, rescaled for ρ_{i+1}).
// After the budget a final QP step gives the command u_0 (dynamically consistent with
// the model). G and U are diagonal (one positive weight per entry of z); U = G unless
// set (C3's reference examples use a separate U that keeps the projection off x).
//
// Real-time contract (C3Controller): every buffer is sized in the constructor; step()
// allocates nothing, never throws, is deterministic (same inputs and history give
// bitwise the same command; the optional wall-clock deadline is the one exception), and
// runs a fixed budget of ADMM iterations. The Riccati factorizations depend only on the
// model matrices and ρ_i, so they are computed once per iteration index and reused
// until set_model() changes the matrices (the residual r enters only linear terms).
#pragma once

#include <Eigen/Dense>
#include <chrono>
#include <cstdint>
#include <vector>

#include "host/control/lcs.h"
#include "host/control/rt_channels.h"

namespace impulse {

// ---- the QP step -------------------------------------------------------------------

// minimize Σ_{k<N} ½ z_kᵀ W_k z_k + g_kᵀ z_k + ½ x_Nᵀ W_N x_N + g_Nᵀ x_N
// s.t. x_0 = x0, x_{k+1} = A_k x_k + B_k u_k + D_k λ_k + d_k,  z_k = (x_k, λ_k, u_k).
// W_k must be symmetric positive semidefinite with its (λ, u) block positive definite,
// W_N symmetric positive semidefinite. factor() runs the Riccati recursion on the
// quadratic part; solve() then costs O(N n²) per right-hand side. Neither allocates
// after resize().
class HorizonQp {
 public:
  void resize(int N, int nx, int nl, int nu);
  int horizon() const { return N_; }
  int nz() const { return nx_ + nv_; }

  // W: N matrices nz x nz; false when a (λ, u) block fails to factor.
  bool factor(const Lcs& lcs, const std::vector<Eigen::MatrixXd>& W, const Eigen::MatrixXd& WN);
  // the same with W_k = base_k + diag(wdiag) for every k (C3's form); no allocation.
  bool factor_diag(const Lcs& lcs, const Eigen::MatrixXd& base, const Eigen::VectorXd& wdiag,
                   const Eigen::MatrixXd& WN);

  // g: nz x N (column k is g_k), gN: nx. z: nz x N, xN: nx.
  void solve(const Lcs& lcs, const Eigen::Ref<const Eigen::VectorXd>& x0,
             const Eigen::Ref<const Eigen::MatrixXd>& g, const Eigen::Ref<const Eigen::VectorXd>& gN,
             Eigen::Ref<Eigen::MatrixXd> z, Eigen::Ref<Eigen::VectorXd> xN);

 private:
  bool factor_step(const Lcs& lcs, int k);
  int N_ = 0, nx_ = 0, nv_ = 0, nl_ = 0;
  std::vector<Eigen::MatrixXd> W_;           // N, nz x nz (the stage Hessians)
  std::vector<Eigen::MatrixXd> P_;           // N + 1, value-function Hessians
  std::vector<Eigen::MatrixXd> K_;           // N, nv x nx feedback gains
  std::vector<Eigen::MatrixXd> Bv_;          // N, nx x nv = [D B]
  std::vector<Eigen::LLT<Eigen::MatrixXd>> Qvv_;  // N, factored (λ,u) Hessians
  Eigen::MatrixXd kff_;                      // nv x N feedforward
  Eigen::MatrixXd PA_, PB_, Qxx_, Qvx_, Qvv_tmp_, Ptmp_;
  Eigen::VectorXd p_, h_, qx_, qv_, v_;
};

// ---- the projection step ----------------------------------------------------------

// δ = argmin (δ − p)ᵀ diag(G) (δ − p) over {δ = (x, λ, u): 0 ≤ λ ⊥ Ex + Fλ + Hu + o ≥ 0}.
// Exact by enumeration of the 3^m active patterns (per contact i: λ_i = 0, s_i = 0, or
// both): the optimum is the G-projection onto the affine set of its active constraints,
// which is feasible, so the best feasible candidate over all patterns is the optimum.
// Each candidate costs a Cholesky of at most 2m x 2m on a Gram matrix computed once per
// model (set()); m ≤ kMaxContacts. Patterns whose Gram block is singular (dependent
// constraints) are skipped. No allocation after construction.
class ComplementarityProjector {
 public:
  static constexpr int kMaxContacts = 6;
  ComplementarityProjector() = default;
  ComplementarityProjector(int nx, int nl, int nu);
  // E, F, H of one step and the positive weights G (nx+nl+nu).
  void set(const Eigen::MatrixXd& E, const Eigen::MatrixXd& F, const Eigen::MatrixXd& H,
           const Eigen::VectorXd& G);
  // o = c + r. Returns false when no candidate is feasible (cannot happen for exact
  // data: λ = 0 with s ≥ 0 or the pattern "both" always exists unless the Gram matrix is
  // singular); delta then equals p.
  bool project(const Eigen::Ref<const Eigen::VectorXd>& p, const Eigen::Ref<const Eigen::VectorXd>& o,
               Eigen::Ref<Eigen::VectorXd> delta);
  // the G-weighted squared distance of the last projection.
  double last_cost() const { return last_cost_; }

 private:
  int nx_ = 0, nl_ = 0, nu_ = 0, nz_ = 0;
  Eigen::MatrixXd R_;      // 2m x nz: rows selecting λ_i, then rows [E F H]
  Eigen::MatrixXd Rginv_;  // 2m x nz: R diag(1/G)
  Eigen::MatrixXd gram_;   // 2m x 2m: R diag(1/G) Rᵀ
  Eigen::VectorXd v_, vbest_y_;
  double last_cost_ = 0.0;
};

// ---- the controller ----------------------------------------------------------------

enum class C3Status : int {
  kSolved = 0,           // consensus ‖z − δ‖∞ ≤ consensus_tol after the budget
  kBudgetExhausted = 1,  // budget (or deadline) used up: the best iterate's command
  kBadInput = 2,         // NaN / out-of-range state or wrong size: the last safe command
};
const char* to_string(C3Status s);

struct C3Settings {
  int admm_iterations = 10;     // fixed ADMM budget per step() (>= 1)
  double rho0 = 1.0;            // ρ of the first iteration (> 0)
  double rho_scale = 2.0;       // ρ_{i+1} = rho_scale ρ_i (>= 1)
  double consensus_tol = 1e-2;  // kSolved when max |z − δ| ≤ this after the budget
  bool warm_start = true;       // shift the previous δ and w one step
  double deadline_s = 0.0;      // wall-clock limit per step (0: none; breaks determinism)
  void validate() const;        // throws Error naming the bad field
};

struct C3Costs {
  Eigen::MatrixXd Q, R, QN;  // nx x nx (PSD), nu x nu (PD), nx x nx (PSD)
  Eigen::VectorXd G;         // nx + nl + nu positive ADMM weights of the QP step
  Eigen::VectorXd U;         // nx + nl + nu positive weights of the projection (empty: G);
                             // large state weights make the projection move λ, not x
  Eigen::VectorXd x_bound;   // nx; step() rejects |x_i| > x_bound_i (empty: +inf)
  Eigen::VectorXd u_limit;   // nu; the command is clipped to ±u_limit (empty: none)
};

class C3Controller {
 public:
  // sizes everything; throws Error on inconsistent sizes or settings, or nl > 6.
  C3Controller(const Lcs& model, const C3Costs& costs, const C3Settings& settings = {});

  // one MPC solve from state x at time t (t is recorded only); writes u_out (nu).
  C3Status step(const Eigen::Ref<const Eigen::VectorXd>& x, double t,
                Eigen::Ref<Eigen::VectorXd> u_out);

  // replace the model matrices (same sizes; no allocation; refactors lazily), e.g. a
  // re-linearization at every step. The residual r in use is kept (m.r is ignored). False
  // on a size mismatch or a non-finite entry, the model unchanged.
  bool set_model(const Lcs& model);
  // x̄_k for k = 0..N (nx x (N+1)); default zero. False on a size mismatch.
  bool set_reference(const Eigen::Ref<const Eigen::MatrixXd>& x_ref);
  // the residual r directly (when no channel is attached).
  void set_residual(const Eigen::Ref<const Eigen::VectorXd>& r);
  // take the newest residual from `ch` at the start of every step() (non-blocking).
  void attach_residual(const ResidualChannel* ch) { residual_source_ = ch; }
  // forward transitions to the learner (non-blocking; dropped when the ring is full).
  void attach_samples(SampleRing* ring) { sample_sink_ = ring; }
  // feed one observed transition to the learner. False when none is attached or full.
  bool observe(const Eigen::Ref<const Eigen::VectorXd>& x, const Eigen::Ref<const Eigen::VectorXd>& u,
               const Eigen::Ref<const Eigen::VectorXd>& x_next);
  void reset();  // forget the warm start and the last command

  const Lcs& model() const { return model_; }
  const C3Settings& settings() const { return settings_; }
  int horizon() const { return N_; }
  // the last solve's plan: z (nz x N), δ (nz x N) and its consensus residual.
  const Eigen::MatrixXd& plan_z() const { return z_; }
  const Eigen::MatrixXd& plan_delta() const { return delta_; }
  double last_consensus() const { return last_consensus_; }
  int last_iterations() const { return last_iterations_; }
  std::int64_t residual_version() const { return residual_version_; }

  // the QP step alone (exposed for tests): z, xN for the given δ − w at iteration i.
  void qp_step(int iteration, const Eigen::Ref<const Eigen::VectorXd>& x0,
               const Eigen::Ref<const Eigen::MatrixXd>& target);

 private:
  bool ensure_factor(int iteration);
  void set_projectors();

  Lcs model_;
  C3Costs costs_;
  C3Settings settings_;
  int N_ = 0, nx_ = 0, nl_ = 0, nu_ = 0, nz_ = 0;
  std::vector<HorizonQp> qp_;           // one per ADMM iteration (+1 final): cached factors
  std::vector<char> qp_valid_;
  std::vector<ComplementarityProjector> proj_;  // one per time step
  Eigen::MatrixXd base_W_;  // blkdiag(2Q, 0, 2R)
  Eigen::MatrixXd WN_;      // 2 Q_N
  Eigen::MatrixXd x_ref_;   // nx x (N+1)
  Eigen::MatrixXd z_, delta_, w_, g_, target_;
  Eigen::VectorXd xN_, gN_, o_, p_, tmp_nz_, r_in_, best_u_, last_u_;
  bool have_warm_ = false;
  double last_consensus_ = 0.0;
  int last_iterations_ = 0;
  std::int64_t residual_version_ = 0;
  const ResidualChannel* residual_source_ = nullptr;
  SampleRing* sample_sink_ = nullptr;
};

}  // namespace impulse
