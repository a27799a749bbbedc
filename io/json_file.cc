#include "io/json_file.h"

#include "io/files.h"
#include "solvers/error.h"

namespace impulse {

std::string read_text_file(const std::string& path) {
  const auto b = read_file_bytes(path);
  return std::string(b.begin(), b.end());
}

namespace {
template <class Json>
Json parse_file(const std::string& path) {
  try {
    return Json::parse(read_text_file(path));
  } catch (const nlohmann::json::exception& e) {
    throw Error(path + ": not valid JSON (" + e.what() + ")");
  }
}
}  // namespace

nlohmann::json read_json_file(const std::string& path) { return parse_file<nlohmann::json>(path); }
nlohmann::ordered_json read_ordered_json_file(const std::string& path) { return parse_file<nlohmann::ordered_json>(path); }

}  // namespace impulse
