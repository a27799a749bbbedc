// Whole files: read at once, written atomically (temporary file, fsync, rename), so a
// reader sees the old file or the new one, never a partial one; every writer of results,
// checkpoints and data uses these.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace impulse {

// The whole contents of a regular file; errors name the path.
std::vector<uint8_t> read_file_bytes(const std::string& path);

// Writes path + ".tmp.<pid>", fsyncs it, renames it over path and syncs the
// directory, so readers see the old file or the new one, never a partial one.
// The temporary file is removed on failure.
void write_file_atomic(const std::string& path, const std::vector<uint8_t>& bytes);
// The same for text (CSV, JSON, logs a person reads).
void write_text_atomic(const std::string& path, const std::string& text);

}  // namespace impulse
