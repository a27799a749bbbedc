#include "io/toss_data.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <utility>

#include "solvers/error.h"
#include "io/npz.h"
#include "io/files.h"
#include "io/zip.h"

namespace impulse {

namespace fs = std::filesystem;

std::size_t TossSet::rows() const {
  std::size_t n = 0;
  for (const Toss& t : tosses) n += t.states.size();
  return n;
}

namespace {

using toss_detail::is_zip;
using toss_detail::kCcnDt;
using toss_detail::kImpulseFile;

constexpr int kContactNetsCols = 19;
constexpr int kCcnCols = 13;

// ---- small helpers ---------------------------------------------------------------

bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() &&
         s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}

std::string fmt(double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.17g", v);
  return buf;
}

int64_t get_i64(const uint8_t* p) {
  int64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// non-finite values, quaternions far from unit norm (renormalizes the rest) and
// tosses shorter than two rows are errors naming label
void check_toss(std::vector<StateRow>& rows, const std::string& label) {
  if (rows.size() < 2) {
    throw Error(label + ": toss has " + std::to_string(rows.size()) +
                " row(s), expected at least 2");
  }
  for (size_t k = 0; k < rows.size(); ++k) {
    StateRow& r = rows[k];
    for (int c = 0; c < 13; ++c) {
      if (!std::isfinite(r[c])) {
        throw Error(label + ": row " + std::to_string(k) + ", column " + std::to_string(c) +
                    ": non-finite value " + fmt(r[c]));
      }
    }
    toss_detail::check_quaternion(&r[3], k, label);
  }
}

// "17" -> (0, 17); other stems sort after every numeric one, by name
struct StemKey {
  bool numeric;
  uint64_t value;
  std::string name;
  bool operator<(const StemKey& o) const {
    if (numeric != o.numeric) return numeric;
    if (numeric && value != o.value) return value < o.value;
    return name < o.name;
  }
};

StemKey stem_key(const std::string& stem) {
  const bool digits =
      !stem.empty() && stem.size() <= 18 &&
      std::all_of(stem.begin(), stem.end(), [](char c) { return c >= '0' && c <= '9'; });
  return StemKey{digits, digits ? std::stoull(stem) : 0, stem};
}

// the *.pt files of a folder, sorted by numeric stem (0, 1, 2, ..., 10)
std::vector<fs::path> list_pt_paths(const fs::path& dir) {
  std::vector<std::pair<StemKey, fs::path>> found;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    const fs::path& p = it->path();
    if (p.extension() == ".pt" && it->is_regular_file())
      found.emplace_back(stem_key(p.stem().string()), p);
  }
  if (ec) throw Error(dir.string() + ": cannot list the folder: " + ec.message());
  std::sort(found.begin(), found.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  std::vector<fs::path> out;
  out.reserve(found.size());
  for (auto& f : found) out.push_back(std::move(f.second));
  return out;
}

// ---- a subset pickle reader: what torch.save emits for one tensor ---------------------

struct PyVal;
using PyPtr = std::shared_ptr<PyVal>;

struct PyVal {
  enum class Kind {
    kNone,
    kBool,
    kInt,
    kBigInt,
    kFloat,
    kStr,
    kTuple,
    kList,
    kDict,
    kGlobal,
    kPersId,
    kObject
  };
  Kind kind = Kind::kNone;
  int64_t i = 0;
  double f = 0;
  std::string s, name;       // str; big int: its little-endian bytes; global: module (s) and name
  std::vector<PyPtr> items;  // tuple, list; dict: keys and values interleaved;
                             // persid: {pid}; object: {callable, args}
};

PyPtr make_val(PyVal::Kind kind) {
  auto v = std::make_shared<PyVal>();
  v->kind = kind;
  return v;
}

const char* kind_name(PyVal::Kind k) {
  switch (k) {
    case PyVal::Kind::kNone:
      return "None";
    case PyVal::Kind::kBool:
      return "bool";
    case PyVal::Kind::kInt:
      return "int";
    case PyVal::Kind::kBigInt:
      return "int (> 64 bits)";
    case PyVal::Kind::kFloat:
      return "float";
    case PyVal::Kind::kStr:
      return "str";
    case PyVal::Kind::kTuple:
      return "tuple";
    case PyVal::Kind::kList:
      return "list";
    case PyVal::Kind::kDict:
      return "dict";
    case PyVal::Kind::kGlobal:
      return "global";
    case PyVal::Kind::kPersId:
      return "persistent id";
    case PyVal::Kind::kObject:
      return "object";
  }
  return "?";
}

class PickleReader {
 public:
  PickleReader(const uint8_t* data, size_t size, std::string label)
      : p_(data), n_(size), label_(std::move(label)) {}

  // the byte after the last pickle loaded
  size_t pos() const { return pos_; }

  // the next pickle of the stream (each with its own stack and memo)
  PyPtr load() {
    stack_.clear();
    marks_.clear();
    memo_.clear();
    for (;;) {
      const size_t at = pos_;
      const uint8_t op = u8();
      switch (op) {
        case 0x80:
          u8();
          break;  // PROTO
        case 0x95:
          bytes(8);
          break;     // FRAME: a length hint only
        case '.': {  // STOP
          if (stack_.size() != 1 || !marks_.empty())
            fail(at, "STOP with " + std::to_string(stack_.size()) + " values on the stack");
          return stack_.back();
        }
        case 'c': {  // GLOBAL "module\nname\n"
          auto g = make_val(PyVal::Kind::kGlobal);
          g->s = line();
          g->name = line();
          push(g);
          break;
        }
        case 0x93: {  // STACK_GLOBAL
          PyPtr name = pop(at), module = pop(at);
          if (module->kind != PyVal::Kind::kStr || name->kind != PyVal::Kind::kStr)
            fail(at, "STACK_GLOBAL needs two strings");
          auto g = make_val(PyVal::Kind::kGlobal);
          g->s = module->s;
          g->name = name->s;
          push(g);
          break;
        }
        case 'q':
          memo_[u8()] = top(at);
          break;  // BINPUT
        case 'r':
          memo_[u32()] = top(at);
          break;  // LONG_BINPUT
        case 0x94:
          memo_[memo_.size()] = top(at);
          break;  // MEMOIZE
        case 'h':
          push(memo_get(u8(), at));
          break;  // BINGET
        case 'j':
          push(memo_get(u32(), at));
          break;  // LONG_BINGET
        case '(':
          marks_.push_back(stack_.size());
          break;  // MARK
        case 't':
          push(collect(PyVal::Kind::kTuple, pop_mark(at)));
          break;  // TUPLE
        case ')':
          push(make_val(PyVal::Kind::kTuple));
          break;  // EMPTY_TUPLE
        case 0x85:
        case 0x86:
        case 0x87: {  // TUPLE1..3
          const size_t k = op - 0x84u;
          if (stack_.size() < k + base()) fail(at, "stack underflow");
          push(collect(PyVal::Kind::kTuple, stack_.size() - k));
          break;
        }
        case ']':
          push(make_val(PyVal::Kind::kList));
          break;     // EMPTY_LIST
        case 'a': {  // APPEND
          PyPtr v = pop(at);
          list_at(at)->items.push_back(v);
          break;
        }
        case 'e': {  // APPENDS
          const size_t m = pop_mark(at);
          PyPtr items = collect(PyVal::Kind::kList, m);
          PyPtr l = list_at(at);
          l->items.insert(l->items.end(), items->items.begin(), items->items.end());
          break;
        }
        case '}':
          push(make_val(PyVal::Kind::kDict));
          break;     // EMPTY_DICT
        case 's': {  // SETITEM
          PyPtr v = pop(at), k = pop(at);
          PyPtr d = dict_at(at);
          d->items.push_back(k);
          d->items.push_back(v);
          break;
        }
        case 'u': {  // SETITEMS
          const size_t m = pop_mark(at);
          PyPtr kv = collect(PyVal::Kind::kList, m);
          if (kv->items.size() % 2 != 0) fail(at, "SETITEMS with an odd number of items");
          PyPtr d = dict_at(at);
          d->items.insert(d->items.end(), kv->items.begin(), kv->items.end());
          break;
        }
        case 'N':
          push(make_val(PyVal::Kind::kNone));
          break;  // NONE
        case 0x88:
        case 0x89: {  // NEWTRUE, NEWFALSE
          auto b = make_val(PyVal::Kind::kBool);
          b->i = op == 0x88;
          push(b);
          break;
        }
        case 'J':
          push_int(static_cast<int32_t>(u32()));
          break;  // BININT
        case 'K':
          push_int(u8());
          break;  // BININT1
        case 'M':
          push_int(u16());
          break;      // BININT2
        case 0x8a: {  // LONG1
          const size_t k = u8();
          const uint8_t* b = bytes(k);
          if (k > 8) {  // e.g. the legacy format's magic number; kept as bytes
            auto v = make_val(PyVal::Kind::kBigInt);
            v->s.assign(reinterpret_cast<const char*>(b), k);
            push(v);
            break;
          }
          uint64_t v = 0;
          for (size_t j = 0; j < k; ++j) v |= uint64_t{b[j]} << (8 * j);
          if (k > 0 && k < 8 && (b[k - 1] & 0x80)) v |= ~uint64_t{0} << (8 * k);  // sign-extend
          push_int(static_cast<int64_t>(v));
          break;
        }
        case 'G': {  // BINFLOAT, big-endian
          const uint8_t* b = bytes(8);
          uint64_t bits = 0;
          for (int j = 0; j < 8; ++j) bits = (bits << 8) | b[j];
          auto v = make_val(PyVal::Kind::kFloat);
          std::memcpy(&v->f, &bits, 8);
          push(v);
          break;
        }
        case 'X':
          push_str(u32());
          break;  // BINUNICODE
        case 0x8c:
          push_str(u8());
          break;     // SHORT_BINUNICODE
        case 'Q': {  // BINPERSID
          auto v = make_val(PyVal::Kind::kPersId);
          v->items.push_back(pop(at));
          push(v);
          break;
        }
        case 'R': {  // REDUCE
          PyPtr args = pop(at), callable = pop(at);
          auto v = make_val(PyVal::Kind::kObject);
          v->items = {callable, args};
          push(v);
          break;
        }
        case 'b':
          pop(at);
          top(at);
          break;  // BUILD: the state is dropped
        default: {
          char hex[8];
          std::snprintf(hex, sizeof(hex), "0x%02x", op);
          fail(at, std::string("unsupported pickle opcode ") + hex);
        }
      }
    }
  }

 private:
  [[noreturn]] void fail(size_t at, const std::string& what) const {
    throw Error(label_ + ": pickle byte " + std::to_string(at) + ": " + what);
  }
  const uint8_t* bytes(size_t k) {
    if (k > n_ - pos_) fail(pos_, "pickle ends early (truncated)");
    const uint8_t* b = p_ + pos_;
    pos_ += k;
    return b;
  }
  uint8_t u8() { return *bytes(1); }
  uint32_t u16() {
    const uint8_t* b = bytes(2);
    return b[0] | (uint32_t{b[1]} << 8);
  }
  uint32_t u32() {
    const uint8_t* b = bytes(4);
    return b[0] | (uint32_t{b[1]} << 8) | (uint32_t{b[2]} << 16) | (uint32_t{b[3]} << 24);
  }
  std::string line() {
    const size_t start = pos_;
    while (pos_ < n_ && p_[pos_] != '\n') ++pos_;
    if (pos_ >= n_) fail(start, "unterminated GLOBAL name");
    std::string s(reinterpret_cast<const char*>(p_ + start), pos_ - start);
    ++pos_;
    return s;
  }
  size_t base() const { return marks_.empty() ? 0 : marks_.back(); }
  void push(PyPtr v) { stack_.push_back(std::move(v)); }
  void push_int(int64_t i) {
    auto v = make_val(PyVal::Kind::kInt);
    v->i = i;
    push(v);
  }
  void push_str(size_t len) {
    const uint8_t* b = bytes(len);
    auto v = make_val(PyVal::Kind::kStr);
    v->s.assign(reinterpret_cast<const char*>(b), len);
    push(v);
  }
  PyPtr pop(size_t at) {
    if (stack_.size() <= base()) fail(at, "stack underflow");
    PyPtr v = std::move(stack_.back());
    stack_.pop_back();
    return v;
  }
  PyPtr top(size_t at) {
    if (stack_.size() <= base()) fail(at, "stack underflow");
    return stack_.back();
  }
  size_t pop_mark(size_t at) {
    if (marks_.empty()) fail(at, "no MARK on the stack");
    const size_t m = marks_.back();
    marks_.pop_back();
    return m;
  }
  // the stack from index m on, as one tuple or list, removed from the stack
  PyPtr collect(PyVal::Kind kind, size_t m) {
    auto v = make_val(kind);
    v->items.assign(stack_.begin() + static_cast<std::ptrdiff_t>(m), stack_.end());
    stack_.resize(m);
    return v;
  }
  PyPtr list_at(size_t at) {
    PyPtr l = top(at);
    if (l->kind != PyVal::Kind::kList) fail(at, std::string("append to a ") + kind_name(l->kind));
    return l;
  }
  PyPtr dict_at(size_t at) {
    PyPtr d = top(at);
    if (d->kind != PyVal::Kind::kDict) fail(at, std::string("set item of a ") + kind_name(d->kind));
    return d;
  }
  PyPtr memo_get(uint32_t key, size_t at) const {
    const auto it = memo_.find(key);
    if (it == memo_.end()) fail(at, "memo key " + std::to_string(key) + " not defined");
    return it->second;
  }

  const uint8_t* p_;
  size_t n_;
  size_t pos_ = 0;
  std::string label_;
  std::vector<PyPtr> stack_;
  std::vector<size_t> marks_;
  std::map<uint32_t, PyPtr> memo_;
};

// out.size() little-endian values of elem bytes each (8: float64; 4: float32,
// widened exactly) from src
void read_values(const uint8_t* src, size_t elem, std::vector<double>& out) {
  if (elem == 8) {
    std::memcpy(out.data(), src, 8 * out.size());
    return;
  }
  for (size_t i = 0; i < out.size(); ++i) {
    float f;
    std::memcpy(&f, src + 4 * i, 4);
    out[i] = f;
  }
}

// what _rebuild_tensor_v2's arguments say about one tensor
struct TensorRef {
  std::string storage_type;  // e.g. "DoubleStorage"
  std::string key;           // storage entry name under data/
  int64_t numel = 0;         // storage elements
  int64_t offset = 0;
  std::vector<int64_t> size, stride;
};

std::vector<int64_t> int_tuple(const PyPtr& v, const std::string& what, const std::string& label) {
  if (v->kind != PyVal::Kind::kTuple)
    throw Error(label + ": tensor " + what + " is a " + kind_name(v->kind) + ", expected a tuple");
  std::vector<int64_t> out;
  for (const PyPtr& x : v->items) {
    if (x->kind != PyVal::Kind::kInt)
      throw Error(label + ": tensor " + what + " holds a " + kind_name(x->kind));
    out.push_back(x->i);
  }
  return out;
}

// the tensor a pickle value describes; throws unless it is one
TensorRef tensor_from_value(const PyPtr& v, const std::string& label) {
  // torch._utils._rebuild_tensor_v2(storage, offset, size, stride, requires_grad, hooks[,
  // metadata])
  const bool is_tensor =
      v->kind == PyVal::Kind::kObject && v->items[0]->kind == PyVal::Kind::kGlobal &&
      v->items[0]->s == "torch._utils" && v->items[0]->name == "_rebuild_tensor_v2";
  if (!is_tensor) {
    std::string found = kind_name(v->kind);
    if (v->kind == PyVal::Kind::kObject && v->items[0]->kind == PyVal::Kind::kGlobal) {
      found = v->items[0]->s + "." + v->items[0]->name + "(...)";
    }
    throw Error(label + ": expected one tensor (torch._utils._rebuild_tensor_v2), found " + found);
  }
  const PyPtr& args = v->items[1];
  if (args->kind != PyVal::Kind::kTuple || args->items.size() < 4) {
    throw Error(label + ": _rebuild_tensor_v2 called with too few arguments");
  }
  const PyPtr& pers = args->items[0];
  if (pers->kind != PyVal::Kind::kPersId || pers->items[0]->kind != PyVal::Kind::kTuple) {
    throw Error(label + ": tensor storage is not a persistent id");
  }
  // ('storage', torch.XStorage, key, location, numel)
  const std::vector<PyPtr>& pid = pers->items[0]->items;
  if (pid.size() < 5 || pid[0]->kind != PyVal::Kind::kStr || pid[0]->s != "storage" ||
      pid[1]->kind != PyVal::Kind::kGlobal || pid[2]->kind != PyVal::Kind::kStr ||
      pid[4]->kind != PyVal::Kind::kInt) {
    throw Error(
        label +
        ": unrecognised storage persistent id (expected ('storage', type, key, location, numel))");
  }
  TensorRef t;
  t.storage_type = pid[1]->s + "." + pid[1]->name;
  t.key = pid[2]->s;
  t.numel = pid[4]->i;
  if (args->items[1]->kind != PyVal::Kind::kInt)
    throw Error(label + ": tensor storage offset is not an int");
  t.offset = args->items[1]->i;
  t.size = int_tuple(args->items[2], "size", label);
  t.stride = int_tuple(args->items[3], "stride", label);
  return t;
}

TensorRef parse_tensor_pickle(const std::vector<uint8_t>& pkl, const std::string& label) {
  PickleReader reader(pkl.data(), pkl.size(), label);
  return tensor_from_value(reader.load(), label);
}

// ---- experiment.json (ContactNets) ------------------------------------------------

struct Experiment {
  double length_unit = 0;  // metres per BHW
  TossMeta meta;
};

double json_number(const nlohmann::json& j, const char* key, const std::string& file, bool required,
                   double fallback) {
  const auto it = j.find(key);
  if (it == j.end()) {
    if (required) throw Error(file + ": missing \"" + key + "\"");
    return fallback;
  }
  if (!it->is_number()) throw Error(file + ": \"" + key + "\" is not a number");
  const double v = it->get<double>();
  if (!std::isfinite(v)) throw Error(file + ": \"" + key + "\" is not finite");
  return v;
}

Experiment read_experiment(const fs::path& file) {
  const std::string name = file.string();
  nlohmann::json j;
  {
    std::ifstream in(file);
    if (!in) throw Error(name + ": cannot open");
    try {
      j = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      throw Error(name + ": invalid JSON: " + e.what());
    }
  }
  if (!j.is_object()) throw Error(name + ": expected a JSON object");
  Experiment ex;
  const double g = json_number(j, "g", name, true, 0);
  if (!(g > 0)) throw Error(name + ": \"g\" is " + fmt(g) + ", expected > 0 (BHW/s^2)");
  const double L = TossMeta{}.gravity / g;  // metres per block half-width
  ex.length_unit = L;
  TossMeta& m = ex.meta;
  m.dt = json_number(j, "dt", name, true, 0);
  if (!(m.dt > 0)) throw Error(name + ": \"dt\" is " + fmt(m.dt) + ", expected > 0");
  m.mass = json_number(j, "mass", name, false, m.mass);
  if (!(m.mass > 0)) throw Error(name + ": \"mass\" is " + fmt(m.mass) + ", expected > 0");
  const auto in = j.find("inertia");
  if (in != j.end()) {
    // a scalar (isotropic) or three principal moments, in kg BHW^2
    std::vector<double> I;
    if (in->is_number()) {
      I.assign(3, in->get<double>());
    } else if (in->is_array() && in->size() == 3 &&
               std::all_of(in->begin(), in->end(),
                           [](const nlohmann::json& x) { return x.is_number(); })) {
      for (const auto& x : *in) I.push_back(x.get<double>());
    } else {
      throw Error(name + ": \"inertia\" must be a number or three numbers");
    }
    for (int a = 0; a < 3; ++a) {
      if (!(I[a] > 0) || !std::isfinite(I[a]))
        throw Error(name + ": \"inertia\" " + fmt(I[a]) + " is not positive");
      m.inertia[a] = I[a] * L * L;
    }
  }
  m.gravity = g * L;  // 9.81 by construction of L
  m.half_width = L;   // vertices are (+-1, +-1, +-1) BHW
  m.mu = json_number(j, "mu", name, false, m.mu);
  m.restitution = json_number(j, "restitution", name, false, m.restitution);
  return ex;
}

fs::path find_experiment(const fs::path& dir, size_t pt_files) {
  const fs::path here = dir / "experiment.json";
  const fs::path params = (dir / ".." / "params_processed" / "experiment.json").lexically_normal();
  if (fs::is_regular_file(here)) return here;
  if (fs::is_regular_file(params)) return params;
  throw Error(
      dir.string() + ": experiment.json not found (looked for " + here.string() + " and " +
      params.string() + "); found " + std::to_string(pt_files) +
      " .pt file(s), the first a PyTorch legacy file (ContactNets tosses), which are in block "
      "half-widths and need its \"g\" to be converted to metres");
}

// ---- (a) ContactNets legacy .pt ------------------------------------------------------

// magic number 0x1950a86a20f9469cfc6c, pickled as LONG1 little-endian
constexpr uint8_t kLegacyMagic[10] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};

// where the magic number ends (the first pickle opens with it), or 0 when absent
size_t legacy_magic_end(const std::vector<uint8_t>& b) {
  const size_t window = std::min<size_t>(b.size(), 32);
  const auto m = std::search(b.begin(), b.begin() + static_cast<std::ptrdiff_t>(window),
                             std::begin(kLegacyMagic), std::end(kLegacyMagic));
  if (m == b.begin() + static_cast<std::ptrdiff_t>(window)) return 0;
  return static_cast<size_t>(m - b.begin()) + sizeof(kLegacyMagic);
}

// The bytes of a file that is neither PyTorch format, for an error message.
std::string first_bytes(const std::vector<uint8_t>& b) {
  std::string s;
  const size_t n = std::min<size_t>(b.size(), 8);
  for (size_t i = 0; i < n; ++i) {
    char h[4];
    std::snprintf(h, sizeof h, "%02x", b[i]);
    s += (i ? " " : "") + std::string(h);
  }
  return std::to_string(b.size()) + " bytes" + (n ? ", opening " + s : std::string());
}

// torch's own header (protocol version, system info, tensor, storage keys), as
// opposed to another writer's few bytes before the count: any of its names
bool has_torch_header(const std::vector<uint8_t>& b, size_t data_at) {
  const std::string head(reinterpret_cast<const char*>(b.data()), std::min(data_at, b.size()));
  for (const char* mark :
       {"protocol_version", "little_endian", "type_sizes", "_rebuild_tensor", "torch._utils"})
    if (head.find(mark) != std::string::npos) return true;
  return head.find(std::string("M\xe9\x03.", 4)) != std::string::npos;  // BININT2 1001, STOP
}

// the value of key `k` in a parsed dict, or null
PyPtr dict_get(const PyPtr& d, const std::string& k) {
  if (!d || d->kind != PyVal::Kind::kDict) return nullptr;
  for (size_t i = 0; i + 1 < d->items.size(); i += 2)
    if (d->items[i]->kind == PyVal::Kind::kStr && d->items[i]->s == k) return d->items[i + 1];
  return nullptr;
}

const char* const kCnColumn[kContactNetsCols] = {"p_x", "p_y", "p_z", "q_w", "q_x", "q_y", "q_z",
                                                 "v_x", "v_y", "v_z", "w_x", "w_y", "w_z", "u_0",
                                                 "u_1", "u_2", "u_3", "u_4", "u_5"};

// The values of a (T, 19) ContactNets tensor in its own units, before conversion:
// every value finite, the inputs 0, quaternions unit within kLegacyQuatNormTol, and
// each time step consistent with the velocities and dt (see toss_data.h).
void check_contactnets_values(const double* x, size_t T, double dt, const std::string& label) {
  using toss_detail::kLegacyQuatNormTol;
  using toss_detail::kLegacyStepTol;
  using toss_detail::kLegacyTurnTol;
  const auto at = [&](size_t k, int c) {
    return label + ": row " + std::to_string(k) + ", column " + std::to_string(c) + " (" +
           kCnColumn[c] + ")";
  };
  for (size_t k = 0; k < T; ++k) {
    const double* r = x + k * kContactNetsCols;
    for (int c = 0; c < kContactNetsCols; ++c)
      if (!std::isfinite(r[c])) throw Error(at(k, c) + ": non-finite value " + fmt(r[c]));
    for (int c = 13; c < kContactNetsCols; ++c)
      if (r[c] != 0)
        throw Error(
            at(k, c) + ": input " + fmt(r[c]) +
            ", expected 0 (tosses have no control input; a value here is a corrupt file or data "
            "this loader does not model)");
    double q[4] = {r[3], r[4], r[5], r[6]};
    toss_detail::check_quaternion(q, k, label, kLegacyQuatNormTol);
  }
  char tol[64];
  // row k's velocities against the step from row k-1 to k; row 0's, which
  // ContactNets' processing copies from row 1, against the step from row 0 to 1
  for (size_t k = 0; k < T; ++k) {
    const size_t from = k == 0 ? 0 : k - 1, to = k == 0 ? 1 : k;
    const double* a = x + from * kContactNetsCols;
    const double* b = x + to * kContactNetsCols;
    const double* r = x + k * kContactNetsCols;  // the velocities
    // the position step against dt v_k
    double e2 = 0;
    for (int i = 0; i < 3; ++i) {
      const double e = (b[i] - a[i]) - dt * r[7 + i];
      e2 += e * e;
    }
    const double e = std::sqrt(e2);
    if (!(e <= kLegacyStepTol)) {
      std::snprintf(tol, sizeof tol, "%g", kLegacyStepTol);
      throw Error(
          label + ": row " + std::to_string(k) +
          ", columns 0-2 and 7-9 (p, v): the position moved (" + fmt(b[0] - a[0]) + ", " +
          fmt(b[1] - a[1]) + ", " + fmt(b[2] - a[2]) + ") from row " + std::to_string(from) +
          " to " + std::to_string(to) + ", but dt v = (" + fmt(dt * r[7]) + ", " + fmt(dt * r[8]) +
          ", " + fmt(dt * r[9]) + ") with dt " + fmt(dt) + " s: off by " + fmt(e) +
          " block half-widths, more than " + tol +
          " (a corrupt position or velocity, or a time step that is not the data set's dt)");
    }
    // the rotation q_from* q_to (body frame) against dt ω_k
    const double w0 = a[3], x0 = -a[4], y0 = -a[5], z0 = -a[6];  // conjugate of q_from
    const double w1 = b[3], x1 = b[4], y1 = b[5], z1 = b[6];
    double rw = w0 * w1 - x0 * x1 - y0 * y1 - z0 * z1;
    double rv[3] = {w0 * x1 + x0 * w1 + y0 * z1 - z0 * y1, w0 * y1 - x0 * z1 + y0 * w1 + z0 * x1,
                    w0 * z1 + x0 * y1 - y0 * x1 + z0 * w1};
    if (rw < 0) {  // q and -q are one rotation: the short way
      rw = -rw;
      for (double& v : rv) v = -v;
    }
    const double s = std::sqrt(rv[0] * rv[0] + rv[1] * rv[1] + rv[2] * rv[2]);
    const double angle = 2 * std::atan2(s, rw);
    double d2 = 0;
    double turn[3];
    for (int i = 0; i < 3; ++i) {
      turn[i] = s > 0 ? rv[i] / s * angle : 2 * rv[i];
      const double d = turn[i] - dt * r[10 + i];
      d2 += d * d;
    }
    const double d = std::sqrt(d2);
    if (!(d <= kLegacyTurnTol)) {
      std::snprintf(tol, sizeof tol, "%g", kLegacyTurnTol);
      throw Error(label + ": row " + std::to_string(k) +
                  ", columns 3-6 and 10-12 (q, w): the body turned (" + fmt(turn[0]) + ", " +
                  fmt(turn[1]) + ", " + fmt(turn[2]) + ") rad from row " + std::to_string(from) +
                  " to " + std::to_string(to) + ", but dt w = (" + fmt(dt * r[10]) + ", " +
                  fmt(dt * r[11]) + ", " + fmt(dt * r[12]) + ") with dt " + fmt(dt) +
                  " s: off by " + fmt(d) + " rad, more than " + tol +
                  " (a corrupt orientation or angular velocity, or a time step that is not the "
                  "data set's dt)");
    }
  }
}

Toss read_contactnets_file(const fs::path& file, const Experiment& ex) {
  const std::string label = file.string();
  const std::vector<uint8_t> b = read_file_bytes(label);
  if (is_zip(b)) {
    throw Error(label +
                ": PyTorch zip serialization, but the folder's first file is legacy (ContactNets); "
                "mixed formats in one folder");
  }
  // the magic number opens the first pickle
  const size_t header = legacy_magic_end(b);
  if (header == 0) {
    throw Error(label +
                ": not a PyTorch legacy file (magic number 0x1950a86a20f9469cfc6c missing; " +
                first_bytes(b) + ")");
  }
  // the pickles end with STOP, then int64 N, then exactly N float64 (or float32:
  // tried only when no float64 tail fits): the earliest offset where that holds
  size_t count_at = 0;
  int64_t n = 0;
  size_t elem = 8;
  for (const size_t e : {size_t(8), size_t(4)}) {
    for (size_t off = header; off + 8 <= b.size(); ++off) {
      if ((b.size() - off - 8) % e != 0 || b[off - 1] != '.') continue;
      const int64_t c = get_i64(&b[off]);
      if (c > 0 && static_cast<uint64_t>(c) == (b.size() - off - 8) / e) {
        count_at = off;
        n = c;
        break;
      }
    }
    if (n != 0) {
      elem = e;
      break;
    }
  }
  if (n == 0) {
    throw Error(label + ": truncated or corrupt (" + std::to_string(b.size()) +
                " bytes): no int64 element count followed by exactly that many float64 (or float32) values");
  }
  if (n % kContactNetsCols != 0) {
    throw Error(label + ": element count " + std::to_string(n) + " is not a multiple of " +
                std::to_string(kContactNetsCols) + " (expected a (1, T, 19) tensor)");
  }
  // the pickles before the count: magic, protocol, system info, the tensor, the
  // storage keys. torch's header must parse and describe what the tail holds; a
  // header without torch's names (another writer's few bytes) leaves the tail alone
  // to be trusted
  std::optional<TensorRef> t;
  if (has_torch_header(b, count_at)) {
    try {
      PickleReader reader(b.data(), count_at, label);
      reader.load();  // the magic number
      const PyPtr version = reader.load();
      if (version->kind != PyVal::Kind::kInt || version->i != 1001)
        throw Error(label + ": protocol version is not 1001");
      const PyPtr info = reader.load();
      const PyPtr little = dict_get(info, "little_endian");
      if (info->kind != PyVal::Kind::kDict ||
          (little && (little->kind != PyVal::Kind::kBool || little->i != 1)))
        throw Error(label +
                    ": system info is not a dict with little_endian True (only little-endian is "
                    "supported)");
      t = tensor_from_value(reader.load(), label);
      const PyPtr keys = reader.load();
      if (keys->kind != PyVal::Kind::kList || keys->items.size() != 1 ||
          keys->items[0]->kind != PyVal::Kind::kStr || keys->items[0]->s != t->key)
        throw Error(label + ": the storage keys are not the one key '" + t->key +
                    "' of the tensor");
      if (reader.pos() != count_at)
        throw Error(label + ": " + std::to_string(count_at - reader.pos()) +
                    " bytes between the header and the element count");
    } catch (const Error& e) {
      throw Error(std::string(e.what()) +
                  " (torch's header of a legacy file: the file is corrupt)");
    }
    if (t->storage_type != "torch.DoubleStorage" && t->storage_type != "torch.FloatStorage") {
      throw Error(label + ": tensor dtype is " + t->storage_type +
                  ", expected torch.DoubleStorage (float64) or torch.FloatStorage (float32)");
    }
    if ((t->storage_type == "torch.FloatStorage") != (elem == 4)) {
      throw Error(label + ": torch's header says " + t->storage_type + " but the data are " +
                  std::to_string(n) + (elem == 4 ? " float32" : " float64") + " values (the file is corrupt)");
    }
    const int64_t T = n / kContactNetsCols;
    const bool shape_ok = t->size == std::vector<int64_t>{1, T, kContactNetsCols} ||
                          t->size == std::vector<int64_t>{T, kContactNetsCols};
    const bool stride_ok =
        t->stride == std::vector<int64_t>{T * kContactNetsCols, kContactNetsCols, 1} ||
        t->stride == std::vector<int64_t>{kContactNetsCols, 1} || T == 1;
    if (!shape_ok || !stride_ok || t->offset != 0 || t->numel != n) {
      throw Error(label + ": tensor of size " + shape_string(t->size) + ", stride " +
                  shape_string(t->stride) + ", storage offset " + std::to_string(t->offset) +
                  " and " + std::to_string(t->numel) + " storage elements does not match the " +
                  std::to_string(n) + " stored values (expected a contiguous (1, T, 19) tensor)");
    }
  } else {
    // a dtype other than float64 or float32 would not pass the length check above, but name it
    const std::string head(reinterpret_cast<const char*>(b.data()), count_at);
    const size_t st = head.find("torch\n");
    if (st != std::string::npos) {
      const size_t e = head.find('\n', st + 6);
      const std::string type = head.substr(st + 6, e == std::string::npos ? 0 : e - st - 6);
      if (ends_with(type, "Storage") && type != "DoubleStorage" && type != "FloatStorage") {
        throw Error(label + ": tensor dtype is torch." + type +
                    ", expected torch.DoubleStorage (float64) or torch.FloatStorage (float32)");
      }
      if (ends_with(type, "Storage") && (type == "FloatStorage") != (elem == 4)) {
        throw Error(label + ": the file names torch." + type + " but holds " + std::to_string(n) +
                    (elem == 4 ? " float32" : " float64") + " values (the file is corrupt)");
      }
    }
  }
  const size_t T = static_cast<size_t>(n / kContactNetsCols);
  if (T < 2)
    throw Error(label + ": toss has " + std::to_string(T) + " row(s), expected at least 2");
  std::vector<double> x(static_cast<size_t>(n));
  read_values(&b[count_at + 8], elem, x);
  check_contactnets_values(x.data(), T, ex.meta.dt, label);
  const double L = ex.length_unit;
  Toss toss;
  toss.name = file.stem().string();
  toss.states.resize(T);
  for (size_t k = 0; k < T; ++k) {
    const double* row = x.data() + k * kContactNetsCols;
    StateRow& r = toss.states[k];
    // p [BHW] | q wxyz | v [BHW/s] | w body: the in-memory order already
    for (int c = 0; c < 13; ++c) r[c] = row[c];
    for (int c : {0, 1, 2, 7, 8, 9}) r[c] *= L;
  }
  check_toss(toss.states, label);
  return toss;
}

// ---- (b) CCN zip .pt ------------------------------------------------------------------

// any width: the cube's (T, 13) here, the multibody (T, 13 + 2 nj) in io/system_tosses.cc
toss_detail::PtMatrix read_pt_zip_matrix_impl(const std::vector<uint8_t>& b,
                                              const std::string& label, int64_t cols) {
  std::vector<ZipEntry> entries = decode_zip(b, label);
  const ZipEntry* pkl = nullptr;
  for (const ZipEntry& e : entries) {
    if (e.name == "data.pkl" || ends_with(e.name, "/data.pkl")) {
      if (pkl)
        throw Error(label + ": more than one data.pkl ('" + pkl->name + "', '" + e.name + "')");
      pkl = &e;
    }
  }
  if (!pkl) throw Error(label + ": zip archive without data.pkl; not a PyTorch file");
  const std::string prefix = pkl->name.substr(0, pkl->name.size() - 8);  // "archive/"
  const auto entry = [&](const std::string& name) -> const ZipEntry* {
    for (const ZipEntry& e : entries)
      if (e.name == name) return &e;
    return nullptr;
  };
  if (const ZipEntry* bo = entry(prefix + "byteorder")) {
    const std::string order(bo->data.begin(), bo->data.end());
    if (order != "little")
      throw Error(label + ": byteorder '" + order + "', only little-endian is supported");
  }
  const TensorRef t = parse_tensor_pickle(pkl->data, label + ": " + pkl->name);
  if (t.storage_type != "torch.DoubleStorage" && t.storage_type != "torch.FloatStorage") {
    throw Error(label + ": tensor dtype is " + t.storage_type +
                ", expected torch.DoubleStorage (float64) or torch.FloatStorage (float32)");
  }
  const size_t elem = t.storage_type == "torch.FloatStorage" ? 4 : 8;
  const char* elem_name = elem == 4 ? " float32" : " float64";
  if (t.size.size() != 2 || (cols > 0 && t.size[1] != cols) || t.size[1] < 1) {
    throw Error(label + ": tensor size " + shape_string(t.size) + ", expected (T, " +
                (cols > 0 ? std::to_string(cols) : std::string("W")) + ")");
  }
  const int64_t T = t.size[0];
  const int64_t W = t.size[1];
  if (T < 2)
    throw Error(label + ": toss has " + std::to_string(T) + " row(s), expected at least 2");
  if (t.stride != std::vector<int64_t>{W, 1}) {
    throw Error(label + ": tensor stride " + shape_string(t.stride) + ", expected contiguous (" +
                std::to_string(W) + ", 1)");
  }
  const ZipEntry* st = entry(prefix + "data/" + t.key);
  if (!st) throw Error(label + ": storage entry '" + prefix + "data/" + t.key + "' missing");
  const int64_t have = static_cast<int64_t>(st->data.size() / elem);
  if (st->data.size() % elem != 0 || have != t.numel) {
    throw Error(label + ": storage '" + st->name + "' is " + std::to_string(st->data.size()) +
                " bytes, expected " + std::to_string(t.numel) + elem_name);
  }
  if (t.offset < 0 || t.offset > have || T > (have - t.offset) / W) {
    throw Error(label + ": storage of " + std::to_string(have) + " elements too small for offset " +
                std::to_string(t.offset) + " and size " + shape_string(t.size));
  }
  toss_detail::PtMatrix m;
  m.rows = T;
  m.cols = W;
  m.values.resize(static_cast<size_t>(T * W));
  read_values(st->data.data() + elem * size_t(t.offset), elem, m.values);
  return m;
}

Toss read_ccn_file(const fs::path& file) {
  const std::string label = file.string();
  const std::vector<uint8_t> b = read_file_bytes(label);
  if (!is_zip(b)) {
    if (legacy_magic_end(b) == 0)
      throw Error(label + ": not a PyTorch zip archive (" + first_bytes(b) +
                  "), as the folder's first file is (CCN tosses)");
    throw Error(
        label +
        ": not a zip archive, but the folder's first file is PyTorch zip serialization (CCN); "
        "mixed formats in one folder");
  }
  const toss_detail::PtMatrix m = read_pt_zip_matrix_impl(b, label, kCcnCols);
  Toss toss;
  toss.name = file.stem().string();
  toss.states.resize(static_cast<size_t>(m.rows));
  for (int64_t k = 0; k < m.rows; ++k) {
    const double* c = m.values.data() + kCcnCols * k;
    // quat wxyz | p | w body | v world  ->  p | quat | v | w
    toss.states[static_cast<size_t>(k)] = {c[4],  c[5],  c[6],  c[0], c[1], c[2], c[3],
                                           c[10], c[11], c[12], c[7], c[8], c[9]};
  }
  check_toss(toss.states, label);
  return toss;
}

// ---- (c) impulse .npz --------------------------------------------------------------

void check_meta(const TossMeta& m, const std::string& label) {
  const double v[9] = {m.dt,      m.mass,       m.inertia[0], m.inertia[1], m.inertia[2],
                       m.gravity, m.half_width, m.mu,         m.restitution};
  static const char* names[9] = {"dt",      "mass",       "Ixx", "Iyy",        "Izz",
                                 "gravity", "half_width", "mu",  "restitution"};
  for (int i = 0; i < 9; ++i) {
    if (!std::isfinite(v[i])) throw Error(label + ": meta " + names[i] + " is not finite");
    if (i != 5 && v[i] < 0)
      throw Error(label + ": meta " + names[i] + " is " + fmt(v[i]) + ", expected >= 0");
  }
  if (!(m.dt > 0)) throw Error(label + ": meta dt is " + fmt(m.dt) + ", expected > 0");
}

TossSet read_impulse_file(const std::string& path, double dt) {
  const NpzArchive a = read_npz(path);
  const NpyArray& s = npz_get(a, "states", path);
  const NpyArray& o = npz_get(a, "offsets", path);
  const NpyArray& mt = npz_get(a, "meta", path);
  if (s.dtype != DType::kFloat32) expect_dtype(s, DType::kFloat64, path + ": states");  // float32 widened
  if (s.shape.size() != 2 || s.shape[1] != 13) {
    throw Error(path + ": states has shape " + shape_string(s.shape) + ", expected (R, 13)");
  }
  expect_dtype(mt, DType::kFloat64, path + ": meta");
  if (mt.shape != std::vector<int64_t>{9}) {
    throw Error(path + ": meta has shape " + shape_string(mt.shape) + ", expected (9,)");
  }
  const std::vector<int64_t> off = toss_detail::read_offsets(o, s.shape[0], path);
  const std::vector<double> m = mt.as<double>();
  const std::vector<double> x = s.as<double>();
  TossSet set;
  set.format = "impulse";
  set.meta.dt = m[0];
  set.meta.mass = m[1];
  set.meta.inertia = {m[2], m[3], m[4]};
  set.meta.gravity = m[5];
  set.meta.half_width = m[6];
  set.meta.mu = m[7];
  set.meta.restitution = m[8];
  if (dt > 0) set.meta.dt = dt;
  check_meta(set.meta, path);
  for (size_t j = 0; j + 1 < off.size(); ++j) {
    Toss t;
    t.name = std::to_string(j);
    for (int64_t r = off[j]; r < off[j + 1]; ++r) {
      StateRow row;
      std::copy_n(x.begin() + 13 * r, 13, row.begin());
      t.states.push_back(row);
    }
    check_toss(t.states, path + ": toss " + std::to_string(j));
    set.tosses.push_back(std::move(t));
  }
  return set;
}

// ---- folders ---------------------------------------------------------------------

TossSet read_pt_folder(const fs::path& dir, const std::vector<fs::path>& files, double dt) {
  const std::vector<uint8_t> first = read_file_bytes(files[0].string());
  TossSet set;
  if (is_zip(first)) {
    set.format = "ccn";
    set.meta.dt = dt > 0 ? dt : kCcnDt;
    for (const fs::path& f : files) set.tosses.push_back(read_ccn_file(f));
  } else if (legacy_magic_end(first) != 0) {
    set.format = "contactnets";
    Experiment ex = read_experiment(find_experiment(dir, files.size()));
    if (dt > 0) ex.meta.dt = dt;  // the caller's: the steps are checked against it too
    set.meta = ex.meta;
    for (const fs::path& f : files) set.tosses.push_back(read_contactnets_file(f, ex));
  } else {
    // neither format: say what was expected, and what the first file is, before
    // asking for a ContactNets experiment.json it would not help
    throw Error(
        dir.string() + ": " + std::to_string(files.size()) + " .pt file(s), but the first, " +
        files[0].string() +
        ", is neither PyTorch format (no zip header PK\\3\\4, no legacy magic number "
        "0x1950a86a20f9469cfc6c; " +
        first_bytes(first) +
        "); expected ContactNets tosses (PyTorch legacy files of one float64 (1, T, 19) tensor, "
        "with experiment.json) or CCN tosses (PyTorch zip files of one float64 (T, 13) tensor)");
  }
  return set;
}

}  // namespace

