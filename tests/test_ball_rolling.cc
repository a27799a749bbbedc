// GCC 12 reports false -Wmaybe-uninitialized inside Eigen's AVX-512 kernels (-march=native).
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Warray-bounds"
#include <gtest/gtest.h>

#include <Eigen/Dense>
#include <cstdio>

#include "host/mpc_demo.h"
#include "host/mpc_tasks.h"

namespace impulse {
namespace {

TEST(BallRolling, Explore) {
  for (int mode : {0, 1, 2}) {
    const bool adapt = mode == 2;
    BallRollingRunOptions o;
    o.adapt = adapt;
    if (mode == 0) o.radius_error = 0;
    const BallRollingRunResult r = run_ball_rolling(o);
    std::printf("adapt %d: rms last %.4f all %.4f impulse %.3f r %s c3 %.2fs solved %d budget %d bad %d\n",
                adapt, r.rms_error_last, r.rms_error, r.contact_impulse,
                "", r.c3_seconds, r.c3_solved, r.c3_budget, r.c3_bad);
    std::printf("  r = %g %g %g %g\n", r.final_r(0), r.final_r(1), r.final_r(2), r.final_r(3));
    for (size_t i = 0; i < r.rows.size(); i += 40) {
      const auto& w = r.rows[i];
      std::printf("  t %.2f rel %.3f %.3f %.4f ball %.3f %.3f ref %.3f %.3f u %.2f %.2f %.2f lam %.2f r0 %.4f\n", w.t,
                  w.x(0), w.x(1), w.x(2), w.x(3), w.x(4), w.ref(0), w.ref(1), w.u(0), w.u(1), w.u(2),
                  w.lambda.sum(), w.r(0));
    }
  }
}

}  // namespace
}  // namespace impulse
