// The misuse vocabulary: impulse::Error carries a message that names what was
// expected and what came ("expected 24 columns, got 23"), and where (file,
// problem index). Numerical outcomes are SolveStatus values, never exceptions.
#pragma once

#include <stdexcept>
#include <string>

namespace impulse {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& what) : std::runtime_error(what) {}
};

}  // namespace impulse
