#include "io/zip.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <set>

namespace impulse {

namespace {

constexpr uint32_t kLocalSig = 0x04034b50;
constexpr uint32_t kCentralSig = 0x02014b50;
constexpr uint32_t kEndSig = 0x06054b50;
constexpr uint32_t kZip64EndSig = 0x06064b50;
constexpr uint32_t kZip64LocatorSig = 0x07064b50;
constexpr size_t kLocalSize = 30;
constexpr size_t kCentralSize = 46;
constexpr size_t kEndSize = 22;
constexpr size_t kZip64EndSize = 56;
constexpr size_t kZip64LocatorSize = 20;
constexpr uint64_t kMax32 = 0xffffffffu;
// deflate cannot expand data by more than about 1032:1
constexpr uint64_t kMaxDeflateRatio = 1032;

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof buf, "0x%08x", v);
  return buf;
}

uint32_t crc32_of(const uint8_t* p, size_t n) {
  uLong crc = crc32_z(0L, Z_NULL, 0);
  return static_cast<uint32_t>(crc32_z(crc, p, n));
}

// ---- little-endian writing -------------------------------------------------

void put16(std::vector<uint8_t>& out, uint64_t v) {
  out.push_back(static_cast<uint8_t>(v));
  out.push_back(static_cast<uint8_t>(v >> 8));
}
void put32(std::vector<uint8_t>& out, uint64_t v) {
  put16(out, v & 0xffff);
  put16(out, v >> 16);
}

// ---- bounds-checked little-endian reading -----------------------------------

class Reader {
 public:
  Reader(const std::vector<uint8_t>& b, const std::string& name) : b_(b), name_(name) {}

  [[noreturn]] void corrupt(const std::string& what) const {
    throw Error(name_ + ": corrupt zip archive: " + what);
  }

  // fails unless [pos, pos + n) lies inside the archive
  void need(uint64_t pos, uint64_t n, const char* what) const {
    if (pos > b_.size() || n > b_.size() - pos) {
      corrupt(std::string(what) + " at offset " + std::to_string(pos) + " runs past the end of the archive (" +
              std::to_string(b_.size()) + " bytes)");
    }
  }

  uint64_t le(uint64_t pos, int n) const {
    uint64_t v = 0;
    for (int i = n - 1; i >= 0; --i) v = (v << 8) | b_[pos + i];
    return v;
  }
  uint32_t u16(uint64_t pos) const { return static_cast<uint32_t>(le(pos, 2)); }
  uint32_t u32(uint64_t pos) const { return static_cast<uint32_t>(le(pos, 4)); }
  uint64_t u64(uint64_t pos) const { return le(pos, 8); }

  const std::vector<uint8_t>& b_;
  const std::string& name_;
};

// The central directory's location, from the (zip64) end record.
struct Directory {
  uint64_t entries;
  uint64_t size;
  uint64_t offset;
  uint64_t end;  // where the central directory must end (start of the end records)
};