// ---- shared with io/system_tosses.cc ------------------------------------------------

namespace toss_detail {

void check_quaternion(double* q, std::size_t row, const std::string& label, double tol) {
  const double n = std::sqrt(q[0] * q[0] + q[1] * q[1] + q[2] * q[2] + q[3] * q[3]);
  if (!(std::abs(n - 1.0) <= tol)) {
    char t[32];
    std::snprintf(t, sizeof t, "%g", tol);
    throw Error(label + ": row " + std::to_string(row) + ": quaternion (" + fmt(q[0]) + ", " +
                fmt(q[1]) + ", " + fmt(q[2]) + ", " + fmt(q[3]) + ") has norm " + fmt(n) +
                ", expected 1 within " + t);
  }
  if (std::abs(n - 1.0) > kQuatNormExact) {
    for (int c = 0; c < 4; ++c) q[c] /= n;
  }
}

std::vector<std::string> list_pt_files(const std::string& dir) {
  std::vector<std::string> out;
  for (const fs::path& p : list_pt_paths(dir)) out.push_back(p.string());
  return out;
}

bool is_zip(const std::vector<uint8_t>& b) {
  return b.size() >= 4 && b[0] == 'P' && b[1] == 'K' && b[2] == 3 && b[3] == 4;
}

PtMatrix read_pt_zip_matrix(const std::vector<uint8_t>& bytes, const std::string& label,
                            int64_t cols) {
  return read_pt_zip_matrix_impl(bytes, label, cols);
}

std::vector<int64_t> read_offsets(const NpyArray& o, int64_t rows, const std::string& path) {
  if (o.dtype != DType::kInt64 && o.dtype != DType::kInt32) {
    throw Error(path + ": offsets has dtype " + dtype_descr(o.dtype) + ", expected <i8");
  }
  if (o.shape.size() != 1 || o.shape[0] < 1) {
    throw Error(path + ": offsets has shape " + shape_string(o.shape) + ", expected (N+1,)");
  }
  const std::vector<int64_t> off = o.as<int64_t>();
  if (off.front() != 0 || off.back() != rows) {
    throw Error(path + ": offsets run from " + std::to_string(off.front()) + " to " +
                std::to_string(off.back()) + ", expected 0 to " + std::to_string(rows) +
                " (the rows of states)");
  }
  for (size_t j = 0; j + 1 < off.size(); ++j) {
    if (off[j + 1] < off[j]) {
      throw Error(path + ": offsets decrease at toss " + std::to_string(j) + " (" +
                  std::to_string(off[j]) + " -> " + std::to_string(off[j + 1]) + ")");
    }
    // off[0] == 0 and no decrease so far: only the upper end can leave states
    if (off[j + 1] > rows) {
      throw Error(path + ": offset " + std::to_string(off[j + 1]) + " of toss " + std::to_string(j) +
                  " is past the " + std::to_string(rows) + " rows of states");
    }
  }
  return off;
}

void check_time_step(double dt, const std::string& path) {
  if (!(dt >= 0) || !std::isfinite(dt))
    throw Error(path + ": the time step given is " + fmt(dt) + ", expected > 0 (or 0: the data's own)");
}

}  // namespace toss_detail

