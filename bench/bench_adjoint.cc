// The backward pass of impulse.torch.ConicQP (host/diff/qp_adjoint.h) alone, one
// thread, double: problems per second of qp_adjoint_batch on the shapes the layer
// benchmark (bench/torch_layers.py) times: the cube's loss QP with the octagon
// (n 32, m 88) and with exact cones (n 32, m 48), and random QPs with n
// inequality rows (n 8, 32). The batch is solved once (eps 1e-6, as the layer
// benchmark's) and the loss is sum(w x) with fixed random weights w.
#include <benchmark/benchmark.h>

#include <random>
#include <vector>

#include "host/batch/generate.h"
#include "host/batch/qp_batch.h"
#include "host/diff/qp_adjoint.h"

namespace impulse {
namespace {

struct AdjointCase {
  QpAdjointBatch<double> in;
  std::vector<double> P, A, b, x, y, gx;
};

AdjointCase make_case(int which, int size) {
  GeneratedQps g = which == 0   ? cube_loss_batch(size, FrictionModel::kOctagon, 1)
                   : which == 1 ? cube_loss_batch(size, FrictionModel::kCone, 1)
                                : random_benchmark_batch(size, RandomQpShape{which, which, 0, 1.0}, 1);
  const QpBatch<double>& bt = g.batch;
  QpSettings<double> st;
  st.eps_abs = st.eps_rel = 1e-6;
  BatchOptions opt;
  opt.threads = 1;
  QpSolutions<double> sol;
  solve_batch(bt, st, opt, sol);
  AdjointCase c;
  const int n = bt.n, m = bt.m(), nnz = bt.nnz();
  c.P = bt.P;
  c.b = bt.b;
  c.x = sol.x;
  c.y = sol.y;
  c.A.assign(size_t(size) * m * n, 0.0);
  for (int k = 0; k < size; ++k)
    for (int i = 0; i < m; ++i)
      for (int e = bt.a_row_ptr[i]; e < bt.a_row_ptr[i + 1]; ++e)
        c.A[(size_t(k) * m + i) * n + bt.a_col[e]] = bt.A[size_t(k) * nnz + e];
  std::mt19937_64 rng(7);
  std::normal_distribution<double> normal;
  c.gx.resize(size_t(size) * n);
  for (double& v : c.gx) v = normal(rng);
  c.in.size = size;
  c.in.n = n;
  c.in.cones = bt.cones;
  c.in.eps = 1e-6;
  c.in.P = c.P.data();
  c.in.A = c.A.data();
  c.in.b = c.b.data();
  c.in.x = c.x.data();
  c.in.y = c.y.data();
  c.in.gx = c.gx.data();
  return c;
}

// which: 0 octagon, 1 exact cones, else the random QPs' n
void BM_Adjoint(benchmark::State& state, int which) {
  const int size = static_cast<int>(state.range(0));
  const AdjointCase c = make_case(which, size);
  const int n = c.in.n, m = c.in.m();
  std::vector<double> gP(size_t(size) * n * n), gq(size_t(size) * n), gA(size_t(size) * m * n), gb(size_t(size) * m);
  const QpAdjointOut<double> out{gP.data(), gq.data(), gA.data(), gb.data()};
  QpAdjointInfo info;
  for (auto _ : state) info = qp_adjoint_batch(c.in, out, 1);
  state.SetItemsProcessed(state.iterations() * size);
  state.counters["least_squares"] = info.least_squares;
  state.counters["largest_system"] = info.largest_system;
  state.counters["us_per_problem"] =
      benchmark::Counter(double(size) * state.iterations(), benchmark::Counter::kIsRate | benchmark::Counter::kInvert);
}
BENCHMARK_CAPTURE(BM_Adjoint, octagon, 0)->ArgName("batch")->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Adjoint, cone, 1)->ArgName("batch")->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Adjoint, random_n8, 8)->ArgName("batch")->Arg(1000)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Adjoint, random_n32, 32)->ArgName("batch")->Arg(1000)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace impulse
