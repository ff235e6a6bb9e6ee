// JSON numbers as grammar trees: integers in an int64 range (exact, by the classic digit-range
// construction), and numbers with integer-valued bounds. Unbounded forms are bounded in length
// so generation always ends: at most 19 integer digits, 16 fraction digits, 3 exponent digits.
#pragma once
#include <cstdint>
#include <optional>

#include "grammar/ast.h"

namespace qinfer::grammar {

inline constexpr int kMaxIntDigits = 19;
inline constexpr int kMaxFracDigits = 16;

// An integer n with lo <= n <= hi (nullopt: unbounded on that side, up to 19 digits).
NodePtr json_integer(std::optional<int64_t> lo, std::optional<int64_t> hi);

struct NumberBound {
  int64_t value;
  bool exclusive;
};
// A JSON number (fraction and exponent allowed when unbounded; with a bound, no exponent).
NodePtr json_number(std::optional<NumberBound> lo, std::optional<NumberBound> hi);

}  // namespace qinfer::grammar
