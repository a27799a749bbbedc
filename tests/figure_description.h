// What a figure of impulse's figure scripts shows, read back from the PNG: the JSON
// that io/figure_files.py's describe() puts in its Description text chunk (the
// figure's title and, per axes, its title, labels, legend, texts and labelled lines).
#pragma once

#include <cstdint>
#include <fstream>
#include <iterator>
#include <string>

#include <nlohmann/json.hpp>

namespace impulse::testing {

// the Description of a PNG (tEXt, or iTXt uncompressed); null when it has none
inline nlohmann::json png_description(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  const std::string b((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  if (b.size() < 8 || b.compare(0, 8, "\x89PNG\r\n\x1a\n", 8) != 0) return nullptr;
  for (size_t at = 8; at + 12 <= b.size();) {
    const auto byte = [&](size_t i) { return static_cast<uint32_t>(static_cast<unsigned char>(b[i])); };
    const size_t len = (byte(at) << 24) | (byte(at + 1) << 16) | (byte(at + 2) << 8) | byte(at + 3);
    const std::string type = b.substr(at + 4, 4);
    if (at + 12 + len > b.size()) break;
    const std::string data = b.substr(at + 8, len);
    at += 12 + len;
    const size_t nul = data.find('\0');
    if (nul == std::string::npos || data.substr(0, nul) != "Description") continue;
    std::string text;
    if (type == "tEXt") {
      text = data.substr(nul + 1);
    } else if (type == "iTXt" && nul + 2 < data.size() && data[nul + 1] == 0) {
      const size_t lang_end = data.find('\0', nul + 3);
      const size_t key_end = lang_end == std::string::npos ? lang_end : data.find('\0', lang_end + 1);
      if (key_end == std::string::npos) continue;
      text = data.substr(key_end + 1);
    } else {
      continue;
    }
    return nlohmann::json::parse(text, nullptr, false);
  }
  return nullptr;
}

// the axes of a described figure whose title contains `part`; null when none has
inline nlohmann::json axes_titled(const nlohmann::json& description, const std::string& part) {
  if (!description.is_object() || !description.contains("axes")) return nullptr;
  for (const auto& a : description["axes"])
    if (a.value("title", std::string()).find(part) != std::string::npos) return a;
  return nullptr;
}

// the line of an axes whose label starts with `prefix` ({"label", "points", "x": [min,
// max]}); an empty object when none has
inline nlohmann::json line_labelled(const nlohmann::json& axes, const std::string& prefix) {
  if (!axes.is_object() || !axes.contains("lines")) return nlohmann::json::object();
  for (const auto& l : axes["lines"])
    if (l.value("label", std::string()).rfind(prefix, 0) == 0) return l;
  return nlohmann::json::object();
}

}  // namespace impulse::testing
