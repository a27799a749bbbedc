#include "host/batch/lcp_batch.h"

#include <string>

namespace impulse {

template <class T>
void LcpBatch<T>::check_sizes() const {
  auto expect = [](const char* name, size_t got, size_t want) {
    if (got != want)
      throw Error(std::string(name) + ": expected " + std::to_string(want) + " entries, got " +
                  std::to_string(got));
  };
  if (n < 1) throw Error("n must be >= 1, got " + std::to_string(n));
  expect("M", M.size(), size_t(size) * n * n);
  expect("q", q.size(), size_t(size) * n);
  if (contact()) {
    if (n % 3 != 0) throw Error("contact problems need n = 3 * contacts, got n = " + std::to_string(n));
    expect("mu", mu.size(), size_t(size) * (n / 3));
  }
}

template <class T>
void solve_lcp_batch(const LcpBatch<T>& bt, const LcpSettings<T>& st, const BatchOptions& opt,
                     LcpSolutions<T>& out) {
  if (const char* bad = st.validate()) throw Error(std::string("invalid settings: ") + bad);
  if (bt.size == 0) throw Error("empty batch: nothing to solve (batch size 0)");
  bt.check_sizes();
  const int B = bt.size, n = bt.n;
  if (opt.warm_start) {
    if (out.z.size() != size_t(B) * n)
      throw Error("warm start: expected z of " + std::to_string(size_t(B) * n) + " entries, got " +
                  std::to_string(out.z.size()));
  } else {
    out.z.assign(size_t(B) * n, T(0));
  }
  out.w.assign(size_t(B) * n, T(0));
  out.residual.assign(B, T(0));
  out.status.assign(B, SolveStatus::kNotRun);
  out.fault.assign(B, InputFault::kNone);
  out.iterations.assign(B, 0);

  if (opt.backend == Backend::kCuda) {
    std::vector<int> status(B), fault(B);
    cuda::HostLcpArrays<T> h;
    h.batch = B;
    h.n = n;
    h.M = bt.M.data();
    h.q = bt.q.data();
    h.mu = bt.contact() ? bt.mu.data() : nullptr;
    h.z = out.z.data();
    h.w = out.w.data();
    h.status = status.data();
    h.fault = fault.data();
    h.iterations = out.iterations.data();
    h.residual = out.residual.data();
    cuda::solve_lcp_batch(h, st);
    for (int k = 0; k < B; ++k) {
      out.status[k] = static_cast<SolveStatus>(status[k]);
      out.fault[k] = static_cast<InputFault>(fault[k]);
    }
    return;
  }
  parallel_for(B, opt.threads, [&](int, int begin, int end) {
    for (int k = begin; k < end; ++k) {
      const auto M = unit_view(bt.M.data() + size_t(k) * n * n);
      const auto q = unit_view(bt.q.data() + size_t(k) * n);
      const auto z = unit_view(out.z.data() + size_t(k) * n);
      const auto w = unit_view(out.w.data() + size_t(k) * n);
      const LcpInfo<T> info =
          bt.contact() ? ccp_block_pgs_solve(n / 3, M, q, unit_view(bt.mu.data() + size_t(k) * (n / 3)), z, w, st)
                       : lcp_pgs_solve(n, M, q, z, w, st);
      out.status[k] = info.status;
      out.fault[k] = info.fault;
      out.iterations[k] = info.iterations;
      out.residual[k] = info.residual;
    }
  });
}

template struct LcpBatch<float>;
template struct LcpBatch<double>;
template void solve_lcp_batch(const LcpBatch<float>&, const LcpSettings<float>&,
                              const BatchOptions&, LcpSolutions<float>&);
template void solve_lcp_batch(const LcpBatch<double>&, const LcpSettings<double>&,
                              const BatchOptions&, LcpSolutions<double>&);

}  // namespace impulse
