#include "io/qps.h"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <utility>

#include "solvers/error.h"

namespace impulse {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();
constexpr double kInfinite = 1e20;  // a value this large is infinite (qps.h)

enum class Section { kNone, kName, kRows, kColumns, kRhs, kRanges, kBounds, kQuadObj, kQMatrix, kObjSense, kEnd };

struct Entry {
  int line;
  double value;
};

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  QpsProblem read(long long max_dense_entries) {
    std::ifstream in(path_);
    if (!in) throw Error(path_ + ": cannot open (" + std::string(std::strerror(errno)) + ")");
    std::string text;
    Section section = Section::kNone;
    while (std::getline(in, text)) {
      ++line_;
      if (!text.empty() && text.back() == '\r') text.pop_back();
      if (text.empty() || text[0] == '*') continue;
      std::vector<std::string> f = split(text);
      if (f.empty()) continue;
      const bool indented = text[0] == ' ' || text[0] == '\t';
      const Section s = indented ? Section::kNone : header(f);
      if (s != Section::kNone) {
        section = s;
        if (s == Section::kName) problem_.name = f.size() > 1 ? f[1] : "";
        if (s == Section::kQMatrix && f.size() > 1 && f[0] == "QSECTION" && f[1] != objective_)
          fail("QSECTION " + f[1] + ": quadratic constraints are not supported (only the objective's)");
        if (s == Section::kObjSense && f.size() > 1) objsense(f[1]);
        if (s == Section::kEnd) break;
        continue;
      }
      switch (section) {
        case Section::kRows: row(f); break;
        case Section::kColumns: column(f); break;
        case Section::kRhs: rhs(f, false); break;
        case Section::kRanges: rhs(f, true); break;
        case Section::kBounds: bound(f); break;
        case Section::kQuadObj: quad(f, false); break;
        case Section::kQMatrix: quad(f, true); break;
        case Section::kObjSense: objsense(f[0]); break;
        default: fail("'" + f[0] + "' outside a section (expected NAME, ROWS, COLUMNS, ...)");
      }
    }
    if (section != Section::kEnd) {
      line_ = 0;
      fail("no ENDATA: the file is truncated");
    }
    return finish(max_dense_entries);
  }

 private:
  [[noreturn]] void fail(const std::string& what) const {
    throw Error(line_ > 0 ? path_ + ":" + std::to_string(line_) + ": " + what : path_ + ": " + what);
  }

  static std::vector<std::string> split(const std::string& s) {
    std::vector<std::string> out;
    std::istringstream is(s);
    for (std::string w; is >> w;) out.push_back(w);
    return out;
  }

  // a section's header line, or kNone for a data line (free format may start
  // those in column 1 too: a header is its keyword alone, but for NAME, QSECTION
  // and OBJSENSE, which may carry one more field)
  Section header(const std::vector<std::string>& f) const {
    const std::string& k = f[0];
    if (k == "NAME") return Section::kName;
    if (k == "QCMATRIX") fail("QCMATRIX: quadratic constraints are not supported");
    if (k == "QSECTION") return Section::kQMatrix;
    if (k == "OBJSENSE") return f.size() <= 2 ? Section::kObjSense : Section::kNone;
    if (f.size() > 1) return Section::kNone;
    if (k == "ROWS") return Section::kRows;
    if (k == "COLUMNS") return Section::kColumns;
    if (k == "RHS") return Section::kRhs;
    if (k == "RANGES") return Section::kRanges;
    if (k == "BOUNDS") return Section::kBounds;
    if (k == "QUADOBJ") return Section::kQuadObj;
    if (k == "QMATRIX") return Section::kQMatrix;
    if (k == "ENDATA") return Section::kEnd;
    if (k == "SOS" || k == "CSECTION" || k == "INDICATORS")
      fail(k + ": not a QP section (only NAME, ROWS, COLUMNS, RHS, RANGES, BOUNDS, QUADOBJ, QMATRIX)");
    return Section::kNone;
  }

