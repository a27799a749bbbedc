// NumPy .npy arrays in memory and on disk.
//
// NpyArray holds one n-dimensional array as raw little-endian bytes in C
// order, tagged with its element type. decode_npy reads format versions 1.0,
// 2.0 and 3.0 (3.0 differs only in allowing a UTF-8 header); encode_npy writes
// 1.0, the version np.save writes for every array this layer can hold. Every
// bad input throws impulse::Error with a message that names the file.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "solvers/error.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "impulse io/ assumes a little-endian host"
#endif

namespace impulse {

// The element types an .npy file may hold here (NumPy descr in comments).
enum class DType {
  kFloat64,  // <f8
  kFloat32,  // <f4
  kInt32,    // <i4
  kInt64,    // <i8
  kInt8,     // |i1
  kUInt8,    // |u1
  kBool,     // |b1 (one byte, 0 or 1)
};

// The NumPy descr string of a dtype, e.g. "<f8".
const char* dtype_descr(DType dtype);
// Bytes per element.
size_t dtype_itemsize(DType dtype);
// A shape the way Python prints a tuple: "(500, 32, 32)", "(5,)", "()".
std::string shape_string(const std::vector<int64_t>& shape);

struct NpyArray {
  DType dtype = DType::kFloat64;
  std::vector<int64_t> shape;
  std::vector<uint8_t> data;  // little-endian, C order, size() * itemsize bytes

  // Number of elements: the product of shape (1 for a 0-d array).
  int64_t size() const;

  // The elements converted to T (an arithmetic type). Conversions to an
  // integer type throw impulse::Error for a value T cannot hold exactly (NaN,
  // out of range, or a fraction), instead of silently truncating.
  template <class T>
  std::vector<T> as() const;
};

// Arrays from values; throw impulse::Error when v.size() is not the product of
// shape or a dimension is negative.
NpyArray make_npy(const std::vector<int64_t>& shape, const std::vector<double>& v);   // float64
NpyArray make_npy(const std::vector<int64_t>& shape, const std::vector<float>& v);    // float32
NpyArray make_npy(const std::vector<int64_t>& shape, const std::vector<int32_t>& v);  // int32
NpyArray make_npy(const std::vector<int64_t>& shape, const std::vector<int64_t>& v);  // int64

// Throws "NAME: expected dtype <f8, got <i4" unless a.dtype == dtype.
void expect_dtype(const NpyArray& a, DType dtype, const std::string& name_for_errors);

// The complete .npy file (format 1.0; 2.0 only if the header outgrows 64 KiB).
std::vector<uint8_t> encode_npy(const NpyArray& a);

// Parses a complete .npy file held in memory. name_for_errors starts every
// error message ("x.npy", or "batch.npz: entry 'P.npy'").
NpyArray decode_npy(const uint8_t* bytes, size_t len, const std::string& name_for_errors);

// Reads / writes an .npy file. write_npy writes path + ".tmp.<pid>", syncs it
// and renames it over path, so readers never see a partial file.
NpyArray read_npy(const std::string& path);
void write_npy(const std::string& path, const NpyArray& a);

// ---- implementation of NpyArray::as ----------------------------------------

namespace npy_detail {

[[noreturn]] void throw_unrepresentable(int64_t index, double value, const char* target);

template <class T>
const char* type_name() {
  if (std::is_same<T, bool>::value) return "bool";
  if (std::is_floating_point<T>::value) return sizeof(T) == 4 ? "float32" : "float64";
  if (std::is_signed<T>::value) {
    switch (sizeof(T)) {
      case 1: return "int8";
      case 2: return "int16";
      case 4: return "int32";
      default: return "int64";
    }
  }
  switch (sizeof(T)) {
    case 1: return "uint8";
    case 2: return "uint16";
    case 4: return "uint32";
    default: return "uint64";
  }
}

// one element from S to T, refusing values T cannot hold
template <class T, class S>
T convert(S s, int64_t index) {
  if constexpr (std::is_same<T, bool>::value) {
    return s != S(0);
  } else if constexpr (std::is_floating_point<T>::value || std::is_same<S, bool>::value) {
    return static_cast<T>(s);
  } else if constexpr (std::is_floating_point<S>::value) {
    // T's range is [lo, upper), both powers of two and exact in double
    constexpr int kBits = 8 * static_cast<int>(sizeof(T)) - (std::is_signed<T>::value ? 1 : 0);
    const double upper = std::ldexp(1.0, kBits);
    const double lo = std::is_signed<T>::value ? -upper : 0.0;
    const double d = static_cast<double>(s);
    if (!(d >= lo && d < upper) || std::trunc(d) != d) throw_unrepresentable(index, d, type_name<T>());
    return static_cast<T>(d);
  } else {
    // integer to integer: compare in 64 bits
    bool ok;
    if constexpr (std::is_signed<S>::value) {
      const int64_t v = s;
      if constexpr (std::is_signed<T>::value) {
        ok = v >= int64_t{std::numeric_limits<T>::min()} && v <= int64_t{std::numeric_limits<T>::max()};
      } else {
        ok = v >= 0 && static_cast<uint64_t>(v) <= uint64_t{std::numeric_limits<T>::max()};
      }
    } else {
      const uint64_t v = s;
      ok = v <= static_cast<uint64_t>(std::numeric_limits<T>::max());
    }
    if (!ok) throw_unrepresentable(index, static_cast<double>(s), type_name<T>());
    return static_cast<T>(s);
  }
}

template <class T, class S>
void convert_all(const std::vector<uint8_t>& data, std::vector<T>& out) {
  const size_t n = data.size() / sizeof(S);
  out.resize(n);
  if constexpr (std::is_same<T, S>::value) {
    if (n > 0) std::memcpy(out.data(), data.data(), n * sizeof(S));
  } else {
    for (size_t i = 0; i < n; ++i) {
      S s;
      std::memcpy(&s, data.data() + i * sizeof(S), sizeof(S));
      out[i] = convert<T>(s, static_cast<int64_t>(i));
    }
  }
}

}  // namespace npy_detail

template <class T>
std::vector<T> NpyArray::as() const {
  static_assert(std::is_arithmetic<T>::value, "NpyArray::as<T> needs an arithmetic T");
  std::vector<T> out;
  switch (dtype) {
    case DType::kFloat64: npy_detail::convert_all<T, double>(data, out); break;
    case DType::kFloat32: npy_detail::convert_all<T, float>(data, out); break;
    case DType::kInt32: npy_detail::convert_all<T, int32_t>(data, out); break;
    case DType::kInt64: npy_detail::convert_all<T, int64_t>(data, out); break;
    case DType::kInt8: npy_detail::convert_all<T, int8_t>(data, out); break;
    case DType::kUInt8: npy_detail::convert_all<T, uint8_t>(data, out); break;
    case DType::kBool: {
      // any nonzero byte is true, as in NumPy
      out.resize(data.size());
      for (size_t i = 0; i < data.size(); ++i) out[i] = static_cast<T>(data[i] != 0);
      break;
    }
  }
  return out;
}

}  // namespace impulse
