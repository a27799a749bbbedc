// The documentation agrees with the code: docs/solver.md's settings table lists every
// member of QpSettings (read from solvers/qp_admm.h) with the code's defaults in both
// precisions.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "solvers/qp_admm.h"

namespace impulse {
namespace {

std::string read(const std::string& rel) {
  std::ifstream f(std::string(IMPULSE_SOURCE_DIR) + "/" + rel);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// a setting's default as a number (bools 0 / 1)
template <class T>
std::map<std::string, double> defaults() {
  const QpSettings<T> s;
  return {{"rho", s.rho},
          {"rho_eq_scale", s.rho_eq_scale},
          {"sigma", s.sigma},
          {"alpha", s.alpha},
          {"eps_abs", s.eps_abs},
          {"eps_rel", s.eps_rel},
          {"eps_pinf", s.eps_pinf},
          {"eps_dinf", s.eps_dinf},
          {"max_iter", s.max_iter},
          {"check_every", s.check_every},
          {"predict_checks", s.predict_checks},
          {"adaptive_rho", s.adaptive_rho},
          {"adaptive_rho_interval", s.adaptive_rho_interval},
          {"adaptive_rho_tolerance", s.adaptive_rho_tolerance},
          {"max_rho_updates", s.max_rho_updates},
          {"rho_min", s.rho_min},
          {"rho_max", s.rho_max},
          {"check_input", s.check_input},
          {"check_psd", s.check_psd},
          {"explicit_inverse", s.explicit_inverse},
          {"dense_iteration", s.dense_iteration},
          {"psd_tol", s.psd_tol},
          {"scaling_iters", s.scaling_iters},
          {"fallback", s.fallback},
          {"stall_return", s.stall_return},
          {"ipm_switch", s.ipm_switch},
          {"check_gap", s.check_gap},
          {"anderson", s.anderson}};
}

double parse_value(const std::string& v) {
  if (v == "true") return 1;
  if (v == "false") return 0;
  return std::stod(v);
}

TEST(Docs, SolverSettingsTableIsTheCodes) {
  const std::string doc = read("docs/solver.md");
  ASSERT_FALSE(doc.empty()) << "docs/solver.md is missing";
  // rows "| `name` | double | float | range | meaning |"
  const std::regex row(R"(\n\| `([a-z_]+)` \| ([^|]+?) \| ([^|]+?) \|)");
  std::map<std::string, std::pair<double, double>> table;
  for (auto it = std::sregex_iterator(doc.begin(), doc.end(), row); it != std::sregex_iterator(); ++it)
    table[(*it)[1]] = {parse_value((*it)[2]), parse_value((*it)[3])};
  const auto d = defaults<double>();
  const auto f = defaults<float>();
  for (const auto& [name, v] : d) {
    ASSERT_TRUE(table.count(name)) << "docs/solver.md has no row for " << name;
    EXPECT_NEAR(table[name].first, v, 1e-6 * std::abs(v)) << name << " (double)";
    EXPECT_NEAR(table[name].second, f.at(name), 1e-6 * std::abs(f.at(name))) << name << " (float)";
  }
  for (const auto& [name, v] : table) EXPECT_TRUE(d.count(name)) << "docs/solver.md lists " << name << ", not a setting";
  // every member of QpSettings in the header is in the table (a new setting needs its row)
  const std::string h = read("solvers/qp_admm.h");
  const size_t begin = h.find("struct QpSettings {"), end = h.find("const char* validate() const", begin);
  ASSERT_NE(begin, std::string::npos);
  const std::string body = h.substr(begin, end - begin);
  const std::regex member(R"(\n  (?:bool|int|T) ([a-z_]+) = )");
  int members = 0;
  for (auto it = std::sregex_iterator(body.begin(), body.end(), member); it != std::sregex_iterator(); ++it, ++members)
    EXPECT_TRUE(table.count((*it)[1])) << "QpSettings::" << (*it)[1] << " is not in docs/solver.md";
  EXPECT_EQ(members, int(d.size())) << "QpSettings has members this test does not know";
}

}  // namespace
}  // namespace impulse

namespace impulse {
namespace {

TEST(Docs, ResultsIndexListsEveryNote) {
  const std::string index = read("docs/results.md");
  ASSERT_FALSE(index.empty()) << "docs/results.md is missing";
  int notes = 0;
  for (const auto& e : std::filesystem::directory_iterator(std::string(IMPULSE_SOURCE_DIR) + "/bench/results")) {
    if (e.path().extension() != ".md") continue;
    ++notes;
    EXPECT_NE(index.find("(../bench/results/" + e.path().filename().string() + ")"), std::string::npos)
        << "docs/results.md does not list bench/results/" << e.path().filename().string();
  }
  EXPECT_GT(notes, 0);
}

}  // namespace
}  // namespace impulse
