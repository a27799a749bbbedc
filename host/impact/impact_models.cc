#include "host/impact/impact_models.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "host/batch/qp_batch.h"
#include "kernels/impact_device.h"
#include "solvers/error.h"
#include "solvers/impact_lcp.h"
#include "host/batch/lane_kernels.h"
#include "solvers/lemke.h"

namespace impulse {

ImpactGeometry ImpactGeometry::of(const Impact& m, double mass, double inertia) {
  if (!(mass > 0) || !(inertia > 0)) throw Error("impact: mass and inertia must be > 0");
  ImpactGeometry g;
  g.Minv = Eigen::Vector3d(1 / mass, 1 / mass, 1 / inertia).asDiagonal();
  g.J.row(0) = Eigen::Vector3d(m.d[0], m.d[1], m.d[2]).transpose();
  g.J.row(1) = Eigen::Vector3d(m.n[0], m.n[1], m.n[2]).transpose();
  g.W = g.J * g.Minv * g.J.transpose();
  g.vi = Eigen::Vector3d(m.state_i[3], m.state_i[4], m.state_i[5]);
  g.vf = Eigen::Vector3d(m.state_f[3], m.state_f[4], m.state_f[5]);
  g.vc = g.J * g.vi;
  return g;
}

Eigen::Vector3d ImpactGeometry::post_velocity_wrench(const Eigen::Vector3d& w) const {
  return vi + Minv * (J.transpose() * w.head<2>() + Eigen::Vector3d(0, 0, w(2)));
}

double ImpactGeometry::energy_ratio(const Eigen::Vector2d& P) const {
  const Eigen::Matrix2d Mc = W.inverse();
  const Eigen::Vector2d vcf = vc + W * P;
  return vcf.dot(Mc * vcf) / vc.dot(Mc * vc);
}

std::vector<Eigen::Vector2d> ImpactGeometry::energy_ellipse(double alpha, int points) const {
  // (P + M_c v_c)ᵀ W (P + M_c v_c) = α v_cᵀ M_c v_c: P = −M_c v_c + r L⁻ᵀ u, W = L Lᵀ, ‖u‖ = 1
  const Eigen::Matrix2d Mc = W.inverse();
  const double r = std::sqrt(std::max(0.0, alpha * vc.dot(Mc * vc)));
  const Eigen::Matrix2d L = W.llt().matrixL();
  const Eigen::Matrix2d LinvT = L.transpose().inverse();
  std::vector<Eigen::Vector2d> out;
  for (int i = 0; i < points; ++i) {
    const double a = 2 * M_PI * i / points;
    out.push_back(-Mc * vc + r * LinvT * Eigen::Vector2d(std::cos(a), std::sin(a)));
  }
  return out;
}

std::vector<ImpactGeometry> impact_geometry(const ImpactSet& set) {
  std::vector<ImpactGeometry> g;
  g.reserve(set.impacts.size());
  for (const Impact& m : set.impacts) g.push_back(ImpactGeometry::of(m, set.mass, set.mass * set.inertia_per_mass));
  return g;
}

namespace {

void check_params(ImpactParams p) {
  if (!(std::isfinite(p.mu) && p.mu >= 0)) throw Error("impact model: mu must be finite and >= 0, got " + std::to_string(p.mu));
  if (!(std::isfinite(p.eps) && p.eps >= 0 && p.eps <= 1))
    throw Error("impact model: eps must be in [0, 1], got " + std::to_string(p.eps));
}

// Whittaker's prediction and, when dP is given, its derivative (columns d/dμ, d/dε),
// branch by branch
ImpactPrediction whittaker(const ImpactGeometry& g, ImpactParams p, Eigen::Matrix2d* dP = nullptr) {
  // the sticking impulse (v_t^f = 0, v_n^f = −ε v_n), its tangential part clamped into
  // the cone |P_t| <= μ P_n with P_n kept
  ImpactPrediction out;
  const Eigen::LDLT<Eigen::Matrix2d> ldlt = g.W.ldlt();
  const Eigen::Vector2d stick = ldlt.solve(Eigen::Vector2d(-g.vc(0), -(1 + p.eps) * g.vc(1)));
  if (stick(1) >= 0) {
    out.P = Eigen::Vector2d(std::clamp(stick(0), -p.mu * stick(1), p.mu * stick(1)), stick(1));
    if (dP != nullptr) {
      const Eigen::Vector2d dstick = ldlt.solve(Eigen::Vector2d(0, -g.vc(1)));  // d stick / dε
      const double side = stick(0) > p.mu * stick(1) ? 1.0 : stick(0) < -p.mu * stick(1) ? -1.0 : 0.0;
      dP->col(0) = Eigen::Vector2d(side * stick(1), 0);  // P_t = ±μ P_n at the clamp
      dP->col(1) = Eigen::Vector2d(side != 0 ? side * p.mu * dstick(1) : dstick(0), dstick(1));
    }
    return out;
  }
  // sticking would need a pulling normal impulse: slide against v_t, P_t = −μ s P_n,
  // with P_n from v_n^f = −ε v_n (Whittaker's sliding case)
  const double s = g.vc(0) >= 0 ? 1.0 : -1.0;
  const double den = g.W(1, 1) - p.mu * s * g.W(0, 1);
  const double c = -(1 + p.eps) * g.vc(1);
  out.status = kImpactJam;
  if (den > 0) {
    const double Pn = c / den;
    out.P = Eigen::Vector2d(-p.mu * s * Pn, Pn);
    if (dP != nullptr) {
      const double dPn_dmu = c * s * g.W(0, 1) / (den * den), dPn_de = -g.vc(1) / den;
      *dP << -s * Pn - p.mu * s * dPn_dmu, -p.mu * s * dPn_de,  //
          dPn_dmu, dPn_de;
    }
  } else {
    out.P = Eigen::Vector2d(0.0, c / g.W(1, 1));
    if (dP != nullptr) *dP << 0, 0, 0, -g.vc(1) / g.W(1, 1);
  }
  return out;
}

// the planar impulse LCP over z = [P_n, β₊, β₋, λ] with normal target v_n^f >= -e v_n:
// w = M z + q, M row-major; M(3, 0) = μ, q(0) = (1 + e) v_n
void ap_lcp_data(const ImpactGeometry& g, double mu, double e, double M[16], double q[4]) {
  const double Wtt = g.W(0, 0), Wtn = g.W(0, 1), Wnn = g.W(1, 1);
  const double m[16] = {Wnn, Wtn, -Wtn, 0,  //
                        Wtn, Wtt, -Wtt, 1,  //
                        -Wtn, -Wtt, Wtt, 1,  //
                        mu, -1, -1, 0};
  std::copy(m, m + 16, M);
  q[0] = (1 + e) * g.vc(1);
  q[1] = g.vc(0);
  q[2] = -g.vc(0);
  q[3] = 0;
}

bool ap_lcp(const ImpactGeometry& g, double mu, double e, Eigen::Vector2d& P, double* zout = nullptr,
            double* wout = nullptr) {
  double M[16], q[4], z[4] = {}, w[4] = {};  // (zero where Lemke stops before writing them)
  ap_lcp_data(g, mu, e, M, q);
  const LemkeInfo info = lemke_solve(4, M, q, z, w);
  P = Eigen::Vector2d(z[1] - z[2], z[0]);
  if (zout != nullptr) std::copy(z, z + 4, zout);
  if (wout != nullptr) std::copy(w, w + 4, wout);
  return info.status == SolveStatus::kSolved;
}

ImpactPrediction ap_newton(const ImpactGeometry& g, ImpactParams p) {
  ImpactPrediction out;
  if (!ap_lcp(g, p.mu, p.eps, out.P)) out.status = kImpactFailed;
  return out;
}

// Poisson restitution after a compression impulse P_c: a normal impulse ε P_c,n
ImpactPrediction restitution_phase(const ImpactGeometry&, ImpactParams p, const Eigen::Vector2d& Pc) {
  ImpactPrediction out;
  out.P = Pc + Eigen::Vector2d(0, p.eps * Pc(1));
  return out;
}

ImpactPrediction ap_poisson(const ImpactGeometry& g, ImpactParams p) {
  Eigen::Vector2d Pc;
  if (!ap_lcp(g, p.mu, 0.0, Pc)) return {Pc, kImpactFailed};
  return restitution_phase(g, p, Pc);
}

// ---- the authors' own forms of AP Poisson and Mirtich (see the header) ----------------

// the gravity impulse over the impact window, in (ẋ, ẏ, θ̇) and at the contact
Eigen::Vector3d window_gravity() { return Eigen::Vector3d(0, -kAuthorsGravity * kAuthorsWindow, 0); }

ImpactPrediction ap_poisson_authors(const ImpactGeometry& g, ImpactParams p) {
  ImpactGeometry h = g;
  const Eigen::Vector2d ua = g.J * window_gravity();
  h.vc = g.vc + ua;
  Eigen::Vector2d Pc;
  if (!ap_lcp(h, p.mu, 0.0, Pc)) return {Pc, kImpactFailed};
  ImpactPrediction out = restitution_phase(h, p, Pc);
  out.P += g.W.inverse() * ua;  // the data's impulse, M_c J (v_f − v_i), counts the window's gravity
  return out;
}

ImpactPrediction mirtich_authors(const ImpactGeometry& g, ImpactParams p) {
  const Eigen::Vector2d ua = g.J * window_gravity();
  const Eigen::Vector2d u0 = g.vc + ua;
  Eigen::Vector2d u = u0;
  double work_c = 0, work_d = 0;  // the normal impulse's work in compression (≤ 0) and restitution
  const double e2 = p.eps * p.eps, d = kAuthorsMirtichStep;
  ImpactPrediction out;
  long steps = 0;
  while (u(1) < 0 || work_d < -e2 * work_c) {
    if (u(1) < 0)  // the work of this step at its start's velocity, then the step
      work_c += u(1) * d;
    else
      work_d += u(1) * d;
    u += d * g.W * Eigen::Vector2d(-p.mu * u(0), 1.0);  // dP_t/dP_n = −μ u_t
    if (++steps > 100000000L) {
      out.status = kImpactFailed;
      break;
    }
  }
  out.P = g.W.inverse() * (u - u0) + g.W.inverse() * ua;
  return out;
}

// Routh's impulse-space integration along P_n (Wang-Mason: Poisson; Mirtich: energetic)
ImpactPrediction integrate(const ImpactGeometry& g, ImpactParams p, bool energetic) {
  ImpactPrediction out;
  const double Wtt = g.W(0, 0), Wtn = g.W(0, 1), Wnn = g.W(1, 1);
  Eigen::Vector2d P = Eigen::Vector2d::Zero();
  Eigen::Vector2d v = g.vc;
  const bool can_stick = std::abs(Wtn) <= p.mu * Wtt;
  // mode: +1 / -1 sliding with v_t of that sign, 0 sticking
  auto pick_mode = [&](double vt) -> int {
    if (vt > 0) return 1;
    if (vt < 0) return -1;
    if (can_stick) return 0;
    return Wtn > 0 ? 1 : -1;
  };
  int mode = pick_mode(v(0));
  bool compression = v(1) < 0;
  double Pc = compression ? -1 : 0, work_c = 0, work_r = 0;
  if (!compression) {  // not approaching: no impulse
    out.P = P;
    return out;
  }
  for (int seg = 0; seg < 64; ++seg) {
    // rates along dP_n = 1
    double dPt = mode == 0 ? -Wtn / Wtt : -p.mu * mode;
    double at = Wtn + Wtt * dPt, an = Wnn + Wtn * dPt;
    if (compression && !(an > 0)) {  // a jam: the approach cannot be stopped sliding
      out.status = kImpactJam;
      mode = 0;
      dPt = -Wtn / Wtt;
      at = 0;
      an = Wnn - Wtn * Wtn / Wtt;
    }
    double step = std::numeric_limits<double>::infinity();
    int event = 0;  // 1: v_t reaches 0; 2: compression ends; 3: restitution ends
    if (mode != 0 && at * mode < 0) {
      const double s = -v(0) / at;
      if (s < step) {
        step = s;
        event = 1;
      }
    }
    if (compression) {
      const double s = -v(1) / an;
      if (s < step) {
        step = s;
        event = 2;
      }
    } else if (!energetic) {
      const double s = (1 + p.eps) * Pc - P(1);
      if (s <= step) {
        step = s;
        event = 3;
      }
    } else {
      // ∫ v_n dP_n over the step = v_n s + ½ a_n s² reaches the remaining work
      const double target = p.eps * p.eps * (-work_c) - work_r;
      double s;
      if (an > 1e-300)
        s = (-v(1) + std::sqrt(std::max(0.0, v(1) * v(1) + 2 * an * target))) / an;
      else
        s = v(1) > 0 ? target / v(1) : std::numeric_limits<double>::infinity();
      if (s <= step) {
        step = s;
        event = 3;
      }
    }
    if (!std::isfinite(step)) {  // restitution with v_n not growing: cannot finish
      out.status = kImpactFailed;
      break;
    }
    step = std::max(0.0, step);
    const double w = v(1) * step + 0.5 * an * step * step;
    (compression ? work_c : work_r) += w;
    P += Eigen::Vector2d(dPt * step, step);
    v = g.vc + g.W * P;  // exact, no drift
    if (event == 1) {
      v(0) = 0;
      mode = can_stick ? 0 : (Wtn > 0 ? 1 : -1);
    } else if (event == 2) {
      compression = false;
      Pc = P(1);
      if (!energetic && p.eps == 0) break;
      if (energetic && (p.eps == 0 || work_c == 0)) break;
      if (mode != 0 && v(0) == 0) mode = pick_mode(0);
    } else if (event == 3) {
      break;
    }
  }
  out.P = P;
  return out;
}

QpBatch<double> ds_batch(const std::vector<ImpactGeometry>& g, const std::vector<ImpactParams>& params) {
  const int B = static_cast<int>(g.size());
  QpBatch<double> b = QpBatch<double>::dense(B, 2, ConeSpec{0, 3, 0});
  for (int k = 0; k < B; ++k) {
    const ImpactGeometry& G = g[static_cast<size_t>(k)];
    const double mu = params.size() == 1 ? params[0].mu : params[static_cast<size_t>(k)].mu;
    double* P = &b.P[static_cast<size_t>(k) * 4];
    P[0] = G.W(0, 0);
    P[1] = P[2] = G.W(0, 1);
    P[3] = G.W(1, 1);
    b.q[static_cast<size_t>(k) * 2] = G.vc(0);
    b.q[static_cast<size_t>(k) * 2 + 1] = G.vc(1);
    // v_n + (WP)_n >= 0; μP_n − P_t >= 0; μP_n + P_t >= 0  (A x + s = b, s >= 0)
    const double A[6] = {-G.W(1, 0), -G.W(1, 1), 1, -mu, -1, -mu};
    b.set_A_dense(k, A);
    b.b[static_cast<size_t>(k) * 3] = G.vc(1);
    b.b[static_cast<size_t>(k) * 3 + 1] = 0;
    b.b[static_cast<size_t>(k) * 3 + 2] = 0;
  }
  return b;
}

// AP Newton (poisson false) or AP Poisson for every impact: solvers/impact_lcp.h
// on the CPU in lane groups (impacts k0 .. k0 + W − 1 side by side; a group's
// spare lanes repeat its last impact), groups spread over the threads, or a
// thread an impact on the GPU. The impacts where no complementary piece holds
// (W not positive definite, data not finite) are solved by Lemke, as ap_newton /
// ap_poisson do alone; returns how many. Each impact's answer depends on its data
// only.
template <class Par>
int ap_batch(bool poisson, const std::vector<ImpactGeometry>& g, const Par& par, int threads, Backend backend,
             std::vector<ImpactPrediction>& out) {
  const int B = static_cast<int>(g.size());
  std::vector<char> solved(static_cast<size_t>(B), 0);
  auto lemke = [&](int k) {
    const size_t K = static_cast<size_t>(k);
    out[K] = poisson ? ap_poisson(g[K], par(k)) : ap_newton(g[K], par(k));
  };
  auto field = [&](int k, int f) {
    const ImpactGeometry& G = g[static_cast<size_t>(k)];
    switch (f) {
      case 0: return G.W(0, 0);
      case 1: return G.W(0, 1);
      case 2: return G.W(1, 1);
      case 3: return G.vc(0);
      case 4: return G.vc(1);
      case 5: return par(k).mu;
      default: return par(k).eps;
    }
  };
  if (backend == Backend::kCuda) {
    std::vector<double> in(7 * static_cast<size_t>(B)), P(2 * static_cast<size_t>(B));
    std::vector<int> ok(static_cast<size_t>(B));
    for (int f = 0; f < 7; ++f)
      for (int k = 0; k < B; ++k) in[static_cast<size_t>(f) * B + k] = field(k, f);
    cuda::solve_planar_ap(B, poisson, in.data(), P.data(), ok.data());
    for (int k = 0; k < B; ++k) {
      out[static_cast<size_t>(k)].P = Eigen::Vector2d(P[static_cast<size_t>(k)], P[static_cast<size_t>(B + k)]);
      solved[static_cast<size_t>(k)] = static_cast<char>(ok[static_cast<size_t>(k)] != 0);
    }
  } else {
    // in the lanes of the instruction set in use (host/batch/lane_kernels.h)
    std::vector<double> in(7 * static_cast<size_t>(B)), Pt(static_cast<size_t>(B)), Pn(static_cast<size_t>(B));
    for (int f = 0; f < 7; ++f)
      for (int k = 0; k < B; ++k) in[static_cast<size_t>(f) * B + k] = field(k, f);
    lanes::PlanarApJob job;
    job.size = B;
    job.poisson = poisson;
    job.fields = in.data();
    job.Pt = Pt.data();
    job.Pn = Pn.data();
    job.ok = solved.data();
    job.threads = threads;
    lanes::kernels().planar_ap(job);
    for (int k = 0; k < B; ++k)
      out[static_cast<size_t>(k)].P = Eigen::Vector2d(Pt[static_cast<size_t>(k)], Pn[static_cast<size_t>(k)]);
  }
  parallel_for(B, threads, [&](int, int begin, int end) {
    for (int k = begin; k < end; ++k)
      if (!solved[static_cast<size_t>(k)]) lemke(k);
  });
  return static_cast<int>(std::count(solved.begin(), solved.end(), 0));
}

QpSettings<double> tight_settings() {
  QpSettings<double> s;
  s.eps_abs = 1e-10;
  s.eps_rel = 1e-9;
  s.max_iter = 20000;
  return s;
}

}  // namespace

ImpactPrediction predict_impact(int model, const ImpactGeometry& g, ImpactParams p) {
  return predict_impacts(model, {g}, {p}, 1)[0];
}

std::vector<ImpactPrediction> predict_impacts(int model, const std::vector<ImpactGeometry>& g,
                                              const std::vector<ImpactParams>& params, int threads, Backend backend,
                                              int* lemke_fallbacks) {
  if (lemke_fallbacks != nullptr) *lemke_fallbacks = 0;
  impact_model_name(model);  // range check
  if (params.size() != 1 && params.size() != g.size())
    throw Error("predict_impacts: " + std::to_string(params.size()) + " parameter sets for " + std::to_string(g.size()) +
                " impacts (give 1 or one per impact)");
  for (const ImpactParams& p : params) check_params(p);
  const int B = static_cast<int>(g.size());
  std::vector<ImpactPrediction> out(static_cast<size_t>(B));
  if (B == 0) return out;
  auto par = [&](int k) { return params.size() == 1 ? params[0] : params[static_cast<size_t>(k)]; };
  if (model == 0) {  // Drumwright-Shell: compression QPs in one batch
    const QpBatch<double> b = ds_batch(g, params);
    QpSolutions<double> sol;
    BatchOptions bo;
    bo.threads = threads;
    bo.backend = backend;
    solve_batch(b, tight_settings(), bo, sol);
    parallel_for(B, threads, [&](int, int begin, int end) {
      for (int k = begin; k < end; ++k) {
        const size_t K = static_cast<size_t>(k);
        const Eigen::Vector2d Pc(sol.x[2 * K], sol.x[2 * K + 1]);
        ImpactPrediction r = restitution_phase(g[K], par(k), Pc);
        if (sol.status[K] != SolveStatus::kSolved) r.status = kImpactFailed;
        out[K] = r;
      }
    });
    return out;
  }
  if (model == 1 || model == 2) {  // AP: the planar LCPs by their pieces, Lemke where none holds
    const int fallbacks = ap_batch(model == 1, g, par, threads, backend, out);
    if (lemke_fallbacks != nullptr) *lemke_fallbacks = fallbacks;
    return out;
  }
  parallel_for(B, threads, [&](int, int begin, int end) {
    for (int k = begin; k < end; ++k) {
      const size_t K = static_cast<size_t>(k);
      switch (model) {
        case 3: out[K] = integrate(g[K], par(k), true); break;
        case 4: out[K] = integrate(g[K], par(k), false); break;
        default: out[K] = whittaker(g[K], par(k)); break;
      }
    }
  });
  return out;
}

ImpactPrediction predict_impact_lemke(int model, const ImpactGeometry& g, ImpactParams p) {
  check_params(p);
  if (model == 1) return ap_poisson(g, p);
  if (model == 2) return ap_newton(g, p);
  throw Error("predict_impact_lemke: only ap-poisson (1) and ap-newton (2) are LCPs, not model " + std::to_string(model));
}

ImpactPrediction predict_impact_authors(int model, const ImpactGeometry& g, ImpactParams p) {
  const std::string name = model >= 0 && model < kImpactModels ? impact_model_name(model) : "";
  if (name == "ap-poisson") return ap_poisson_authors(g, p);
  if (name == "mirtich") return mirtich_authors(g, p);
  throw Error("predict_impact_authors: only ap-poisson and mirtich have an authors' form, not model " + std::to_string(model));
}

std::vector<Eigen::Vector2d> irb_impulses(const std::vector<ImpactGeometry>& g, int threads, int* solved, Backend backend) {
  const int B = static_cast<int>(g.size());
  std::vector<Eigen::Vector2d> out(static_cast<size_t>(B), Eigen::Vector2d::Zero());
  if (B == 0) return out;
  // rows: [v_n^f >= 0] nonneg, then the SOC (r, C v_c^f) with CᵀC = M_c
  QpBatch<double> b = QpBatch<double>::dense(B, 2, ConeSpec{0, 1, 1});
  for (int k = 0; k < B; ++k) {
    const ImpactGeometry& G = g[static_cast<size_t>(k)];
    const Eigen::Matrix<double, 3, 2> Bm = G.Minv * G.J.transpose();
    const Eigen::Vector3d dv = G.vf - G.vi;
    const Eigen::Matrix2d H = Bm.transpose() * Bm;
    const Eigen::Vector2d q = -Bm.transpose() * dv;
    const Eigen::Matrix2d Mc = G.W.inverse();
    const Eigen::Matrix2d C = Eigen::Matrix2d(Mc.llt().matrixU());  // CᵀC = M_c
    const double r = std::sqrt(G.vc.dot(Mc * G.vc));
    const Eigen::Matrix2d CW = C * G.W;
    const Eigen::Vector2d Cv = C * G.vc;
    const size_t K = static_cast<size_t>(k);
    b.P[K * 4] = H(0, 0);
    b.P[K * 4 + 1] = b.P[K * 4 + 2] = H(0, 1);
    b.P[K * 4 + 3] = H(1, 1);
    b.q[K * 2] = q(0);
    b.q[K * 2 + 1] = q(1);
    const double A[8] = {-G.W(1, 0), -G.W(1, 1), 0, 0, -CW(0, 0), -CW(0, 1), -CW(1, 0), -CW(1, 1)};
    b.set_A_dense(k, A);
    b.b[K * 4] = G.vc(1);
    b.b[K * 4 + 1] = r;
    b.b[K * 4 + 2] = Cv(0);
    b.b[K * 4 + 3] = Cv(1);
  }
  QpSolutions<double> sol;
  BatchOptions bo;
  bo.threads = threads;
  bo.backend = backend;
  solve_batch(b, tight_settings(), bo, sol);
  int ok = 0;
  for (int k = 0; k < B; ++k) {
    const size_t K = static_cast<size_t>(k);
    out[K] = Eigen::Vector2d(sol.x[2 * K], sol.x[2 * K + 1]);
    ok += sol.status[K] == SolveStatus::kSolved;
  }
  if (solved != nullptr) *solved = ok;
  return out;
}

// ---- derivatives dP/d(μ, ε) -----------------------------------------------------------

namespace {

// at most 4 x 4, on the stack
using Small = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, 0, 4, 4>;
using SmallVec = Eigen::Matrix<double, Eigen::Dynamic, 1, 0, 4, 1>;

// Columns d/dμ and d/dε of the impulse LCP's P = (β₊ − β₋, P_n) at its solution (z, w):
// on the active set A (z_i > w_i), M_AA z_A = −q_A, so M_AA dz_A = −(dM z + dq)_A with
// dM/dμ = e₃e₀ᵀ and dq/de = v_n e₀. A singular M_AA (a degenerate basis) is solved in
// the least-squares sense; P's derivative does not depend on which β carries P_t.
Eigen::Matrix2d lcp_derivative(const ImpactGeometry& g, double mu, double e, const double z[4], const double w[4]) {
  double M[16], q[4];
  ap_lcp_data(g, mu, e, M, q);
  int A[4], na = 0;
  for (int i = 0; i < 4; ++i)
    if (z[i] > w[i]) A[na++] = i;
  Eigen::Matrix2d dP = Eigen::Matrix2d::Zero();
  if (na == 0) return dP;
  Small Maa(na, na);
  Eigen::Matrix<double, Eigen::Dynamic, 2, 0, 4, 2> rhs = Eigen::Matrix<double, Eigen::Dynamic, 2, 0, 4, 2>::Zero(na, 2);
  for (int r = 0; r < na; ++r) {
    for (int c = 0; c < na; ++c) Maa(r, c) = M[4 * A[r] + A[c]];
    if (A[r] == 3) rhs(r, 0) = -z[0];       // d/dμ: row 3 holds μ z_0
    if (A[r] == 0) rhs(r, 1) = -g.vc(1);    // d/de: q_0 = (1 + e) v_n
  }
  const Eigen::Matrix<double, Eigen::Dynamic, 2, 0, 4, 2> dz = Maa.completeOrthogonalDecomposition().solve(rhs);
  Eigen::Matrix<double, 4, 2> full = Eigen::Matrix<double, 4, 2>::Zero();
  for (int r = 0; r < na; ++r) full.row(A[r]) = dz.row(r);
  dP.row(0) = full.row(1) - full.row(2);
  dP.row(1) = full.row(0);
  return dP;
}

// Drumwright-Shell's compression QP, min ½PᵀWP + v_cᵀP s.t. a_iᵀP >= b_i with
// a_0 = W's normal row (b_0 = −v_n), a_1 = (−1, μ), a_2 = (1, μ) (b = 0), solved
// exactly by enumerating its active sets (at most 2 of the 3 rows: P has 2 entries),
// with dP_c/dμ from the KKT system of the active set found:
//   [W −A_Sᵀ; A_S 0] [dP; dy] = [dA_Sᵀ y; −dA_S P],  dA/dμ = (0, 1) on the cone rows.
bool ds_compression(const ImpactGeometry& g, double mu, Eigen::Vector2d& Pc, Eigen::Vector2d& dPc_dmu) {
  Eigen::Matrix<double, 3, 2> a;
  a.row(0) = g.W.row(1);
  a.row(1) << -1, mu;
  a.row(2) << 1, mu;
  const Eigen::Vector3d b(-g.vc(1), 0, 0);
  const double scale = 1 + g.vc.norm() + g.W.norm() * g.vc.norm();
  const double tol = 1e-10 * scale;
  static const int kSets[7][2] = {{-1, -1}, {0, -1}, {1, -1}, {2, -1}, {0, 1}, {0, 2}, {1, 2}};
  bool found = false;
  double best = INFINITY;
  for (const auto& set : kSets) {
    int S[2], ns = 0;
    for (int i : set)
      if (i >= 0) S[ns++] = i;
    const int n = 2 + ns;
    Small K = Small::Zero(n, n);
    SmallVec rhs(n);
    K.topLeftCorner<2, 2>() = g.W;
    rhs.head<2>() = -g.vc;
    for (int j = 0; j < ns; ++j) {
      K.block(0, 2 + j, 2, 1) = -a.row(S[j]).transpose();
      K.block(2 + j, 0, 1, 2) = a.row(S[j]);
      rhs(2 + j) = b(S[j]);
    }
    const Eigen::FullPivLU<Small> lu(K);
    if (lu.rank() < n) continue;
    const SmallVec x = lu.solve(rhs);
    const Eigen::Vector2d P = x.head<2>();
    bool ok = true;
    for (int i = 0; i < 3; ++i) ok = ok && a.row(i).dot(P) >= b(i) - tol;
    for (int j = 0; j < ns; ++j) ok = ok && x(2 + j) >= -tol;
    if (!ok) continue;
    const double obj = 0.5 * P.dot(g.W * P) + g.vc.dot(P);
    if (found && obj >= best) continue;
    found = true;
    best = obj;
    Pc = P;
    SmallVec d = SmallVec::Zero(n);
    for (int j = 0; j < ns; ++j)
      if (S[j] != 0) {
        d(1) += x(2 + j);   // dA_Sᵀ y: the cone rows' d/dμ is (0, 1)
        d(2 + j) = -P(1);   // −dA_S P
      }
    dPc_dmu = lu.solve(d).head<2>();
  }
  return found;
}

}  // namespace

bool impact_model_has_gradient(int model) {
  const std::string name = impact_model_name(model);
  return name == "drumwright-shell" || name == "ap-poisson" || name == "ap-newton" || name == "whittaker";
}

namespace {
void require_gradient(int model) {
  if (!impact_model_has_gradient(model))
    throw Error(std::string("impact model ") + impact_model_name(model) +
                ": no derivative in (mu, eps) (an impulse-space integration with switching; identified by search)");
}
}  // namespace

ImpactDerivative predict_impact_derivative(int model, const ImpactGeometry& g, ImpactParams p) {
  check_params(p);
  require_gradient(model);
  const std::string name = impact_model_name(model);
  ImpactDerivative out;
  if (name == "whittaker") {
    out.pred = whittaker(g, p, &out.dP);
    return out;
  }
  if (name == "ap-newton") {
    double z[4], w[4];
    if (!ap_lcp(g, p.mu, p.eps, out.pred.P, z, w)) {
      out.pred.status = kImpactFailed;
      return out;
    }
    out.dP = lcp_derivative(g, p.mu, p.eps, z, w);
    return out;
  }
  Eigen::Vector2d Pc, dPc_dmu;
  if (name == "ap-poisson") {
    double z[4], w[4];
    if (!ap_lcp(g, p.mu, 0.0, Pc, z, w)) {
      out.pred.status = kImpactFailed;
      return out;
    }
    dPc_dmu = lcp_derivative(g, p.mu, 0.0, z, w).col(0);
  } else if (!ds_compression(g, p.mu, Pc, dPc_dmu)) {
    out.pred.status = kImpactFailed;
    return out;
  }
  // Poisson restitution: P = (P_c,t, (1 + ε) P_c,n)
  out.pred = restitution_phase(g, p, Pc);
  out.dP.col(0) = Eigen::Vector2d(dPc_dmu(0), (1 + p.eps) * dPc_dmu(1));
  out.dP.col(1) = Eigen::Vector2d(0, Pc(1));
  return out;
}

std::vector<ImpactDerivative> predict_impacts_derivative(int model, const std::vector<ImpactGeometry>& g,
                                                         const std::vector<ImpactParams>& params, int threads) {
  if (params.size() != 1 && params.size() != g.size())
    throw Error("predict_impacts_derivative: " + std::to_string(params.size()) + " parameter sets for " +
                std::to_string(g.size()) + " impacts (give 1 or one per impact)");
  require_gradient(model);  // here, not inside the threads
  for (const ImpactParams& p : params) check_params(p);
  const int B = static_cast<int>(g.size());
  std::vector<ImpactDerivative> out(static_cast<size_t>(B));
  parallel_for(B, threads, [&](int, int begin, int end) {
    for (int k = begin; k < end; ++k) {
      const size_t K = static_cast<size_t>(k);
      out[K] = predict_impact_derivative(model, g[K], params.size() == 1 ? params[0] : params[K]);
    }
  });
  return out;
}

}  // namespace impulse
