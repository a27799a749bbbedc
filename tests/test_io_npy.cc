// Tests for io/: .npy encode/decode, the zip reader/writer and .npz files.
#include <ftw.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cmath>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "solvers/error.h"
#include "io/npy.h"
#include "io/npz.h"
#include "io/files.h"
#include "io/zip.h"
#include "tests/test_util.h"

namespace impulse {
namespace {

// ---- helpers ------------------------------------------------------------------

// Runs f, expects impulse::Error whose message contains every one of parts.
void ExpectError(const std::function<void()>& f, const std::vector<std::string>& parts) {
  try {
    f();
  } catch (const Error& e) {
    const std::string msg = e.what();
    for (const std::string& p : parts) {
      EXPECT_NE(msg.find(p), std::string::npos) << "message \"" << msg << "\" lacks \"" << p << "\"";
    }
    return;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "expected impulse::Error, got another exception: " << e.what();
    return;
  }
  ADD_FAILURE() << "expected impulse::Error, nothing was thrown";
}

// An .npy file with the given header text, padded like np.save, and data bytes.
std::vector<uint8_t> NpyBytes(const std::string& dict, size_t data_bytes, int major = 1) {
  std::string header = dict;
  const size_t prefix = major == 1 ? 10 : 12;
  while ((prefix + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::vector<uint8_t> out = {0x93, 'N', 'U', 'M', 'P', 'Y', static_cast<uint8_t>(major), 0};
  for (size_t i = 0; i < prefix - 8; ++i) out.push_back(static_cast<uint8_t>(header.size() >> (8 * i)));
  out.insert(out.end(), header.begin(), header.end());
  for (size_t i = 0; i < data_bytes; ++i) out.push_back(static_cast<uint8_t>(i * 7));
  return out;
}

std::vector<uint8_t> Bytes(const std::string& s) { return std::vector<uint8_t>(s.begin(), s.end()); }

// A fresh, empty directory for one test, removed with its contents after.
class ScratchDir {
 public:
  explicit ScratchDir(const std::string& tag) {
    path_ = ::testing::TempDir() + "impulse_io_" + tag + "_XXXXXX";
    if (::mkdtemp(&path_[0]) == nullptr) ADD_FAILURE() << "mkdtemp " << path_ << " failed";
  }
  ~ScratchDir() {
    ::nftw(path_.c_str(), [](const char* p, const struct stat*, int, struct FTW*) { return ::remove(p); }, 8,
           FTW_DEPTH | FTW_PHYS);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

void Put16(std::vector<uint8_t>& out, uint64_t v) {
  out.push_back(static_cast<uint8_t>(v));
  out.push_back(static_cast<uint8_t>(v >> 8));
}
void Put32(std::vector<uint8_t>& out, uint64_t v) {
  Put16(out, v & 0xffff);
  Put16(out, v >> 16);
}
void Put64(std::vector<uint8_t>& out, uint64_t v) {
  Put32(out, v & 0xffffffffu);
  Put32(out, v >> 32);
}

std::vector<uint8_t> RawDeflate(const std::vector<uint8_t>& in) {
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  EXPECT_EQ(deflateInit2(&zs, 9, Z_DEFLATED, -15, 8, Z_DEFAULT_STRATEGY), Z_OK);
  std::vector<uint8_t> out(deflateBound(&zs, in.size()));
  zs.next_in = const_cast<Bytef*>(in.data());
  zs.avail_in = static_cast<uInt>(in.size());
  zs.next_out = out.data();
  zs.avail_out = static_cast<uInt>(out.size());
  EXPECT_EQ(deflate(&zs, Z_FINISH), Z_STREAM_END);
  out.resize(zs.total_out);
  deflateEnd(&zs);
  return out;
}

struct TestEntry {
  std::string name;
  std::vector<uint8_t> data;
  int method;  // 0 stored, 8 deflate
};

// A zip archive built independently of io/zip.cc. With zip64, every size and
// offset in the central directory goes through the zip64 extra field and the
// archive ends with a zip64 end record and locator, as Python writes for
// large files.
std::vector<uint8_t> BuildZip(const std::vector<TestEntry>& entries, bool zip64) {
  std::vector<uint8_t> out, central;
  for (const TestEntry& e : entries) {
    const std::vector<uint8_t> stored = e.method == 8 ? RawDeflate(e.data) : e.data;
    const uint32_t crc = static_cast<uint32_t>(crc32(0, e.data.data(), static_cast<uInt>(e.data.size())));
    const uint64_t offset = out.size();
    Put32(out, 0x04034b50);
    Put16(out, zip64 ? 45 : 20);
    Put16(out, 0);
    Put16(out, e.method);
    Put16(out, 0);
    Put16(out, 0x21);
    Put32(out, crc);
    Put32(out, zip64 ? 0xffffffffu : stored.size());
    Put32(out, zip64 ? 0xffffffffu : e.data.size());
    Put16(out, e.name.size());
    Put16(out, zip64 ? 20 : 0);
    out.insert(out.end(), e.name.begin(), e.name.end());
    if (zip64) {
      Put16(out, 1);
      Put16(out, 16);
      Put64(out, e.data.size());
      Put64(out, stored.size());
    }
    out.insert(out.end(), stored.begin(), stored.end());

    Put32(central, 0x02014b50);
    Put16(central, zip64 ? 45 : 20);
    Put16(central, zip64 ? 45 : 20);
    Put16(central, 0);
    Put16(central, e.method);
    Put16(central, 0);
    Put16(central, 0x21);
    Put32(central, crc);
    Put32(central, zip64 ? 0xffffffffu : stored.size());
    Put32(central, zip64 ? 0xffffffffu : e.data.size());
    Put16(central, e.name.size());
    Put16(central, zip64 ? 28 : 0);
    Put16(central, 0);
    Put16(central, 0);
    Put16(central, 0);
    Put32(central, 0);
    Put32(central, zip64 ? 0xffffffffu : offset);
    central.insert(central.end(), e.name.begin(), e.name.end());
    if (zip64) {
      Put16(central, 1);
      Put16(central, 24);
      Put64(central, e.data.size());
      Put64(central, stored.size());
      Put64(central, offset);
    }
  }
  const uint64_t cd_offset = out.size();
  out.insert(out.end(), central.begin(), central.end());
  if (zip64) {
    const uint64_t rec = out.size();
    Put32(out, 0x06064b50);
    Put64(out, 44);
    Put16(out, 45);
    Put16(out, 45);
    Put32(out, 0);
    Put32(out, 0);
    Put64(out, entries.size());
    Put64(out, entries.size());
    Put64(out, central.size());
    Put64(out, cd_offset);
    Put32(out, 0x07064b50);
    Put32(out, 0);
    Put64(out, rec);
    Put32(out, 1);
  }
  Put32(out, 0x06054b50);
  Put16(out, 0);
  Put16(out, 0);
  Put16(out, zip64 ? 0xffff : entries.size());
  Put16(out, zip64 ? 0xffff : entries.size());
  Put32(out, zip64 ? 0xffffffffu : central.size());
  Put32(out, zip64 ? 0xffffffffu : cd_offset);
  Put16(out, 0);
  return out;
}

// ---- .npy --------------------------------------------------------------------

TEST(IoNpy, RoundTripFloat64) {
  const NpyArray a = make_npy({2, 3}, std::vector<double>{1.5, -2, 3e300, 0, NAN, -0.0});
  const std::vector<uint8_t> bytes = encode_npy(a);
  EXPECT_EQ(std::memcmp(bytes.data(), "\x93NUMPY\x01\x00", 8), 0);
  const NpyArray b = decode_npy(bytes.data(), bytes.size(), "a.npy");
  EXPECT_EQ(b.dtype, DType::kFloat64);
  EXPECT_EQ(b.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(b.size(), 6);
  EXPECT_EQ(b.data, a.data);  // bitwise, NaN and -0 included
  const std::vector<double> v = b.as<double>();
  EXPECT_EQ(v[2], 3e300);
  EXPECT_TRUE(std::isnan(v[4]));
  EXPECT_TRUE(std::signbit(v[5]));
}

TEST(IoNpy, RoundTripFloat32AndInt32) {
  const NpyArray f = make_npy({4}, std::vector<float>{1.f, 2.5f, -3.f, 1e-30f});
  const auto fbytes = encode_npy(f);
  const NpyArray fb = decode_npy(fbytes.data(), fbytes.size(), "f.npy");
  EXPECT_EQ(fb.dtype, DType::kFloat32);
  EXPECT_EQ(fb.shape, (std::vector<int64_t>{4}));
  EXPECT_EQ(fb.as<float>(), (std::vector<float>{1.f, 2.5f, -3.f, 1e-30f}));

  const NpyArray i = make_npy({2, 2}, std::vector<int32_t>{1, -2, INT32_MAX, INT32_MIN});
  const auto bytes = encode_npy(i);
  const NpyArray ib = decode_npy(bytes.data(), bytes.size(), "i.npy");
  EXPECT_EQ(ib.dtype, DType::kInt32);
  EXPECT_EQ(ib.as<int32_t>(), (std::vector<int32_t>{1, -2, INT32_MAX, INT32_MIN}));
  EXPECT_EQ(ib.as<int64_t>(), (std::vector<int64_t>{1, -2, INT32_MAX, INT32_MIN}));
  EXPECT_EQ(ib.as<double>(), (std::vector<double>{1, -2, INT32_MAX, INT32_MIN}));
}

TEST(IoNpy, RoundTripEveryDType) {
  const DType all[] = {DType::kFloat64, DType::kFloat32, DType::kInt32, DType::kInt64,
                       DType::kInt8,    DType::kUInt8,   DType::kBool};
  for (DType t : all) {
    NpyArray a;
    a.dtype = t;
    a.shape = {3, 1, 2};
    a.data.resize(6 * dtype_itemsize(t));
    for (size_t k = 0; k < a.data.size(); ++k) a.data[k] = static_cast<uint8_t>(t == DType::kBool ? k % 2 : k * 13 + 1);
    const auto bytes = encode_npy(a);
    EXPECT_EQ((bytes.size() - a.data.size()) % 64, 0u) << dtype_descr(t);
    const NpyArray b = decode_npy(bytes.data(), bytes.size(), "t.npy");
    EXPECT_EQ(b.dtype, t) << dtype_descr(t);
    EXPECT_EQ(b.shape, a.shape) << dtype_descr(t);
    EXPECT_EQ(b.data, a.data) << dtype_descr(t);
  }
}

TEST(IoNpy, ZeroDimAndEmptyShapes) {
  const NpyArray s = make_npy({}, std::vector<double>{42.0});
  auto bytes = encode_npy(s);
  const std::string text(bytes.begin() + 10, bytes.end() - 8);
  EXPECT_NE(text.find("'shape': (), }"), std::string::npos) << text;
  NpyArray b = decode_npy(bytes.data(), bytes.size(), "s.npy");
  EXPECT_TRUE(b.shape.empty());
  EXPECT_EQ(b.size(), 1);
  EXPECT_EQ(b.as<double>(), std::vector<double>{42.0});

  const NpyArray e = make_npy({0, 3}, std::vector<double>{});
  bytes = encode_npy(e);
  b = decode_npy(bytes.data(), bytes.size(), "e.npy");
  EXPECT_EQ(b.shape, (std::vector<int64_t>{0, 3}));
  EXPECT_EQ(b.size(), 0);
  EXPECT_TRUE(b.data.empty());
}

TEST(IoNpy, EncodesTheHeaderLikeNumPy) {
  // np.save(f, np.zeros((500, 32, 32))) writes exactly this 128-byte preamble
  NpyArray a;
  a.dtype = DType::kFloat64;
  a.shape = {500, 32, 32};
  a.data.assign(500 * 32 * 32 * 8, 0);
  const auto bytes = encode_npy(a);
  const std::string head(bytes.begin(), bytes.begin() + 128);
  std::string want = "{'descr': '<f8', 'fortran_order': False, 'shape': (500, 32, 32), }";
  want.append(128 - 10 - want.size() - 1, ' ');
  want = std::string("\x93NUMPY\x01\x00\x76\x00", 10) + want + "\n";
  EXPECT_EQ(head, want);
  EXPECT_EQ(shape_string({5}), "(5,)");
  EXPECT_EQ(shape_string({}), "()");
}

TEST(IoNpy, DecodesHandWrittenHeaders) {
  // odd spacing, double quotes, other key order, no trailing comma
  auto bytes = NpyBytes("{\"shape\" : ( 3 , ) ,'fortran_order':False,  'descr':'<i8'}", 24);
  NpyArray a = decode_npy(bytes.data(), bytes.size(), "hand.npy");
  EXPECT_EQ(a.dtype, DType::kInt64);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{3}));
  EXPECT_EQ(a.data.size(), 24u);

  // format 2.0 (4-byte header length), 2-d
  bytes = NpyBytes("{'descr': '<f4', 'fortran_order': False, 'shape': (2, 5), }", 40, 2);
  a = decode_npy(bytes.data(), bytes.size(), "v2.npy");
  EXPECT_EQ(a.dtype, DType::kFloat32);
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 5}));

  // one-byte types, and a 0-d array
  bytes = NpyBytes("{'descr': '|b1', 'fortran_order': False, 'shape': (), }", 1);
  a = decode_npy(bytes.data(), bytes.size(), "b.npy");
  EXPECT_EQ(a.dtype, DType::kBool);
  EXPECT_TRUE(a.shape.empty());
  bytes = NpyBytes("{'descr': '|u1', 'fortran_order': False, 'shape': (4,), }", 4);
  EXPECT_EQ(decode_npy(bytes.data(), bytes.size(), "u.npy").as<int>(), (std::vector<int>{0, 7, 14, 21}));
}

TEST(IoNpy, AsConvertsAndRefusesLossyIntegers) {
  const NpyArray d = make_npy({3}, std::vector<double>{1, -2, 3});
  EXPECT_EQ(d.as<int>(), (std::vector<int>{1, -2, 3}));
  EXPECT_EQ(d.as<float>(), (std::vector<float>{1, -2, 3}));
  ExpectError([] { make_npy({2}, std::vector<double>{1, 2.5}).as<int>(); }, {"element 1", "int32"});
  ExpectError([] { make_npy({1}, std::vector<double>{NAN}).as<int64_t>(); }, {"element 0"});
  ExpectError([] { make_npy({1}, std::vector<double>{3e9}).as<int32_t>(); }, {"int32"});
  ExpectError([] { make_npy({1}, std::vector<int32_t>{-1}).as<uint8_t>(); }, {"uint8"});
  EXPECT_EQ(make_npy({2}, std::vector<int32_t>{-1, 5}).as<bool>(), (std::vector<bool>{true, true}));
}

TEST(IoNpy, MakeAndEncodeCheckSizes) {
  ExpectError([] { make_npy({2, 3}, std::vector<double>(5)); }, {"make_npy", "(2, 3)", "5"});
  ExpectError([] { make_npy({-1}, std::vector<double>{}); }, {"negative"});
  NpyArray a = make_npy({4}, std::vector<float>(4));
  a.data.pop_back();
  ExpectError([&] { encode_npy(a); }, {"encode_npy", "16", "15"});
  ExpectError([&] { expect_dtype(a, DType::kFloat64, "batch.npz: entry 'P.npy'"); },
              {"batch.npz: entry 'P.npy': expected dtype <f8, got <f4"});
}

TEST(IoNpy, RejectsCorruptInput) {
  const std::string ok = "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }";
  auto decode = [](const std::vector<uint8_t>& b) { return [b] { decode_npy(b.data(), b.size(), "x.npy"); }; };

  auto good = NpyBytes(ok, 32);
  EXPECT_NO_THROW(decode(good)());

  auto truncated = good;
  truncated.resize(truncated.size() - 5);
  ExpectError(decode(truncated), {"x.npy", "truncated", "32 data bytes", "27"});
  auto trailing = good;
  trailing.push_back(0);
  ExpectError(decode(trailing), {"x.npy", "trailing", "33"});
  auto magic = good;
  magic[1] = 'X';
  ExpectError(decode(magic), {"x.npy", "magic"});
  ExpectError(decode(Bytes("\x93NUM")), {"x.npy", "magic"});
  ExpectError(decode({}), {"x.npy", "magic"});
  auto version = good;
  version[6] = 4;
  ExpectError(decode(version), {"x.npy", "version 4.0"});
  auto short_header = std::vector<uint8_t>(good.begin(), good.begin() + 40);
  ExpectError(decode(short_header), {"x.npy", "truncated"});

  ExpectError(decode(NpyBytes("{'descr': '<f8', 'fortran_order': True, 'shape': (2, 2), }", 32)),
              {"x.npy", "fortran_order"});
  ExpectError(decode(NpyBytes("{'descr': '>f8', 'fortran_order': False, 'shape': (4,), }", 32)),
              {"x.npy", "'>f8'", "big-endian"});
  ExpectError(decode(NpyBytes("{'descr': '<c16', 'fortran_order': False, 'shape': (2,), }", 32)),
              {"x.npy", "unsupported dtype '<c16'"});
  ExpectError(decode(NpyBytes("{'descr': [('a', '<f8')], 'fortran_order': False, 'shape': (4,), }", 32)),
              {"x.npy", "dtype"});
  ExpectError(decode(NpyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (-4,), }", 32)),
              {"x.npy", "negative"});
  ExpectError(decode(NpyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (3,), }", 32)),
              {"x.npy", "trailing", "24"});
  ExpectError(decode(NpyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': ('4',), }", 32)),
              {"x.npy", "shape"});
  ExpectError(decode(NpyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': 4, }", 32)), {"x.npy", "shape"});
  ExpectError(decode(NpyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (99999999999, 99999999999), }", 32)),
              {"x.npy", "too many"});
  ExpectError(decode(NpyBytes("{'descr': '<f8', 'shape': (4,), }", 32)), {"x.npy", "missing key 'fortran_order'"});
  ExpectError(decode(NpyBytes("{'descr': '<f8', 'fortran_order': False, 'shape': (4,), 'x': 1}", 32)),
              {"x.npy", "unexpected key 'x'"});
  ExpectError(decode(NpyBytes("{'descr': '<f8', 'descr': '<f8', 'fortran_order': False, 'shape': (4,)}", 32)),
              {"x.npy", "duplicate"});
  for (const char* garbage : {"hello world", "{'descr': '<f8', 'fortran_order': False, 'shape': (4,)",
                              "{'descr': '<f8' 'fortran_order': False}", "{'descr': '<f8, }", "", "{} extra",
                              "{'descr': '<f8', 'fortran_order': Flase, 'shape': (4,), }"}) {
    ExpectError(decode(NpyBytes(garbage, 32)), {"x.npy", "malformed header"});
  }
}

TEST(IoNpy, FileRoundTripIsAtomic) {
  const ScratchDir scratch("npy");
  const std::string& dir = scratch.path();
  const std::string path = dir + "/x.npy";
  const NpyArray a = make_npy({2, 2}, std::vector<double>{1, 2, 3, 4});
  write_npy(path, a);
  write_npy(path, a);  // overwrite in place
  EXPECT_FALSE(Exists(path + ".tmp." + std::to_string(::getpid())));
  const NpyArray b = read_npy(path);
  EXPECT_EQ(b.shape, a.shape);
  EXPECT_EQ(b.as<double>(), (std::vector<double>{1, 2, 3, 4}));

  ExpectError([&] { read_npy(dir + "/missing.npy"); }, {dir + "/missing.npy", "cannot open"});
  ExpectError([&] { read_npy(dir); }, {dir, "directory"});
  ExpectError([&] { write_npy(dir + "/no/such/dir.npy", a); }, {dir + "/no/such/dir.npy"});
  const std::vector<uint8_t> bad = {1, 2, 3};
  write_file_atomic(dir + "/bad.npy", bad);
  EXPECT_EQ(read_file_bytes(dir + "/bad.npy"), bad);
  ExpectError([&] { read_npy(dir + "/bad.npy"); }, {dir + "/bad.npy", "magic"});
}

// ---- zip ------------------------------------------------------------------------

TEST(IoZip, RoundTripSeveralEntries) {
  std::vector<ZipEntry> in = {
      {"a.npy", encode_npy(make_npy({3}, std::vector<double>{1, 2, 3}))},
      {"empty", {}},
      {"dir/binary.bin", std::vector<uint8_t>(1000)},
      {"caf\xc3\xa9.txt", Bytes("utf-8 name")},
  };
  for (size_t k = 0; k < in[2].data.size(); ++k) in[2].data[k] = static_cast<uint8_t>(k * k);
  const std::vector<uint8_t> bytes = encode_zip(in);
  const std::vector<ZipEntry> out = decode_zip(bytes, "t.zip");
  ASSERT_EQ(out.size(), in.size());
  for (size_t k = 0; k < in.size(); ++k) {
    EXPECT_EQ(out[k].name, in[k].name);
    EXPECT_EQ(out[k].data, in[k].data);
  }
  EXPECT_TRUE(decode_zip(encode_zip({}), "empty.zip").empty());
  ExpectError([] { encode_zip({{"a", {}}, {"a", {}}}); }, {"duplicate", "'a'"});
  ExpectError([] { encode_zip({{"", {}}}); }, {"empty name"});
}

TEST(IoZip, ReadsDeflatedEntries) {
  std::vector<uint8_t> text;
  for (int k = 0; k < 5000; ++k) text.push_back(static_cast<uint8_t>("abcabcabd"[k % 9]));
  const std::vector<uint8_t> npy = encode_npy(make_npy({100}, std::vector<double>(100, 0.25)));
  const std::vector<TestEntry> entries = {
      {"text.txt", text, 8}, {"x.npy", npy, 8}, {"stored.bin", Bytes("plain"), 0}, {"empty", {}, 8}};
  for (bool zip64 : {false, true}) {
    const std::vector<uint8_t> bytes = BuildZip(entries, zip64);
    if (!zip64) {
      EXPECT_LT(bytes.size(), text.size());  // really compressed
    }
    const std::vector<ZipEntry> out = decode_zip(bytes, "deflated.zip");
    ASSERT_EQ(out.size(), entries.size()) << "zip64 " << zip64;
    for (size_t k = 0; k < entries.size(); ++k) {
      EXPECT_EQ(out[k].name, entries[k].name);
      EXPECT_EQ(out[k].data, entries[k].data) << entries[k].name << " zip64 " << zip64;
    }
  }
}

TEST(IoZip, DetectsCorruption) {
  const std::vector<ZipEntry> in = {{"a.bin", Bytes("hello, stored world")}, {"b.bin", Bytes("second")}};
  const std::vector<uint8_t> good = encode_zip(in);

  // flip one data byte of the first entry: its CRC no longer matches
  auto flipped = good;
  flipped[30 + 5 + 3] ^= 0x20;
  ExpectError([&] { decode_zip(flipped, "crc.zip"); }, {"crc.zip", "'a.bin'", "CRC-32 mismatch"});

  // a deflated entry with a damaged CRC, and one with damaged data
  auto deflated = BuildZip({{"d.txt", std::vector<uint8_t>(3000, 'z'), 8}}, false);
  auto bad_crc = deflated;
  bad_crc[14] ^= 1;  // local header CRC is not read; fix up the central one
  const size_t cd = deflated.size() - 22 - (46 + 5);
  bad_crc[cd + 16] ^= 1;
  ExpectError([&] { decode_zip(bad_crc, "dcrc.zip"); }, {"dcrc.zip", "CRC-32 mismatch"});
  auto bad_data = deflated;
  bad_data[30 + 5] = 0xff;  // an invalid block type
  ExpectError([&] { decode_zip(bad_data, "ddata.zip"); }, {"ddata.zip", "'d.txt'"});
  // central directory sizes that disagree with the deflate stream (3000 bytes)
  auto too_small = deflated;
  too_small[cd + 24] = static_cast<uint8_t>(2999 & 0xff);
  ExpectError([&] { decode_zip(too_small, "small.zip"); }, {"small.zip", "more than the recorded 2999"});
  auto too_big = deflated;
  too_big[cd + 24] = static_cast<uint8_t>(3001 & 0xff);
  ExpectError([&] { decode_zip(too_big, "big.zip"); }, {"big.zip", "3000", "3001"});

  ExpectError([&] { decode_zip(std::vector<uint8_t>(good.begin(), good.end() - 1), "trunc.zip"); },
              {"trunc.zip", "not a zip archive"});
  ExpectError([&] { decode_zip(std::vector<uint8_t>(good.begin() + 10, good.end()), "cut.zip"); }, {"cut.zip"});
  ExpectError([&] { decode_zip(Bytes("this is not a zip file at all, honestly"), "text.zip"); },
              {"text.zip", "not a zip archive"});
  ExpectError([&] { decode_zip({}, "empty.zip"); }, {"empty.zip", "not a zip archive"});

  // the central directory's size says more entries than fit
  auto count = good;
  count[count.size() - 12] = 9;
  count[count.size() - 14] = 9;
  ExpectError([&] { decode_zip(count, "count.zip"); }, {"count.zip", "corrupt"});

  // an unsupported method (bzip2 = 12) in the central directory
  auto method = good;
  const size_t cd0 = good.size() - 22 - 2 * 46 - 10;
  ASSERT_EQ(method[cd0], 0x50);
  method[cd0 + 10] = 12;
  ExpectError([&] { decode_zip(method, "m.zip"); }, {"m.zip", "'a.bin'", "method 12"});

  // a local header offset pointing at garbage
  auto offset = good;
  offset[cd0 + 42] = 3;
  ExpectError([&] { decode_zip(offset, "off.zip"); }, {"off.zip", "'a.bin'", "local header"});
}

// ---- npz ------------------------------------------------------------------------

TEST(IoNpz, RoundTripAndMissingKey) {
  const ScratchDir scratch("npz");
  const std::string& dir = scratch.path();
  const std::string path = dir + "/batch.npz";
  NpzArchive in;
  in["P"] = make_npy({2, 2, 2}, std::vector<double>{1, 0, 0, 1, 2, 0, 0, 2});
  in["q"] = make_npy({2, 2}, std::vector<float>{1, 2, 3, 4});
  in["n"] = make_npy({}, std::vector<int32_t>{7});
  write_npz(path, in);
  EXPECT_FALSE(Exists(path + ".tmp." + std::to_string(::getpid())));

  const NpzArchive out = read_npz(path);
  ASSERT_EQ(out.size(), 3u);
  for (const auto& kv : in) {
    const NpyArray& a = npz_get(out, kv.first, path);
    EXPECT_EQ(a.dtype, kv.second.dtype) << kv.first;
    EXPECT_EQ(a.shape, kv.second.shape) << kv.first;
    EXPECT_EQ(a.data, kv.second.data) << kv.first;
  }
  ExpectError([&] { npz_get(out, "A", path); }, {path + ": missing array 'A'", "P, n, q"});

  // a bad member is reported with the archive and the entry
  write_file_atomic(path, encode_zip({{"P.npy", Bytes("not an npy")}}));
  ExpectError([&] { read_npz(path); }, {path + ": entry 'P.npy'", "magic"});
  NpyArray broken = make_npy({2}, std::vector<double>{1, 2});
  broken.data.pop_back();
  ExpectError([&] { write_npz(path, {{"x", broken}}); }, {path, "'x'"});
  ExpectError([&] { read_npz(dir + "/nope.npz"); }, {dir + "/nope.npz"});
}

TEST(IoNpz, ReadsCompressedArchives) {
  // what np.savez_compressed writes: deflated .npy members
  const NpyArray a = make_npy({50, 4}, std::vector<double>(200, 1.0));
  const NpyArray b = make_npy({3}, std::vector<int32_t>{1, 2, 3});
  const ScratchDir scratch("npzc");
  const std::string& dir = scratch.path();
  const std::string path = dir + "/c.npz";
  write_file_atomic(path, BuildZip({{"a.npy", encode_npy(a), 8}, {"b.npy", encode_npy(b), 8}}, false));
  const NpzArchive out = read_npz(path);
  EXPECT_EQ(npz_get(out, "a", path).as<double>(), std::vector<double>(200, 1.0));
  EXPECT_EQ(npz_get(out, "b", path).as<int>(), (std::vector<int>{1, 2, 3}));
}

// ---- shared data ------------------------------------------------------------------

TEST(IoNpy, ReadsContactNetsData) {
  const std::string dir = testing::shared_data("contactnets_qps");
  struct stat st;
  if (::stat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
    IMPULSE_SKIP_WITHOUT_DATA(testing::data_absent("real ContactNets QPs", dir, "contactnets_qps"));
  const NpyArray p = read_npy(dir + "/train_P.npy");
  EXPECT_EQ(p.dtype, DType::kFloat64);
  ASSERT_EQ(p.shape, (std::vector<int64_t>{500, 32, 32}));
  const std::vector<double> v = p.as<double>();
  for (int i = 0; i < 32; ++i) {
    for (int j = 0; j < i; ++j) EXPECT_EQ(v[i * 32 + j], v[j * 32 + i]) << "P[0] at " << i << "," << j;
  }
}

}  // namespace
}  // namespace impulse