  double number(const std::string& s) const {
    errno = 0;
    char* end = nullptr;
    const double v = std::strtod(s.c_str(), &end);
    if (end == s.c_str() || *end != '\0' || std::isnan(v)) fail("'" + s + "' is not a number");
    if (std::isinf(v) || std::fabs(v) >= kInfinite) return v > 0 ? kInf : -kInf;
    return v;
  }

  void objsense(const std::string& s) {
    if (s == "MIN" || s == "MINIMIZE") return;
    if (s == "MAX" || s == "MAXIMIZE") fail("OBJSENSE MAX: only minimization is supported");
    fail("OBJSENSE '" + s + "': expected MIN");
  }

  void row(const std::vector<std::string>& f) {
    if (f.size() != 2) fail("a ROWS line is TYPE NAME, got " + std::to_string(f.size()) + " fields");
    const std::string& type = f[0];
    const std::string& name = f[1];
    if (row_index_.count(name) || free_rows_.count(name) || name == objective_)
      fail("row '" + name + "' is defined twice");
    if (type == "N") {
      if (objective_.empty()) objective_ = name;
      else free_rows_.insert(name);
      return;
    }
    if (type != "E" && type != "L" && type != "G") fail("row type '" + type + "' (expected N, E, L or G)");
    row_index_[name] = static_cast<int>(row_type_.size());
    row_type_.push_back(type[0]);
    problem_.row_names.push_back(name);
  }

  int var(const std::string& name, bool create) {
    auto it = var_index_.find(name);
    if (it != var_index_.end()) return it->second;
    if (!create) fail("variable '" + name + "' is not in COLUMNS");
    const int j = static_cast<int>(problem_.var_names.size());
    var_index_[name] = j;
    problem_.var_names.push_back(name);
    return j;
  }

  // -1: the objective, -2: a free row (dropped), else the constraint row
  int row_of(const std::string& name) const {
    if (name == objective_) return -1;
    if (free_rows_.count(name)) return -2;
    auto it = row_index_.find(name);
    if (it == row_index_.end()) fail("row '" + name + "' is not in ROWS");
    return it->second;
  }

  void column(const std::vector<std::string>& f) {
    if (f.size() >= 2 && f[1] == "'MARKER'") fail("integer markers ('MARKER'): integer variables are not supported");
    if (f.size() != 3 && f.size() != 5)
      fail("a COLUMNS line is COLUMN ROW VALUE [ROW VALUE], got " + std::to_string(f.size()) + " fields");
    const int j = var(f[0], true);
    for (size_t k = 1; k + 1 < f.size(); k += 2) {
      const int i = row_of(f[k]);
      const double v = number(f[k + 1]);
      if (std::isinf(v)) fail("coefficient of '" + f[0] + "' in row '" + f[k] + "' is infinite");
      if (i == -2) continue;
      if (i == -1) {
        if (!c_.emplace(j, Entry{line_, v}).second)
          fail("objective coefficient of '" + f[0] + "' given twice");
      } else if (!a_.emplace(std::make_pair(i, j), Entry{line_, v}).second) {
        fail("coefficient of '" + f[0] + "' in row '" + f[k] + "' given twice");
      }
    }
  }

  // RHS or RANGES: [SET] ROW VALUE [ROW VALUE]
  void rhs(const std::vector<std::string>& f, bool ranges) {
    const char* what = ranges ? "RANGES" : "RHS";
    size_t k0;
    if (f.size() == 3 || f.size() == 5) k0 = 1;
    else if (f.size() == 2 || f.size() == 4) k0 = 0;
    else fail(std::string("a ") + what + " line is [SET] ROW VALUE [ROW VALUE], got " +
              std::to_string(f.size()) + " fields");
    for (size_t k = k0; k + 1 < f.size(); k += 2) {
      const int i = row_of(f[k]);
      const double v = number(f[k + 1]);
      if (i == -2) continue;
      if (i == -1) {
        if (ranges) fail("RANGES on the objective row '" + f[k] + "'");
        if (std::isinf(v)) fail("the objective's constant is infinite");
        if (has_c0_) fail("the objective row's RHS given twice");
        has_c0_ = true;
        c0_ = -v;
        continue;
      }
      auto& map = ranges ? range_ : rhs_;
      if (ranges && std::isinf(v)) fail("range of row '" + f[k] + "' is infinite");
      if (!map.emplace(i, Entry{line_, v}).second)
        fail(std::string(what) + " of row '" + f[k] + "' given twice");
    }
  }

