// Throughput of the planar impact models' AP LCPs (host/impact): the batch by its
// complementary pieces in CPU lanes (predict_impacts, solvers/impact_lcp.h) against
// Lemke's pivoting an impact at a time (predict_impact_lemke), on the same impacts.
//
//   impulse_bench --benchmark_filter=ImpactAp
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "host/impact/impact_models.h"

namespace impulse {
namespace {

// impacts of the ellipse's contact inertia range: W = J M⁻¹ Jᵀ of a random lever arm,
// approaching (v_n < 0), sliding either way
std::vector<ImpactGeometry> bench_impacts(int count) {
  std::mt19937_64 rng(7);
  std::uniform_real_distribution<double> u(-1, 1);
  const double m = 0.0364, I = m * 0.0192 * 0.0192;
  std::vector<ImpactGeometry> g(static_cast<size_t>(count));
  for (ImpactGeometry& G : g) {
    const double rx = 0.03 * u(rng), ry = -0.025 - 0.01 * std::abs(u(rng));  // contact point from the centre
    G.J << 1, 0, -ry, 0, 1, rx;
    G.Minv = Eigen::Vector3d(1 / m, 1 / m, 1 / I).asDiagonal();
    G.W = G.J * G.Minv * G.J.transpose();
    G.vc = Eigen::Vector2d(1.5 * u(rng), -0.5 - 2.5 * std::abs(u(rng)));
  }
  return g;
}

void BM_ImpactAp(benchmark::State& st, bool lanes) {
  const int batch = static_cast<int>(st.range(0)), threads = static_cast<int>(st.range(1));
  const std::vector<ImpactGeometry> g = bench_impacts(batch);
  const ImpactParams p{0.101, 0.526};
  const int model = 2;  // ap-newton
  for (auto _ : st) {
    if (lanes) {
      benchmark::DoNotOptimize(predict_impacts(model, g, {p}, threads));
    } else {
      for (const ImpactGeometry& G : g) benchmark::DoNotOptimize(predict_impact_lemke(model, G, p));
    }
  }
  st.SetItemsProcessed(st.iterations() * batch);
}

void one_thread(benchmark::internal::Benchmark* b) {
  b->ArgNames({"batch", "threads"});
  for (int size : {1, 1200, 100000}) b->Args({size, 1});
  b->UseRealTime();
}
void and_two_threads(benchmark::internal::Benchmark* b) {
  one_thread(b);
  b->Args({100000, 2});
}

BENCHMARK_CAPTURE(BM_ImpactAp, pieces_lanes, true)->Apply(and_two_threads);
BENCHMARK_CAPTURE(BM_ImpactAp, lemke_each, false)->Apply(one_thread);  // one impact after another

}  // namespace
}  // namespace impulse