TossSet load_tosses(const std::string& path, double dt) {
  toss_detail::check_time_step(dt, path);
  std::error_code ec;
  const fs::path p(path);
  const fs::file_status status = fs::status(p, ec);
  if (ec || !fs::exists(status)) throw Error(path + ": no such file or folder");
  if (fs::is_regular_file(status)) {
    if (p.extension() == ".npz") return read_impulse_file(path, dt);
    if (p.extension() == ".pt") {
      throw Error(path + ": a single .pt file; pass the folder that holds the tosses (" +
                  p.parent_path().string() + ")");
    }
    throw Error(path + ": unrecognised file; expected a .npz toss file or a folder of .pt tosses");
  }
  if (!fs::is_directory(status)) throw Error(path + ": neither a regular file nor a folder");
  const std::vector<fs::path> pts = list_pt_paths(p);
  const fs::path npz = p / kImpulseFile;
  const bool has_npz = fs::is_regular_file(npz);
  if (!pts.empty() && has_npz) {
    throw Error(path + ": holds both .pt files and " + kImpulseFile + "; pass " + npz.string() +
                " to read the latter");
  }
  if (has_npz) return read_impulse_file(npz.string(), dt);
  if (!pts.empty()) return read_pt_folder(p, pts, dt);
  // the ContactNets repository or its data/ folder: descend to the tosses
  for (const char* sub : {"tosses_processed", "data/tosses_processed"}) {
    const fs::path d = p / sub;
    if (fs::is_directory(d) && !list_pt_paths(d).empty()) return load_tosses(d.string(), dt);
  }
  throw Error(path + ": no .pt files, no " + kImpulseFile +
              " and no tosses_processed/ folder here");
}

