#include "io/npy.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <utility>

#include "io/files.h"

namespace impulse {

namespace {

const char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kAlign = 64;  // np.save pads the header so data starts 64-aligned

std::string quoted(const std::string& s) {
  std::string out;
  for (char c : s) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (u >= 0x20 && u < 0x7f) {
      out += c;
    } else {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\x%02x", u);
      out += buf;
    }
  }
  return out;
}

// ---- the header dict: a Python literal ------------------------------------

// A parsed Python literal value, just what an .npy header can hold.
struct PyValue {
  enum Kind { kString, kBool, kInt, kTuple, kList, kNone } kind = kNone;
  std::string str;
  bool boolean = false;
  int64_t integer = 0;
  std::vector<PyValue> items;
};

class HeaderParser {
 public:
  HeaderParser(const std::string& text, const std::string& name) : s_(text), name_(name) {}

  // the dict, as key/value pairs in order
  std::vector<std::pair<std::string, PyValue>> parse_dict() {
    std::vector<std::pair<std::string, PyValue>> out;
    skip_space();
    expect('{');
    skip_space();
    while (peek() != '}') {
      skip_space();
      if (peek() != '\'' && peek() != '"') fail("expected a quoted key");
      std::string key = parse_string();
      skip_space();
      expect(':');
      skip_space();
      PyValue v = parse_value(0);
      for (const auto& kv : out) {
        if (kv.first == key) fail("duplicate key '" + quoted(key) + "'");
      }
      out.emplace_back(std::move(key), std::move(v));
      skip_space();
      if (peek() == ',') {
        ++pos_;
        skip_space();
      } else if (peek() != '}') {
        fail("expected ',' or '}'");
      }
    }
    ++pos_;
    skip_space();
    if (pos_ != s_.size()) fail("unexpected text after the dict");
    return out;
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(name_ + ": malformed header: " + what + " at offset " + std::to_string(pos_) +
                " in \"" + quoted(s_.substr(0, 200)) + (s_.size() > 200 ? "...\"" : "\""));
  }

  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }

  void expect(char c) {
    if (peek() != c) fail(std::string("expected '") + c + "'");
    ++pos_;
  }

  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r')) {
      ++pos_;
    }
  }

  std::string parse_string() {
    const char q = s_[pos_++];
    std::string out;
    while (true) {
      if (pos_ >= s_.size()) fail("unterminated string");
      const char c = s_[pos_++];
      if (c == q) break;
      if (c == '\\') {
        if (pos_ >= s_.size()) fail("unterminated string");
        out += s_[pos_++];  // keep the escaped character; descr never needs more
      } else {
        out += c;
      }
    }
    return out;
  }

  PyValue parse_value(int depth) {
    if (depth > 8) fail("nesting too deep");
    PyValue v;
    const char c = peek();
    if (c == '\'' || c == '"') {
      v.kind = PyValue::kString;
      v.str = parse_string();
    } else if (c == '(' || c == '[') {
      const char close = c == '(' ? ')' : ']';
      v.kind = c == '(' ? PyValue::kTuple : PyValue::kList;
      ++pos_;
      skip_space();
      bool trailing_comma = false;
      while (peek() != close) {
        v.items.push_back(parse_value(depth + 1));
        skip_space();
        trailing_comma = false;
        if (peek() == ',') {
          ++pos_;
          skip_space();
          trailing_comma = true;
        } else if (peek() != close) {
          fail(std::string("expected ',' or '") + close + "'");
        }
      }
      ++pos_;
      // (5) is just a parenthesized 5, not a tuple
      if (v.kind == PyValue::kTuple && v.items.size() == 1 && !trailing_comma) {
        PyValue inner = std::move(v.items[0]);
        return inner;
      }
    } else if (std::isdigit(static_cast<unsigned char>(c)) || c == '-' || c == '+') {
      v.kind = PyValue::kInt;
      const bool negative = c == '-';
      if (c == '-' || c == '+') ++pos_;
      if (!std::isdigit(static_cast<unsigned char>(peek()))) fail("expected a digit");
      uint64_t mag = 0;
      while (std::isdigit(static_cast<unsigned char>(peek()))) {
        const int d = peek() - '0';
        if (mag > (static_cast<uint64_t>(INT64_MAX) - d) / 10) fail("integer too large");
        mag = mag * 10 + d;
        ++pos_;
      }
      if (peek() == 'L' || peek() == 'l') ++pos_;  // Python 2 long suffix
      if (peek() == '.' || peek() == 'e' || peek() == 'E') fail("expected an integer");
      v.integer = negative ? -static_cast<int64_t>(mag) : static_cast<int64_t>(mag);
    } else if (std::isalpha(static_cast<unsigned char>(c))) {
      size_t end = pos_;
      while (end < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[end])) || s_[end] == '_')) ++end;
      const std::string word = s_.substr(pos_, end - pos_);
      if (word == "True" || word == "False") {
        v.kind = PyValue::kBool;
        v.boolean = word == "True";
      } else if (word == "None") {
        v.kind = PyValue::kNone;
      } else {
        fail("unexpected word '" + quoted(word) + "'");
      }
      pos_ = end;
    } else {
      fail(c == '\0' ? std::string("unexpected end of header") : "unexpected character '" + quoted(std::string(1, c)) + "'");
    }
    return v;
  }

  const std::string& s_;
  const std::string& name_;
  size_t pos_ = 0;
};

