// The planar impulse LCP of Anitescu-Potra (one contact, the friction cone's two
// planar directions), solved exactly by its complementary pieces: the same
// instructions for every impact, so one impact per GPU thread or W impacts in
// the lanes of a CPU vector (T = Lanes<double>, solvers/lanes.h) run it without
// branching per impact.
//
// Per impact: W = J M⁻¹ Jᵀ = [Wtt Wtn; Wtn Wnn] (positive definite), the contact
// velocity before (v_t, v_n), friction μ and a Newton restitution e (e = 0 for AP
// Poisson's compression). Over z = [P_n, β₊, β₋, λ] (P_t = β₊ − β₋) the LCP is
//   0 ≤ P_n ⊥ v_n^f + e v_n ≥ 0,   0 ≤ β± ⊥ λ ± v_t^f ≥ 0,   0 ≤ λ ⊥ μP_n − β₊ − β₋ ≥ 0
// with v^f = v + W P (host/impact/impact_models.cc: ap_lcp_data writes it for Lemke).
// Its solutions are of four kinds, each a linear solve:
//   separate  P = 0                                   when v_n ≥ 0;
//   stick     W P = (−v_t, −(1 + e) v_n)              when P_n ≥ 0 and |P_t| ≤ μ P_n;
//   slide ±   P_t = ∓μ P_n, v_n^f = −e v_n            when P_n ≥ 0 and ±v_t^f ≥ 0.
// Every kind is computed and the first that holds is kept, in that order. Where
// more than one holds (which a single contact with W positive definite and
// Wnn > μ|Wtn| does not allow, apart from the boundary between sticking and
// sliding, where both give the same impulse) the order decides; Lemke's pivoting
// may pick another. The tests check agreement with Lemke on the real impacts and
// on random ones.
//
// The tests for "holds" allow a rounding slack of kPlanarLcpSlack relative to the
// terms compared, so an impact on the stick/slide boundary is not lost to
// rounding. For W positive definite some kind always holds (the LCP has a
// solution, Anitescu & Potra 1997, and the four kinds are all its solutions), also
// where a sliding denominator Wnn ∓ μWtn ≤ 0 (a jam). Where
// none holds (W not positive definite, which no rigid body has; non-finite data or
// an answer that overflows) the function returns false and the caller falls back
// to Lemke (host). With W not positive definite the stick kind is never taken, so
// Lemke may find another solution where a sliding kind holds.
#pragma once

#include "solvers/config.h"

IMPULSE_NAMESPACE_BEGIN

constexpr double kPlanarLcpSlack = 1e-12;

// Writes (P_t, P_n); returns per impact (bool, or a lane mask) whether a
// complementary piece held.
template <class T>
IMPULSE_HD auto planar_ap_lcp(T Wtt, T Wtn, T Wnn, T vt, T vn, T mu, T e, T& Pt, T& Pn)
    -> decltype(T(0) < T(0)) {
  using Mask = decltype(T(0) < T(0));
  const T zero(0), slack(kPlanarLcpSlack);
  const T target = -(T(1) + e) * vn;  // Wnn P_n + Wtn P_t = −(1 + e) v_n

  // stick: the 2 x 2 solve by Cramer's rule
  const T det = Wtt * Wnn - Wtn * Wtn;
  const T st_n = (Wtt * target + Wtn * vt) / det;
  const T st_t = (-vt * Wnn - Wtn * target) / det;
  const Mask stick_ok = (det > zero) & (st_n >= zero) &
                        (abs_of(st_t) - mu * st_n <= slack * (abs_of(st_t) + mu * st_n));

  // slide with P_t = −μP_n (v_t^f ≥ 0) and with P_t = +μP_n (v_t^f ≤ 0)
  const T den_p = Wnn - mu * Wtn, den_m = Wnn + mu * Wtn;
  const T sp_n = target / den_p, sm_n = target / den_m;
  const T gp = (Wtn - mu * Wtt) * sp_n, gm = (Wtn + mu * Wtt) * sm_n;  // v_t^f − v_t
  const Mask slide_p_ok = (den_p > zero) & (sp_n >= zero) & (vt + gp >= -slack * (abs_of(vt) + abs_of(gp)));
  const Mask slide_m_ok = (den_m > zero) & (sm_n >= zero) & (vt + gm <= slack * (abs_of(vt) + abs_of(gm)));

  const Mask separate = vn >= zero;
  // the first that holds, in the order separate, stick, slide +, slide −
  Pn = select_of(slide_m_ok, sm_n, zero);
  Pt = select_of(slide_m_ok, mu * sm_n, zero);
  Pn = select_of(slide_p_ok, sp_n, Pn);
  Pt = select_of(slide_p_ok, -mu * sp_n, Pt);
  Pn = select_of(stick_ok, st_n, Pn);
  Pt = select_of(stick_ok, st_t, Pt);
  Pn = select_of(separate, zero, Pn);
  Pt = select_of(separate, zero, Pt);
  // finite data and a finite answer (an infinite v_n would make a slack bound infinite)
  const Mask finite = is_finite(Wtt) & is_finite(Wtn) & is_finite(Wnn) & is_finite(vt) & is_finite(vn) &
                      is_finite(mu) & is_finite(e) & is_finite(Pt) & is_finite(Pn);
  const Mask ok = finite & (separate | stick_ok | slide_p_ok | slide_m_ok);
  return ok;
}

// The Anitescu-Potra models of host/impact: Newton restitution inside the LCP
// (poisson false), or Poisson restitution after a compression LCP (e = 0 in it,
// then ε P_c,n along the normal).
template <class T>
IMPULSE_HD auto planar_ap_impulse(bool poisson, T Wtt, T Wtn, T Wnn, T vt, T vn, T mu, T eps, T& Pt, T& Pn)
    -> decltype(T(0) < T(0)) {
  const auto ok = planar_ap_lcp(Wtt, Wtn, Wnn, vt, vn, mu, poisson ? T(0) : eps, Pt, Pn);
  if (poisson) Pn = Pn + eps * Pn;
  return ok;
}

IMPULSE_NAMESPACE_END  // namespace impulse