void write_tosses(const std::string& path, const TossSet& set) {
  if (fs::path(path).extension() != ".npz")
    throw Error(path + ": toss files are .npz; the name must end in .npz");
  check_meta(set.meta, path);
  std::vector<double> states;
  states.reserve(13 * set.rows());
  std::vector<int64_t> offsets{0};
  for (size_t j = 0; j < set.tosses.size(); ++j) {
    const Toss& t = set.tosses[j];
    const std::string label = path + ": toss " + std::to_string(j) + " ('" + t.name + "')";
    if (t.states.size() < 2) {
      throw Error(label + ": has " + std::to_string(t.states.size()) +
                  " row(s), expected at least 2");
    }
    for (size_t k = 0; k < t.states.size(); ++k) {
      for (int c = 0; c < 13; ++c) {
        if (!std::isfinite(t.states[k][c])) {
          throw Error(label + ": row " + std::to_string(k) + ", column " + std::to_string(c) +
                      ": non-finite value");
        }
      }
      states.insert(states.end(), t.states[k].begin(), t.states[k].end());
    }
    offsets.push_back(offsets.back() + static_cast<int64_t>(t.states.size()));
  }
  const TossMeta& m = set.meta;
  NpzArchive a;
  a["states"] = make_npy({offsets.back(), 13}, states);
  a["offsets"] = make_npy({static_cast<int64_t>(offsets.size())}, offsets);
  a["meta"] =
      make_npy({9}, std::vector<double>{m.dt, m.mass, m.inertia[0], m.inertia[1], m.inertia[2],
                                        m.gravity, m.half_width, m.mu, m.restitution});
  write_npz(path, a);  // temporary file + rename
}

