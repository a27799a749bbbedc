// Reading the project's small text and JSON files (configs, checkpoints, metrics):
// errors name the path ("run/config.json: not valid JSON (...)").
#pragma once

#include <string>

#include <nlohmann/json.hpp>

namespace impulse {

std::string read_text_file(const std::string& path);
nlohmann::json read_json_file(const std::string& path);
nlohmann::ordered_json read_ordered_json_file(const std::string& path);  // keys in file order

}  // namespace impulse
