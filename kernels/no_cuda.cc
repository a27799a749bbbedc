// The twin of kernels/*.cu for builds without the CUDA toolkit: the same API,
// reporting "CUDA not available" (Drake's no_osqp.cc habit).
#include "solvers/error.h"
#include "kernels/ccn_device.h"
#include "kernels/contactnets_device.h"
#include "kernels/impact_device.h"
#include "kernels/qp_kernels.h"

namespace impulse {
namespace cuda {

DeviceInfo device_info() {
  DeviceInfo info;
  info.built = false;
  info.reason = "impulse was built without CUDA kernels (IMPULSE_CUDA=OFF or no toolkit)";
  return info;
}

bool available() { return false; }

template <class T>
struct DeviceQpBatch<T>::Impl {};

template <class T>
DeviceQpBatch<T>::DeviceQpBatch(DeviceLayout) {
  throw Error("CUDA not available: " + device_info().reason);
}
template <class T>
DeviceQpBatch<T>::~DeviceQpBatch() = default;
template <class T>
void DeviceQpBatch<T>::upload(const HostQpArrays<T>&) {
  throw Error("CUDA not available");
}
template <class T>
void DeviceQpBatch<T>::upload_warm_start(const HostQpResults<T>&) {
  throw Error("CUDA not available");
}
template <class T>
void DeviceQpBatch<T>::keep_factors(bool) {
  throw Error("CUDA not available");
}
template <class T>
void DeviceQpBatch<T>::upload_vectors(const T*, const T*) {
  throw Error("CUDA not available");
}
template <class T>
double DeviceQpBatch<T>::solve(const QpSettings<T>&, bool, bool, bool) {
  throw Error("CUDA not available");
}
template <class T>
void DeviceQpBatch<T>::download(HostQpResults<T>&) const {
  throw Error("CUDA not available");
}
template <class T>
int DeviceQpBatch<T>::batch() const {
  return 0;
}
template <class T>
DeviceLayout DeviceQpBatch<T>::layout() const {
  return DeviceLayout::kAuto;
}

template <class T>
DeviceArray<T>::DeviceArray(size_t) {
  throw Error("CUDA not available: " + device_info().reason);
}
template <class T>
DeviceArray<T>::~DeviceArray() = default;
template <class T>
void DeviceArray<T>::upload(const T*) {
  throw Error("CUDA not available");
}
template <class T>
void DeviceArray<T>::download(T*) const {
  throw Error("CUDA not available");
}
template class DeviceArray<float>;
template class DeviceArray<double>;
template class DeviceArray<int>;

template <class T>
void solve_lcp_batch(HostLcpArrays<T>&, const LcpSettings<T>&) {
  throw Error("CUDA not available: " + device_info().reason);
}
template void solve_lcp_batch(HostLcpArrays<float>&, const LcpSettings<float>&);
template void solve_lcp_batch(HostLcpArrays<double>&, const LcpSettings<double>&);

void solve_planar_ap(int, bool, const double*, double*, int*) {
  throw Error("CUDA not available: " + device_info().reason);
}

template class DeviceQpBatch<float>;
template class DeviceQpBatch<double>;

template <class T>
struct DeviceContactNets<T>::Impl {};
template <class T>
DeviceContactNets<T>::DeviceContactNets(const cn::LossConsts<T>&, const QpSettings<T>&, DeviceLayout) {
  throw Error("CUDA not available: " + device_info().reason);
}
template <class T>
DeviceLayout DeviceContactNets<T>::layout() const {
  throw Error("CUDA not available");
}
template <class T>
DeviceContactNets<T>::~DeviceContactNets() = default;
template <class T>
void DeviceContactNets<T>::upload_transitions(int, const double*, const double*, int) {
  throw Error("CUDA not available");
}
template <class T>
DeviceLossStats DeviceContactNets<T>::evaluate(int, const double*, const int*, int, double*, double*) {
  throw Error("CUDA not available");
}
template <class T>
std::vector<std::vector<double>> DeviceContactNets<T>::download_warm_starts(int) const {
  throw Error("CUDA not available");
}
template <class T>
void DeviceContactNets<T>::upload_warm_starts(int, const std::vector<std::vector<double>>&) {
  throw Error("CUDA not available");
}
template class DeviceContactNets<float>;
template class DeviceContactNets<double>;

template <class T>
struct DeviceCcn<T>::Impl {};
template <class T>
DeviceCcn<T>::DeviceCcn(const ccnqp::System<double, ccnqp::DeviceCapacity>&, const QpSettings<T>&) {
  throw Error("CUDA not available: " + device_info().reason);
}
template <class T>
DeviceCcn<T>::~DeviceCcn() = default;
template <class T>
void DeviceCcn<T>::upload_transitions(int, const double*, const double*, int) {
  throw Error("CUDA not available");
}
template <class T>
DeviceLossStats DeviceCcn<T>::evaluate(int, const double*, const double*, const int*, int, double*, double*,
                                       double*) {
  throw Error("CUDA not available");
}
template <class T>
std::vector<std::vector<double>> DeviceCcn<T>::download_warm_starts(int) const {
  throw Error("CUDA not available");
}
template <class T>
void DeviceCcn<T>::upload_warm_starts(int, const std::vector<std::vector<double>>&) {
  throw Error("CUDA not available");
}
template class DeviceCcn<float>;
template class DeviceCcn<double>;

}  // namespace cuda
}  // namespace impulse
