// NumPy .npz archives: a zip of .npy files, one per named array.
//
// read_npz reads what np.savez and np.savez_compressed write; write_npz writes
// what np.load reads (stored entries, "KEY.npy" each). Errors name the file
// and the entry: "batch.npz: entry 'P.npy': unsupported dtype '<c16'".
#pragma once

#include <map>
#include <string>

#include "io/npy.h"

namespace impulse {

// Arrays by key; keys carry no ".npy" suffix, as with np.load(...)["P"].
using NpzArchive = std::map<std::string, NpyArray>;

// Every entry must be an .npy file; directory entries are skipped.
NpzArchive read_npz(const std::string& path);

// Writes path + ".tmp.<pid>", syncs it and renames it over path.
void write_npz(const std::string& path, const NpzArchive& arrays);

// The array under key; throws "FILE: missing array 'key' (has: A, P, q)".
const NpyArray& npz_get(const NpzArchive& arrays, const std::string& key, const std::string& file_for_errors);

}  // namespace impulse
