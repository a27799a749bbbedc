// A minimal ZIP archive reader and writer, enough for NumPy .npz files and
// PyTorch zip checkpoints (whole files are read and written atomically by io/files.h).
//
// encode_zip stores entries uncompressed (method 0) with CRC-32 and no zip64,
// the layout np.savez produces. decode_zip finds entries through the end of
// central directory record and the central directory, reads stored (0) and
// deflated (8) entries, honours zip64 sizes and offsets, and verifies every
// CRC-32. Every bad input throws impulse::Error naming the archive.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "solvers/error.h"

namespace impulse {

struct ZipEntry {
  std::string name;           // path inside the archive, e.g. "P.npy"
  std::vector<uint8_t> data;  // uncompressed contents
};

// The complete archive. Throws impulse::Error for an empty or duplicate name,
// or when an entry, offset or the entry count exceeds what a zip without zip64
// can record (4 GiB, 65535 entries).
std::vector<uint8_t> encode_zip(const std::vector<ZipEntry>& entries);

// The entries of a complete archive held in memory, in central directory
// order. name_for_errors starts every error message (usually the path).
// Rejects encrypted, multi-disk, corrupt, duplicate-named and CRC-failing
// entries, and compression methods other than stored and deflate.
std::vector<ZipEntry> decode_zip(const std::vector<uint8_t>& bytes, const std::string& name_for_errors);

}  // namespace impulse