  void bound(const std::vector<std::string>& f) {
    if (f.empty()) return;
    const std::string& type = f[0];
    if (type == "BV" || type == "LI" || type == "UI" || type == "SC")
      fail("bound type " + type + ": integer and semi-continuous variables are not supported");
    const bool valued = type == "UP" || type == "LO" || type == "FX";
    const bool valueless = type == "FR" || type == "MI" || type == "PL";
    if (!valued && !valueless) fail("bound type '" + type + "' (expected UP, LO, FX, FR, MI or PL)");
    // TYPE [SET] COLUMN [VALUE]
    size_t col;
    if (valued) {
      if (f.size() == 4) col = 2;
      else if (f.size() == 3) col = 1;
      else fail("a " + type + " bound is " + type + " [SET] COLUMN VALUE, got " + std::to_string(f.size()) + " fields");
    } else {
      if (f.size() == 3) col = 2;
      else if (f.size() == 2) col = 1;
      else if (f.size() == 4) col = 2;  // a value some writers add to FR/MI/PL: ignored
      else fail("a " + type + " bound is " + type + " [SET] COLUMN, got " + std::to_string(f.size()) + " fields");
    }
    const int j = var(f[col], false);
    Bound& b = bounds_[j];
    const double v = valued ? number(f[col + 1]) : 0.0;
    if (type == "UP") {
      if (b.upper_set) fail("upper bound of '" + f[col] + "' given twice");
      b.upper = v;
      b.upper_set = true;
      if (v < 0 && !b.lower_set) b.lower = -kInf;
    } else if (type == "LO") {
      if (b.lower_set) fail("lower bound of '" + f[col] + "' given twice");
      b.lower = v;
      b.lower_set = true;
    } else if (type == "FX") {
      if (b.lower_set || b.upper_set) fail("'" + f[col] + "' fixed after another bound");
      if (std::isinf(v)) fail("'" + f[col] + "' fixed at an infinite value");
      b.lower = b.upper = v;
      b.lower_set = b.upper_set = true;
    } else if (type == "FR") {
      if (b.lower_set || b.upper_set) fail("'" + f[col] + "' made free after another bound");
      b.lower = -kInf;
      b.upper = kInf;
      b.lower_set = b.upper_set = true;
    } else if (type == "MI") {
      if (b.lower_set) fail("lower bound of '" + f[col] + "' given twice");
      b.lower = -kInf;
      b.lower_set = true;
    } else {  // PL
      if (b.upper_set) fail("upper bound of '" + f[col] + "' given twice");
      b.upper = kInf;
      b.upper_set = true;
    }
  }

  void quad(const std::vector<std::string>& f, bool full) {
    if (f.size() != 3) fail("a quadratic line is COLUMN COLUMN VALUE, got " + std::to_string(f.size()) + " fields");
    const int i = var(f[0], false), j = var(f[1], false);
    const double v = number(f[2]);
    if (std::isinf(v)) fail("Q entry (" + f[0] + ", " + f[1] + ") is infinite");
    if (!full) {  // one triangle: (i, j) and (j, i) are the same entry
      const auto key = std::make_pair(std::min(i, j), std::max(i, j));
      if (!q_.emplace(key, Entry{line_, v}).second)
        fail("Q entry (" + f[0] + ", " + f[1] + ") given twice (QUADOBJ holds one triangle)");
      return;
    }
    if (!qfull_.emplace(std::make_pair(i, j), Entry{line_, v}).second)
      fail("Q entry (" + f[0] + ", " + f[1] + ") given twice");
  }