Directory find_directory(const Reader& r) {
  const std::vector<uint8_t>& b = r.b_;
  if (b.size() < kEndSize) {
    throw Error(r.name_ + ": not a zip archive (" + std::to_string(b.size()) + " bytes, no end-of-central-directory record)");
  }
  // the end record sits last, followed only by its comment (at most 64 KiB)
  size_t pos = b.size() - kEndSize;
  const size_t lowest = b.size() - kEndSize > 0xffff ? b.size() - kEndSize - 0xffff : 0;
  bool found = false;
  while (true) {
    if (r.u32(pos) == kEndSig && pos + kEndSize + r.u16(pos + 20) == b.size()) {
      found = true;
      break;
    }
    if (pos == lowest) break;
    --pos;
  }
  if (!found) throw Error(r.name_ + ": not a zip archive (no end-of-central-directory record; truncated?)");

  if (r.u16(pos + 4) != 0 || r.u16(pos + 6) != 0) r.corrupt("multi-disk archives are not supported");
  Directory d;
  d.entries = r.u16(pos + 10);
  if (r.u16(pos + 8) != d.entries) r.corrupt("multi-disk archives are not supported");
  d.size = r.u32(pos + 12);
  d.offset = r.u32(pos + 16);
  d.end = pos;

  // zip64: a locator just before the end record points at the zip64 end record
  if (pos >= kZip64LocatorSize && r.u32(pos - kZip64LocatorSize) == kZip64LocatorSig) {
    const size_t loc = pos - kZip64LocatorSize;
    if (r.u32(loc + 4) != 0 || r.u32(loc + 16) > 1) r.corrupt("multi-disk archives are not supported");
    const uint64_t rec = r.u64(loc + 8);
    r.need(rec, kZip64EndSize, "zip64 end-of-central-directory record");
    if (rec + kZip64EndSize > loc) r.corrupt("zip64 end record overlaps its locator");
    if (r.u32(rec) != kZip64EndSig) r.corrupt("bad zip64 end-of-central-directory signature at offset " + std::to_string(rec));
    if (r.u32(rec + 16) != 0 || r.u32(rec + 20) != 0) r.corrupt("multi-disk archives are not supported");
    d.entries = r.u64(rec + 32);
    if (r.u64(rec + 24) != d.entries) r.corrupt("multi-disk archives are not supported");
    d.size = r.u64(rec + 40);
    d.offset = r.u64(rec + 48);
    d.end = rec;
  } else if (d.entries == 0xffff || d.size == kMax32 || d.offset == kMax32) {
    r.corrupt("end record needs zip64 values but there is no zip64 locator");
  }
  if (d.offset > d.end || d.size > d.end - d.offset) {
    r.corrupt("central directory (offset " + std::to_string(d.offset) + ", " + std::to_string(d.size) +
              " bytes) does not lie before the end record at " + std::to_string(d.end));
  }
  return d;
}

void inflate_raw(const Reader& r, const std::string& entry, const uint8_t* in, uint64_t in_len, uint8_t* out,
                 uint64_t out_len) {
  z_stream zs;
  std::memset(&zs, 0, sizeof zs);
  if (inflateInit2(&zs, -15) != Z_OK) throw Error(r.name_ + ": entry '" + entry + "': zlib inflateInit2 failed");
  uint64_t in_left = in_len;
  uint64_t out_left = out_len;
  zs.next_in = const_cast<Bytef*>(in);
  zs.next_out = out;
  uint8_t spill = 0;  // once the output is full, room to detect extra bytes
  bool overflow = false;
  while (true) {
    // feed at most UINT_MAX bytes per call; zlib counts in uInt
    const uInt in_chunk = static_cast<uInt>(std::min<uint64_t>(in_left, UINT_MAX));
    const uInt out_chunk = out_left > 0 ? static_cast<uInt>(std::min<uint64_t>(out_left, UINT_MAX)) : 1;
    if (out_left == 0) zs.next_out = &spill;
    zs.avail_in = in_chunk;
    zs.avail_out = out_chunk;
    const int ret = inflate(&zs, Z_NO_FLUSH);
    const uInt used_in = in_chunk - zs.avail_in;
    const uInt used_out = out_chunk - zs.avail_out;
    in_left -= used_in;
    if (out_left == 0) {
      overflow = used_out > 0;
    } else {
      out_left -= used_out;
    }
    if (ret == Z_STREAM_END && !overflow) break;
    if (ret == Z_OK && !overflow && (used_in > 0 || used_out > 0)) continue;
    const std::string msg = zs.msg ? zs.msg : "no progress";
    inflateEnd(&zs);
    if (ret == Z_DATA_ERROR || ret == Z_NEED_DICT) {
      r.corrupt("entry '" + entry + "': bad deflate data (" + msg + ")");
    }
    if (overflow) {
      r.corrupt("entry '" + entry + "': inflates to more than the recorded " + std::to_string(out_len) + " bytes");
    }
    r.corrupt("entry '" + entry + "': deflate data end early (" + std::to_string(out_len - out_left) + " of " +
              std::to_string(out_len) + " bytes)");
  }
  inflateEnd(&zs);
  if (out_left != 0) {
    r.corrupt("entry '" + entry + "': inflates to " + std::to_string(out_len - out_left) + " bytes, recorded size is " +
              std::to_string(out_len));
  }
}

}  // namespace