bool descr_to_dtype(const std::string& d, DType* out) {
  if (d.size() != 3) return false;
  const char order = d[0];
  const std::string kind = d.substr(1);
  // one-byte types have no byte order; NumPy writes '|' but any order is fine
  if (order == '|' || order == '<' || order == '>' || order == '=') {
    if (kind == "i1") { *out = DType::kInt8; return true; }
    if (kind == "u1") { *out = DType::kUInt8; return true; }
    if (kind == "b1") { *out = DType::kBool; return true; }
  }
  if (order != '<') return false;
  if (kind == "f8") { *out = DType::kFloat64; return true; }
  if (kind == "f4") { *out = DType::kFloat32; return true; }
  if (kind == "i4") { *out = DType::kInt32; return true; }
  if (kind == "i8") { *out = DType::kInt64; return true; }
  return false;
}

uint64_t read_le(const uint8_t* p, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | p[i];
  return v;
}

// What the header says, and where the data start.
struct NpyHeader {
  DType dtype;
  std::vector<int64_t> shape;
  size_t data_offset;
  uint64_t data_bytes;
};

NpyHeader parse_header(const uint8_t* bytes, size_t len, const std::string& name) {
  if (len < kMagicLen || std::memcmp(bytes, kMagic, kMagicLen) != 0) {
    throw Error(name + ": not an .npy file (bad magic; expected \\x93NUMPY)");
  }
  if (len < 8) throw Error(name + ": truncated: file ends inside the .npy preamble (" + std::to_string(len) + " bytes)");
  const int major = bytes[6];
  const int minor = bytes[7];
  if (!((major == 1 || major == 2 || major == 3) && minor == 0)) {
    throw Error(name + ": unsupported .npy format version " + std::to_string(major) + "." + std::to_string(minor) +
                " (supported: 1.0, 2.0, 3.0)");
  }
  const size_t len_bytes = major == 1 ? 2 : 4;
  const size_t prefix = 8 + len_bytes;
  if (len < prefix) throw Error(name + ": truncated: file ends inside the .npy preamble (" + std::to_string(len) + " bytes)");
  const uint64_t header_len = read_le(bytes + 8, static_cast<int>(len_bytes));
  if (header_len > len - prefix) {
    throw Error(name + ": truncated: header length field says " + std::to_string(header_len) + " bytes, file has " +
                std::to_string(len - prefix) + " after the preamble");
  }
  const std::string text(reinterpret_cast<const char*>(bytes + prefix), static_cast<size_t>(header_len));
  if (major < 3) {
    for (char c : text) {
      if (static_cast<unsigned char>(c) >= 0x80) throw Error(name + ": malformed header: non-ASCII byte in a v" + std::to_string(major) + ".0 header");
    }
  }

  HeaderParser parser(text, name);
  const auto dict = parser.parse_dict();
  const PyValue* descr = nullptr;
  const PyValue* fortran = nullptr;
  const PyValue* shape = nullptr;
  for (const auto& kv : dict) {
    if (kv.first == "descr") {
      descr = &kv.second;
    } else if (kv.first == "fortran_order") {
      fortran = &kv.second;
    } else if (kv.first == "shape") {
      shape = &kv.second;
    } else {
      throw Error(name + ": malformed header: unexpected key '" + quoted(kv.first) + "'");
    }
  }
  if (!descr) throw Error(name + ": malformed header: missing key 'descr'");
  if (!fortran) throw Error(name + ": malformed header: missing key 'fortran_order'");
  if (!shape) throw Error(name + ": malformed header: missing key 'shape'");

  NpyHeader h;
  if (descr->kind != PyValue::kString) {
    throw Error(name + ": unsupported dtype: structured or non-string descr (supported: <f8 <f4 <i4 <i8 |i1 |u1 |b1)");
  }
  if (!descr_to_dtype(descr->str, &h.dtype)) {
    const bool big = !descr->str.empty() && descr->str[0] == '>';
    throw Error(name + ": unsupported dtype '" + quoted(descr->str) + "'" + (big ? " (big-endian)" : "") +
                " (supported: <f8 <f4 <i4 <i8 |i1 |u1 |b1)");
  }
  if (fortran->kind != PyValue::kBool) throw Error(name + ": malformed header: fortran_order is not True or False");
  if (fortran->boolean) throw Error(name + ": fortran_order True is not supported (save a C-ordered array)");
  if (shape->kind != PyValue::kTuple) throw Error(name + ": malformed header: shape is not a tuple");

  // element count, refusing negative dimensions and overflow
  const uint64_t itemsize = dtype_itemsize(h.dtype);
  bool has_zero = false;
  for (const PyValue& d : shape->items) {
    if (d.kind != PyValue::kInt) throw Error(name + ": malformed header: shape holds a non-integer");
    if (d.integer < 0) throw Error(name + ": bad shape: negative dimension " + std::to_string(d.integer));
    h.shape.push_back(d.integer);
    has_zero = has_zero || d.integer == 0;
  }
  uint64_t count = has_zero ? 0 : 1;
  const uint64_t kMaxBytes = uint64_t{1} << 62;
  for (int64_t d : h.shape) {
    if (has_zero) break;
    const uint64_t u = static_cast<uint64_t>(d);
    if (count > kMaxBytes / itemsize / u) throw Error(name + ": bad shape " + shape_string(h.shape) + ": too many elements");
    count *= u;
  }
  h.data_offset = prefix + static_cast<size_t>(header_len);
  h.data_bytes = count * itemsize;

  const uint64_t have = len - h.data_offset;
  if (have < h.data_bytes) {
    throw Error(name + ": truncated: header says " + std::to_string(h.data_bytes) + " data bytes, file has " +
                std::to_string(have));
  }
  if (have > h.data_bytes) {
    throw Error(name + ": trailing data: header says " + std::to_string(h.data_bytes) + " data bytes, file has " +
                std::to_string(have));
  }
  return h;
}