  QpsProblem finish(long long max_dense_entries) {
    line_ = 0;
    if (objective_.empty()) fail("no objective row (an N row in ROWS)");
    QpsProblem& p = problem_;
    p.n = static_cast<int>(p.var_names.size());
    p.m = static_cast<int>(row_type_.size());
    if (p.n == 0) fail("no variables (COLUMNS is empty)");
    const long long entries = 1LL * p.n * p.n + 1LL * p.m * p.n;
    if (entries > max_dense_entries)
      fail("n = " + std::to_string(p.n) + ", m = " + std::to_string(p.m) + ": too large to hold dense (" +
           std::to_string(entries) + " entries, limit " + std::to_string(max_dense_entries) + ")");
    const size_t n = size_t(p.n), m = size_t(p.m);
    p.Q.assign(n * n, 0.0);
    p.c.assign(n, 0.0);
    p.A.assign(m * n, 0.0);
    p.c0 = c0_;
    for (const auto& [j, e] : c_) p.c[size_t(j)] = e.value;
    for (const auto& [ij, e] : a_) p.A[size_t(ij.first) * n + size_t(ij.second)] = e.value;
    for (const auto& [ij, e] : q_) {
      p.Q[size_t(ij.first) * n + size_t(ij.second)] = e.value;
      p.Q[size_t(ij.second) * n + size_t(ij.first)] = e.value;
    }
    for (const auto& [ij, e] : qfull_) {
      const auto mirror = qfull_.find(std::make_pair(ij.second, ij.first));
      const double other = mirror == qfull_.end() ? 0.0 : mirror->second.value;
      if (other != e.value) {
        line_ = e.line;
        fail("QMATRIX is not symmetric: (" + p.var_names[size_t(ij.first)] + ", " +
             p.var_names[size_t(ij.second)] + ") is " + std::to_string(e.value) + " but its mirror " +
             std::to_string(other) + " (QMATRIX holds both triangles; QUADOBJ one)");
      }
      p.Q[size_t(ij.first) * n + size_t(ij.second)] = e.value;
    }
    p.row_lower.assign(m, 0.0);
    p.row_upper.assign(m, 0.0);
    for (size_t i = 0; i < m; ++i) {
      const auto r = rhs_.find(int(i));
      const double b = r == rhs_.end() ? 0.0 : r->second.value;
      double lo = b, up = b;
      if (row_type_[i] == 'L') lo = -kInf;
      if (row_type_[i] == 'G') up = kInf;
      const auto g = range_.find(int(i));
      if (g != range_.end()) {
        const double R = g->second.value;
        if (row_type_[i] == 'E') (R >= 0 ? up : lo) = b + R;
        else if (row_type_[i] == 'L') lo = b - std::fabs(R);
        else up = b + std::fabs(R);
      }
      if (std::isinf(b) && row_type_[i] == 'E') {
        line_ = r->second.line;
        fail("equality row '" + p.row_names[i] + "' has an infinite right-hand side");
      }
      p.row_lower[i] = lo;
      p.row_upper[i] = up;
    }
    p.col_lower.assign(n, 0.0);
    p.col_upper.assign(n, kInf);
    for (const auto& [j, b] : bounds_) {
      p.col_lower[size_t(j)] = b.lower;
      p.col_upper[size_t(j)] = b.upper;
      if (b.lower > b.upper)
        fail("variable '" + p.var_names[size_t(j)] + "' has lower bound " + std::to_string(b.lower) +
             " above its upper bound " + std::to_string(b.upper));
    }
    return std::move(p);
  }

  struct Bound {
    double lower = 0, upper = kInf;
    bool lower_set = false, upper_set = false;
  };

  std::string path_;
  int line_ = 0;
  QpsProblem problem_;
  std::string objective_;
  std::set<std::string> free_rows_;
  std::unordered_map<std::string, int> row_index_, var_index_;
  std::vector<char> row_type_;
  std::map<int, Entry> c_, rhs_, range_;
  std::map<std::pair<int, int>, Entry> a_, q_, qfull_;
  std::map<int, Bound> bounds_;
  double c0_ = 0;
  bool has_c0_ = false;
};

}  // namespace

QpsProblem read_qps(const std::string& path, long long max_dense_entries) {
  return Reader(path).read(max_dense_entries);
}

}  // namespace impulse