std::vector<uint8_t> encode_zip(const std::vector<ZipEntry>& entries) {
  if (entries.size() >= 0xffff) {
    throw Error("encode_zip: " + std::to_string(entries.size()) + " entries; zip without zip64 holds at most 65534");
  }
  std::set<std::string> names;
  uint64_t total = kEndSize;
  for (const ZipEntry& e : entries) {
    if (e.name.empty()) throw Error("encode_zip: an entry has an empty name");
    if (e.name.size() > 0xffff) throw Error("encode_zip: entry name longer than 65535 bytes");
    if (!names.insert(e.name).second) throw Error("encode_zip: duplicate entry '" + e.name + "'");
    if (e.data.size() >= kMax32) {
      throw Error("encode_zip: entry '" + e.name + "' is " + std::to_string(e.data.size()) +
                  " bytes; zip without zip64 holds at most 4 GiB per entry");
    }
    total += kLocalSize + kCentralSize + 2 * e.name.size() + e.data.size();
  }
  if (total >= kMax32) {
    throw Error("encode_zip: archive would be " + std::to_string(total) +
                " bytes; zip without zip64 holds at most 4 GiB in all");
  }

  std::vector<uint8_t> out;
  out.reserve(static_cast<size_t>(total));
  std::vector<uint8_t> central;
  for (const ZipEntry& e : entries) {
    const uint32_t crc = crc32_of(e.data.data(), e.data.size());
    const bool utf8 = std::any_of(e.name.begin(), e.name.end(), [](char c) { return static_cast<unsigned char>(c) >= 0x80; });
    const uint32_t flags = utf8 ? 0x800 : 0;  // bit 11: the name is UTF-8
    const uint64_t offset = out.size();
    // local file header; time 00:00, date 1980-01-01 keep archives reproducible
    put32(out, kLocalSig);
    put16(out, 20);  // version needed: 2.0
    put16(out, flags);
    put16(out, 0);  // method: stored
    put16(out, 0);
    put16(out, 0x21);
    put32(out, crc);
    put32(out, e.data.size());
    put32(out, e.data.size());
    put16(out, e.name.size());
    put16(out, 0);  // extra length
    out.insert(out.end(), e.name.begin(), e.name.end());
    out.insert(out.end(), e.data.begin(), e.data.end());
    // central directory header
    put32(central, kCentralSig);
    put16(central, (3 << 8) | 20);  // made by: unix, 2.0
    put16(central, 20);
    put16(central, flags);
    put16(central, 0);
    put16(central, 0);
    put16(central, 0x21);
    put32(central, crc);
    put32(central, e.data.size());
    put32(central, e.data.size());
    put16(central, e.name.size());
    put16(central, 0);  // extra length
    put16(central, 0);  // comment length
    put16(central, 0);  // disk
    put16(central, 0);  // internal attributes
    put32(central, uint64_t{0100644} << 16);  // external: regular file, rw-r--r--
    put32(central, offset);
    central.insert(central.end(), e.name.begin(), e.name.end());
  }
  const uint64_t cd_offset = out.size();
  out.insert(out.end(), central.begin(), central.end());
  put32(out, kEndSig);
  put16(out, 0);
  put16(out, 0);
  put16(out, entries.size());
  put16(out, entries.size());
  put32(out, central.size());
  put32(out, cd_offset);
  put16(out, 0);  // comment length
  return out;
}

