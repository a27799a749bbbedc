// Cone descriptions and closed-form projections.
//
// A conic QP's rows come in a fixed order: n_zero equality rows ({0}), then
// n_nonneg inequality rows (R+), then n_soc three-row second-order cones
// {(t, u) : ||u|| <= t}. The same order holds for the slack s and the dual y.
#pragma once

#include "solvers/config.h"

IMPULSE_NAMESPACE_BEGIN

struct ConeSpec {
  int n_zero = 0;
  int n_nonneg = 0;
  int n_soc = 0;  // number of 3-D second-order cones (3 rows each)
  IMPULSE_HD int rows() const { return n_zero + n_nonneg + 3 * n_soc; }
  IMPULSE_HD int soc_begin() const { return n_zero + n_nonneg; }
};

// project (t, u1, u2) onto {(t, u) : ||u|| <= t} in place.
template <class T>
IMPULSE_HD void project_soc3(T& t, T& u1, T& u2) {
  const T nu = sqrt_of(u1 * u1 + u2 * u2);
  if (nu <= t) return;
  if (nu <= -t) {
    t = T(0);
    u1 = T(0);
    u2 = T(0);
    return;
  }
  const T a = T(0.5) * (t + nu);
  const T k = a / nu;
  t = a;
  u1 *= k;
  u2 *= k;
}

// project (n, t1, t2) onto the friction cone {||t|| <= mu n} in place: the SOC
// after scaling the normal axis by mu.
template <class T>
IMPULSE_HD void project_friction_cone(T mu, T& n, T& t1, T& t2) {
  if (mu <= T(0)) {
    n = max_of(n, T(0));
    t1 = T(0);
    t2 = T(0);
    return;
  }
  // with s = mu n the cone is ||t|| <= s; a projection in (s, t) space is not
  // Euclidean in (n, t), so solve the 2-D problem in the (n, ||t||) plane.
  const T nt = sqrt_of(t1 * t1 + t2 * t2);
  if (nt <= mu * n) return;
  if (mu * nt <= -n) {  // inside the polar cone
    n = T(0);
    t1 = T(0);
    t2 = T(0);
    return;
  }
  // project (n, nt) onto the ray through (1, mu).
  const T inv = T(1) / (T(1) + mu * mu);
  const T n_new = (n + mu * nt) * inv;
  const T k = (nt > T(0)) ? mu * n_new / nt : T(0);
  n = n_new;
  t1 *= k;
  t2 *= k;
}

// distance of a vector from the cone K (max-norm style measure used by
// infeasibility tests): how far (t, u) is from satisfying ||u|| <= t.
template <class T>
IMPULSE_HD T soc3_violation(T t, T u1, T u2) {
  return max_of(sqrt_of(u1 * u1 + u2 * u2) - t, T(0));
}

IMPULSE_NAMESPACE_END  // namespace impulse