TossSplit split_tosses(int n_tosses, uint64_t seed, std::array<double, 3> fractions,
                       int train_limit) {
  if (n_tosses < 0)
    throw Error("split_tosses: n_tosses is " + std::to_string(n_tosses) + ", expected >= 0");
  if (train_limit < 0)
    throw Error("split_tosses: train_limit is " + std::to_string(train_limit) + ", expected >= 0");
  double sum = 0;
  for (double f : fractions) {
    if (!std::isfinite(f) || f < 0)
      throw Error("split_tosses: fraction " + fmt(f) + " is not a finite value >= 0");
    sum += f;
  }
  if (!(sum > 0)) throw Error("split_tosses: the fractions sum to 0");
  const int n = n_tosses;

  // Fisher-Yates with mt19937_64 and unbiased rejection sampling, spelled out
  // so that every standard library gives the same permutation
  std::vector<int> perm(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) perm[static_cast<size_t>(i)] = i;
  std::mt19937_64 rng(seed);
  for (int i = n - 1; i > 0; --i) {
    const uint64_t bound = static_cast<uint64_t>(i) + 1;
    const uint64_t threshold = (0 - bound) % bound;  // 2^64 mod bound
    uint64_t r;
    do {
      r = rng();
    } while (r < threshold);
    std::swap(perm[static_cast<size_t>(i)], perm[static_cast<size_t>(r % bound)]);
  }

  // sizes: rounded fractions of n for train and valid, the rest to test
  int size[3];
  for (int k = 0; k < 2; ++k) size[k] = static_cast<int>(std::lround(fractions[k] / sum * n));
  size[0] = std::min(size[0], n);
  size[1] = std::min(size[1], n - size[0]);
  size[2] = n - size[0] - size[1];
  if (fractions[2] == 0 && size[2] > 0) {
    // rounding left a remainder: give it to train rather than to an unwanted test set
    size[0] += size[2];
    size[2] = 0;
  }
  // every wanted part of a set of >= 3 gets at least one, taken from the largest
  if (n >= 3) {
    for (int k = 0; k < 3; ++k) {
      if (fractions[k] > 0 && size[k] == 0) {
        int* largest = std::max_element(size, size + 3);
        --*largest;
        ++size[k];
      }
    }
  }

  TossSplit s;
  auto it = perm.begin();
  s.train.assign(it, it + size[0]);
  it += size[0];
  s.valid.assign(it, it + size[1]);
  it += size[1];
  s.test.assign(it, perm.end());
  if (train_limit > 0 && static_cast<size_t>(train_limit) < s.train.size())
    s.train.resize(static_cast<size_t>(train_limit));
  return s;
}

}  // namespace impulse
