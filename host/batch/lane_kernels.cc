// Picks the lane solvers' instruction set (host/batch/lane_kernels.h).
#include "host/batch/lane_kernels.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>

#include "host/batch/qp_batch.h"
#include "solvers/error.h"

// the sets this build compiled (CMakeLists.txt: IMPULSE_LANES_DISPATCH)
#if IMPULSE_LANES_DISPATCH
extern "C" void impulse_lane_kernels_isa_sse2(impulse::lanes::Kernels*);
extern "C" void impulse_lane_kernels_isa_avx2(impulse::lanes::Kernels*);
extern "C" void impulse_lane_kernels_isa_avx512(impulse::lanes::Kernels*);
#else
extern "C" void impulse_lane_kernels_isa_native(impulse::lanes::Kernels*);
#endif

namespace impulse {
namespace {

using Fill = void (*)(lanes::Kernels*);

// the table of `isa` when this build has it, else nullptr
Fill fill_of(LaneIsa isa) {
#if IMPULSE_LANES_DISPATCH
  switch (isa) {
    case LaneIsa::kSse2: return &impulse_lane_kernels_isa_sse2;
    case LaneIsa::kAvx2: return &impulse_lane_kernels_isa_avx2;
    case LaneIsa::kAvx512: return &impulse_lane_kernels_isa_avx512;
  }
  return nullptr;
#else
  // the one set this build was compiled for (-march=native)
  lanes::Kernels k;
  impulse_lane_kernels_isa_native(&k);
  const LaneIsa native = k.bytes == 64 ? LaneIsa::kAvx512 : k.bytes == 32 ? LaneIsa::kAvx2 : LaneIsa::kSse2;
  return isa == native ? &impulse_lane_kernels_isa_native : nullptr;
#endif
}

bool cpu_runs(LaneIsa isa) {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_cpu_init();
  switch (isa) {
    case LaneIsa::kSse2: return true;  // every x86-64
    case LaneIsa::kAvx2: return __builtin_cpu_supports("x86-64-v3") != 0;
    case LaneIsa::kAvx512: return __builtin_cpu_supports("x86-64-v4") != 0;
  }
  return false;
#else
  return isa == LaneIsa::kSse2;  // (the generic 16-byte vectors)
#endif
}

lanes::Kernels table_of(LaneIsa isa) {
  lanes::Kernels k;
  fill_of(isa)(&k);
  k.isa = isa;
  // the solver types cross as bytes: the same definitions must have the same size
  if (k.settings_bytes[0] != sizeof(QpSettings<float>) || k.settings_bytes[1] != sizeof(QpSettings<double>) ||
      k.info_bytes[0] != sizeof(QpInfo<float>) || k.info_bytes[1] != sizeof(QpInfo<double>) ||
      k.shape_bytes != sizeof(QpShape))
    throw Error(std::string("lane kernels ") + to_string(isa) +
                ": their QpSettings / QpInfo / QpShape differ in size from this build's (a build that mixes versions?)");
  return k;
}

std::mutex g_mutex;
std::atomic<const lanes::Kernels*> g_current{nullptr};

const lanes::Kernels* install(LaneIsa isa) {
  // one table per set, never freed (a solve on another thread may hold the old one)
  static lanes::Kernels tables[3];
  static bool filled[3] = {false, false, false};
  const int i = static_cast<int>(isa);
  if (!filled[i]) {
    tables[i] = table_of(isa);
    filled[i] = true;
  }
  g_current.store(&tables[i], std::memory_order_release);
  return &tables[i];
}

}  // namespace

const char* to_string(LaneIsa isa) {
  switch (isa) {
    case LaneIsa::kSse2: return "sse2";
    case LaneIsa::kAvx2: return "avx2";
    case LaneIsa::kAvx512: return "avx512";
  }
  return "?";
}

LaneIsa parse_lane_isa(const std::string& name) {
  for (LaneIsa isa : {LaneIsa::kSse2, LaneIsa::kAvx2, LaneIsa::kAvx512})
    if (name == to_string(isa)) return isa;
  throw Error("unknown lane instruction set '" + name + "': expected sse2, avx2 or avx512");
}

bool lane_isa_supported(LaneIsa isa) { return fill_of(isa) != nullptr && cpu_runs(isa); }

std::vector<LaneIsa> supported_lane_isas() {
  std::vector<LaneIsa> out;
  for (LaneIsa isa : {LaneIsa::kSse2, LaneIsa::kAvx2, LaneIsa::kAvx512})
    if (lane_isa_supported(isa)) out.push_back(isa);
  return out;
}

void set_lane_isa(LaneIsa isa) {
  if (!lane_isa_supported(isa))
    throw Error(std::string("lane instruction set ") + to_string(isa) + " is not " +
                (fill_of(isa) == nullptr ? "in this build" : "run by this CPU") + "; this machine has " + [] {
                  std::string s;
                  for (LaneIsa i : supported_lane_isas()) s += (s.empty() ? "" : ", ") + std::string(to_string(i));
                  return s;
                }());
  std::lock_guard<std::mutex> lock(g_mutex);
  install(isa);
}

namespace lanes {
const Kernels& kernels() {
  if (const Kernels* k = g_current.load(std::memory_order_acquire)) return *k;
  std::lock_guard<std::mutex> lock(g_mutex);
  if (const Kernels* k = g_current.load(std::memory_order_acquire)) return *k;
  if (const char* env = std::getenv("IMPULSE_LANES"); env != nullptr && *env != '\0') {
    const LaneIsa isa = parse_lane_isa(env);
    if (!lane_isa_supported(isa))
      throw Error(std::string("IMPULSE_LANES=") + env + ": this " +
                  (fill_of(isa) == nullptr ? "build does not have it" : "CPU does not run it"));
    return *install(isa);
  }
  const std::vector<LaneIsa> ok = supported_lane_isas();
  return *install(ok.back());
}
}  // namespace lanes

LaneIsa lane_isa() { return lanes::kernels().isa; }
int lane_bytes() { return lanes::kernels().bytes; }

size_t lanes::kept_region_bytes(int n, int m, size_t elem, int lane_bytes, bool in_lanes) {
  auto round64 = [](size_t b) { return (b + 63) & ~size_t(63); };
  const size_t one = round64(size_t(qp_work_host_size(n, m)) * elem);
  if (!in_lanes) return one;
  const size_t group =
      round64(size_t(qp_work_size(n, m) + qp_anderson_size(n, m, kQpAndersonMax)) * size_t(lane_bytes));
  return std::max(group, one * (size_t(lane_bytes) / elem));
}

}  // namespace impulse