std::vector<ZipEntry> decode_zip(const std::vector<uint8_t>& bytes, const std::string& name_for_errors) {
  const Reader r(bytes, name_for_errors);
  const Directory dir = find_directory(r);
  // every central header takes at least 46 bytes
  if (dir.entries > dir.size / kCentralSize) {
    r.corrupt("end record claims " + std::to_string(dir.entries) + " entries in a " + std::to_string(dir.size) +
              "-byte central directory");
  }

  std::vector<ZipEntry> out;
  out.reserve(static_cast<size_t>(dir.entries));
  std::set<std::string> names;
  uint64_t pos = dir.offset;
  const uint64_t cd_end = dir.offset + dir.size;
  for (uint64_t i = 0; i < dir.entries; ++i) {
    if (pos + kCentralSize > cd_end) r.corrupt("central directory ends inside entry " + std::to_string(i));
    if (r.u32(pos) != kCentralSig) r.corrupt("bad central directory signature at offset " + std::to_string(pos));
    const uint32_t flags = r.u16(pos + 8);
    const uint32_t method = r.u16(pos + 10);
    const uint32_t crc = r.u32(pos + 16);
    uint64_t comp = r.u32(pos + 20);
    uint64_t size = r.u32(pos + 24);
    const uint32_t name_len = r.u16(pos + 28);
    const uint32_t extra_len = r.u16(pos + 30);
    const uint32_t comment_len = r.u16(pos + 32);
    uint64_t disk = r.u16(pos + 34);
    uint64_t local = r.u32(pos + 42);
    const uint64_t next = pos + kCentralSize + name_len + extra_len + comment_len;
    if (next > cd_end) r.corrupt("central directory entry " + std::to_string(i) + " runs past the directory");
    const std::string name(reinterpret_cast<const char*>(bytes.data() + pos + kCentralSize), name_len);
    const std::string label = "entry '" + name + "'";

    // zip64 extra field: 8-byte values for exactly the fields saturated above
    uint64_t x = pos + kCentralSize + name_len;
    const uint64_t x_end = x + extra_len;
    while (x + 4 <= x_end) {
      const uint32_t id = r.u16(x);
      const uint32_t len = r.u16(x + 2);
      if (x + 4 + len > x_end) r.corrupt(label + ": extra field runs past its header");
      if (id == 0x0001) {
        uint64_t f = x + 4;
        const uint64_t f_end = f + len;
        auto take = [&](uint64_t* v, int n) {
          if (f + n > f_end) r.corrupt(label + ": zip64 extra field too short");
          *v = r.le(f, n);
          f += n;
        };
        if (size == kMax32) take(&size, 8);
        if (comp == kMax32) take(&comp, 8);
        if (local == kMax32) take(&local, 8);
        if (disk == 0xffff) take(&disk, 4);
      }
      x += 4 + len;
    }

    if (disk != 0) r.corrupt(label + ": multi-disk archives are not supported");
    if (flags & 1) throw Error(name_for_errors + ": " + label + ": encrypted entries are not supported");
    if (method != 0 && method != 8) {
      throw Error(name_for_errors + ": " + label + ": unsupported compression method " + std::to_string(method) +
                  " (supported: 0 stored, 8 deflate)");
    }
    if (!names.insert(name).second) r.corrupt("duplicate " + label);

    // the local header repeats the name; its extra field may differ in length
    r.need(local, kLocalSize, "local header");
    if (local + kLocalSize > dir.offset) r.corrupt(label + ": local header overlaps the central directory");
    if (r.u32(local) != kLocalSig) r.corrupt(label + ": bad local header signature at offset " + std::to_string(local));
    const uint32_t local_name_len = r.u16(local + 26);
    const uint32_t local_extra_len = r.u16(local + 28);
    const uint64_t data = local + kLocalSize + local_name_len + local_extra_len;
    if (data > dir.offset || comp > dir.offset - data) {
      r.corrupt(label + ": data (" + std::to_string(comp) + " bytes at offset " + std::to_string(data) +
                ") run into the central directory");
    }
    if (local_name_len != name_len ||
        std::memcmp(bytes.data() + local + kLocalSize, name.data(), name_len) != 0) {
      r.corrupt(label + ": local header names a different file");
    }
    if (method == 0 && comp != size) {
      r.corrupt(label + ": stored entry with compressed size " + std::to_string(comp) + " != size " + std::to_string(size));
    }
    if (method == 8 && size > comp * kMaxDeflateRatio + 1024) {
      r.corrupt(label + ": claims " + std::to_string(size) + " bytes from " + std::to_string(comp) + " deflated bytes");
    }

    ZipEntry e;
    e.name = name;
    e.data.resize(static_cast<size_t>(size));
    if (method == 0) {
      if (size > 0) std::memcpy(e.data.data(), bytes.data() + data, static_cast<size_t>(size));
    } else {
      inflate_raw(r, name, bytes.data() + data, comp, e.data.data(), size);
    }
    const uint32_t got = crc32_of(e.data.data(), e.data.size());
    if (got != crc) r.corrupt(label + ": CRC-32 mismatch (recorded " + hex32(crc) + ", computed " + hex32(got) + ")");
    out.push_back(std::move(e));
    pos = next;
  }
  return out;
}

}  // namespace impulse