int64_t checked_count(const std::vector<int64_t>& shape, const char* what) {
  int64_t n = 1;
  for (int64_t d : shape) {
    if (d < 0) throw Error(std::string(what) + ": negative dimension in shape " + shape_string(shape));
    if (d != 0 && n > INT64_MAX / d) throw Error(std::string(what) + ": shape " + shape_string(shape) + " overflows");
    n *= d;
  }
  return n;
}

template <class T>
NpyArray make_from(DType dtype, const std::vector<int64_t>& shape, const std::vector<T>& v) {
  const int64_t n = checked_count(shape, "make_npy");
  if (static_cast<uint64_t>(n) != v.size()) {
    throw Error("make_npy: shape " + shape_string(shape) + " holds " + std::to_string(n) + " elements, got " +
                std::to_string(v.size()) + " values");
  }
  NpyArray a;
  a.dtype = dtype;
  a.shape = shape;
  a.data.resize(v.size() * sizeof(T));
  if (!v.empty()) std::memcpy(a.data.data(), v.data(), a.data.size());
  return a;
}

}  // namespace

namespace npy_detail {

void throw_unrepresentable(int64_t index, double value, const char* target) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", value);
  throw Error(std::string("NpyArray::as<") + target + ">: element " + std::to_string(index) + " (" + buf +
              ") is not representable as " + target);
}

}  // namespace npy_detail

const char* dtype_descr(DType dtype) {
  switch (dtype) {
    case DType::kFloat64: return "<f8";
    case DType::kFloat32: return "<f4";
    case DType::kInt32: return "<i4";
    case DType::kInt64: return "<i8";
    case DType::kInt8: return "|i1";
    case DType::kUInt8: return "|u1";
    case DType::kBool: return "|b1";
  }
  return "?";
}

