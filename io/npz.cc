#include "io/npz.h"

#include "io/files.h"
#include "io/zip.h"

namespace impulse {

NpzArchive read_npz(const std::string& path) {
  const std::vector<uint8_t> bytes = read_file_bytes(path);
  std::vector<ZipEntry> entries = decode_zip(bytes, path);
  NpzArchive out;
  for (ZipEntry& e : entries) {
    if (!e.name.empty() && e.name.back() == '/' && e.data.empty()) continue;
    const std::string label = path + ": entry '" + e.name + "'";
    std::string key = e.name;
    const std::string suffix = ".npy";
    if (key.size() > suffix.size() && key.compare(key.size() - suffix.size(), suffix.size(), suffix) == 0) {
      key.resize(key.size() - suffix.size());
    }
    if (out.count(key) != 0) throw Error(label + ": duplicate array '" + key + "'");
    out.emplace(key, decode_npy(e.data.data(), e.data.size(), label));
    // free each entry's bytes as soon as its array exists
    std::vector<uint8_t>().swap(e.data);
  }
  return out;
}

void write_npz(const std::string& path, const NpzArchive& arrays) {
  std::vector<ZipEntry> entries;
  entries.reserve(arrays.size());
  for (const auto& kv : arrays) {
    if (kv.first.empty()) throw Error(path + ": cannot write an array with an empty key");
    try {
      entries.push_back(ZipEntry{kv.first + ".npy", encode_npy(kv.second)});
    } catch (const Error& e) {
      throw Error(path + ": array '" + kv.first + "': " + e.what());
    }
  }
  std::vector<uint8_t> bytes;
  try {
    bytes = encode_zip(entries);
  } catch (const Error& e) {
    throw Error(path + ": " + e.what());
  }
  entries.clear();
  write_file_atomic(path, bytes);
}

const NpyArray& npz_get(const NpzArchive& arrays, const std::string& key, const std::string& file_for_errors) {
  const auto it = arrays.find(key);
  if (it != arrays.end()) return it->second;
  std::string have;
  for (const auto& kv : arrays) have += (have.empty() ? "" : ", ") + kv.first;
  throw Error(file_for_errors + ": missing array '" + key + "' (has: " + (have.empty() ? "nothing" : have) + ")");
}

}  // namespace impulse
