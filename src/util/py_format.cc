#include "util/py_format.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace qinfer {

std::string py_float_repr(double v) {
  if (std::isnan(v)) return "nan";
  if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
  // Shortest round-trip digits d1.d2d3...e<exp> from to_chars, then Python's layout.
  char buf[64];
  const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::scientific);
  const std::string sci(buf, r.ptr);
  std::string out;
  size_t i = 0;
  if (sci[0] == '-') {
    out = "-";
    i = 1;
  }
  const size_t e_pos = sci.find('e');
  std::string digits;
  for (size_t k = i; k < e_pos; ++k)
    if (sci[k] != '.') digits += sci[k];
  const int exp = std::atoi(sci.c_str() + e_pos + 1);
  if (exp < -4 || exp >= 16) {
    out += digits[0];
    if (digits.size() > 1) out += "." + digits.substr(1);
    char eb[16];
    std::snprintf(eb, sizeof eb, "e%c%02d", exp < 0 ? '-' : '+', std::abs(exp));
    return out + eb;
  }
  if (exp < 0) return out + "0." + std::string(size_t(-exp - 1), '0') + digits;
  const size_t int_len = size_t(exp) + 1;
  if (digits.size() <= int_len) return out + digits + std::string(int_len - digits.size(), '0') + ".0";
  return out + digits.substr(0, int_len) + "." + digits.substr(int_len);
}

std::string py_json_float(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
  return py_float_repr(v);
}

}  // namespace qinfer