size_t dtype_itemsize(DType dtype) {
  switch (dtype) {
    case DType::kFloat64: return 8;
    case DType::kFloat32: return 4;
    case DType::kInt32: return 4;
    case DType::kInt64: return 8;
    case DType::kInt8: return 1;
    case DType::kUInt8: return 1;
    case DType::kBool: return 1;
  }
  return 1;
}

std::string shape_string(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i > 0) s += ", ";
    s += std::to_string(shape[i]);
  }
  if (shape.size() == 1) s += ",";
  return s + ")";
}

int64_t NpyArray::size() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

NpyArray make_npy(const std::vector<int64_t>& shape, const std::vector<double>& v) {
  return make_from(DType::kFloat64, shape, v);
}
NpyArray make_npy(const std::vector<int64_t>& shape, const std::vector<float>& v) {
  return make_from(DType::kFloat32, shape, v);
}
NpyArray make_npy(const std::vector<int64_t>& shape, const std::vector<int32_t>& v) {
  return make_from(DType::kInt32, shape, v);
}
NpyArray make_npy(const std::vector<int64_t>& shape, const std::vector<int64_t>& v) {
  return make_from(DType::kInt64, shape, v);
}

void expect_dtype(const NpyArray& a, DType dtype, const std::string& name_for_errors) {
  if (a.dtype != dtype) {
    throw Error(name_for_errors + ": expected dtype " + dtype_descr(dtype) + ", got " + dtype_descr(a.dtype));
  }
}

std::vector<uint8_t> encode_npy(const NpyArray& a) {
  const int64_t n = checked_count(a.shape, "encode_npy");
  const uint64_t want = static_cast<uint64_t>(n) * dtype_itemsize(a.dtype);
  if (want != a.data.size()) {
    throw Error("encode_npy: shape " + shape_string(a.shape) + " of " + dtype_descr(a.dtype) + " needs " +
                std::to_string(want) + " data bytes, array has " + std::to_string(a.data.size()));
  }
  std::string header = std::string("{'descr': '") + dtype_descr(a.dtype) + "', 'fortran_order': False, 'shape': " +
                       shape_string(a.shape) + ", }";
  // pad with spaces and end with '\n' so the data start 64-aligned
  int major = 1;
  size_t prefix = kMagicLen + 2 + 2;
  size_t total = prefix + header.size() + 1;
  size_t padded = (total + kAlign - 1) / kAlign * kAlign;
  if (padded - prefix > 0xffff) {
    major = 2;
    prefix = kMagicLen + 2 + 4;
    total = prefix + header.size() + 1;
    padded = (total + kAlign - 1) / kAlign * kAlign;
  }
  header.append(padded - total, ' ');
  header += '\n';

  // magic, version, header length (little-endian), header, data; written by
  // position (GCC 12 warns falsely about inserts into a reserved vector here)
  std::vector<uint8_t> out(prefix + header.size() + a.data.size());
  uint8_t* o = out.data();
  std::copy(kMagic, kMagic + kMagicLen, o);
  o += kMagicLen;
  *o++ = static_cast<uint8_t>(major);
  *o++ = 0;
  const uint64_t hl = header.size();
  for (size_t i = 0; i < prefix - kMagicLen - 2; ++i) *o++ = static_cast<uint8_t>(hl >> (8 * i));
  o = std::copy(header.begin(), header.end(), o);
  std::copy(a.data.begin(), a.data.end(), o);
  return out;
}

NpyArray decode_npy(const uint8_t* bytes, size_t len, const std::string& name_for_errors) {
  const NpyHeader h = parse_header(bytes, len, name_for_errors);
  NpyArray a;
  a.dtype = h.dtype;
  a.shape = h.shape;
  a.data.assign(bytes + h.data_offset, bytes + h.data_offset + h.data_bytes);
  return a;
}

NpyArray read_npy(const std::string& path) {
  std::vector<uint8_t> bytes = read_file_bytes(path);
  const NpyHeader h = parse_header(bytes.data(), bytes.size(), path);
  // reuse the file buffer: drop the header in place
  NpyArray a;
  a.dtype = h.dtype;
  a.shape = h.shape;
  bytes.erase(bytes.begin(), bytes.begin() + static_cast<std::ptrdiff_t>(h.data_offset));
  a.data = std::move(bytes);
  return a;
}

void write_npy(const std::string& path, const NpyArray& a) {
  std::vector<uint8_t> bytes;
  try {
    bytes = encode_npy(a);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  write_file_atomic(path, bytes);
}

}  // namespace impulse
