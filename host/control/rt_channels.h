// Lock-free hand-over between the real-time controller thread and the learner thread.
//
// ResidualChannel: one writer publishes a vector (the learned residual), any number of
// readers take the newest complete copy. A seqlock: the writer makes the sequence odd,
// stores the entries, makes it even; a reader retries while the sequence is odd or
// changed under it, and after a bounded number of tries keeps what it had (it never
// blocks and never sees a torn vector). Entries are std::atomic<double> (relaxed), so
// there is no data race in the C++ sense.
//
// SampleRing: single-producer single-consumer ring of fixed-size records (x, u, x⁺);
// push() drops the record and returns false when full. Neither type allocates after
// construction.
#pragma once

#include <Eigen/Dense>
#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

namespace impulse {

class ResidualChannel {
 public:
  explicit ResidualChannel(int size) : size_(size), data_(new std::atomic<double>[size]) {
    for (int i = 0; i < size; ++i) data_[i].store(0.0, std::memory_order_relaxed);
  }
  int size() const { return size_; }

  // writer (one thread only)
  void publish(const Eigen::Ref<const Eigen::VectorXd>& r) {
    const std::uint64_t s = seq_.load(std::memory_order_relaxed);
    seq_.store(s + 1, std::memory_order_relaxed);
    std::atomic_thread_fence(std::memory_order_release);
    for (int i = 0; i < size_; ++i) data_[i].store(r[i], std::memory_order_relaxed);
    seq_.store(s + 2, std::memory_order_release);
  }

  // reader: copies the newest complete vector into out and returns its version (the
  // number of publishes so far), or returns -1 and leaves out untouched after
  // max_tries torn reads.
  std::int64_t read(Eigen::Ref<Eigen::VectorXd> out, int max_tries = 4) const {
    for (int t = 0; t < max_tries; ++t) {
      const std::uint64_t s1 = seq_.load(std::memory_order_acquire);
      if (s1 & 1u) continue;
      for (int i = 0; i < size_; ++i) out[i] = data_[i].load(std::memory_order_relaxed);
      std::atomic_thread_fence(std::memory_order_acquire);
      const std::uint64_t s2 = seq_.load(std::memory_order_relaxed);
      if (s1 == s2) return static_cast<std::int64_t>(s1 / 2);
    }
    return -1;
  }

  std::int64_t version() const {
    return static_cast<std::int64_t>(seq_.load(std::memory_order_acquire) / 2);
  }

 private:
  int size_;
  std::unique_ptr<std::atomic<double>[]> data_;
  std::atomic<std::uint64_t> seq_{0};
};

class SampleRing {
 public:
  SampleRing(int capacity, int nx, int nu)
      : cap_(capacity + 1), nx_(nx), nu_(nu), buf_(static_cast<size_t>(cap_) * (2 * nx + nu)) {}
  int nx() const { return nx_; }
  int nu() const { return nu_; }

  // producer
  bool push(const Eigen::Ref<const Eigen::VectorXd>& x, const Eigen::Ref<const Eigen::VectorXd>& u,
            const Eigen::Ref<const Eigen::VectorXd>& x_next) {
    const int h = head_.load(std::memory_order_relaxed);
    const int next = (h + 1) % cap_;
    if (next == tail_.load(std::memory_order_acquire)) return false;
    double* rec = record(h);
    for (int i = 0; i < nx_; ++i) rec[i] = x[i];
    for (int i = 0; i < nu_; ++i) rec[nx_ + i] = u[i];
    for (int i = 0; i < nx_; ++i) rec[nx_ + nu_ + i] = x_next[i];
    head_.store(next, std::memory_order_release);
    return true;
  }

  // consumer: false when empty
  bool pop(Eigen::Ref<Eigen::VectorXd> x, Eigen::Ref<Eigen::VectorXd> u,
           Eigen::Ref<Eigen::VectorXd> x_next) {
    const int t = tail_.load(std::memory_order_relaxed);
    if (t == head_.load(std::memory_order_acquire)) return false;
    const double* rec = record(t);
    for (int i = 0; i < nx_; ++i) x[i] = rec[i];
    for (int i = 0; i < nu_; ++i) u[i] = rec[nx_ + i];
    for (int i = 0; i < nx_; ++i) x_next[i] = rec[nx_ + nu_ + i];
    tail_.store((t + 1) % cap_, std::memory_order_release);
    return true;
  }

 private:
  double* record(int i) { return buf_.data() + static_cast<size_t>(i) * (2 * nx_ + nu_); }
  int cap_, nx_, nu_;
  std::vector<double> buf_;
  std::atomic<int> head_{0}, tail_{0};
};

}  // namespace impulse
