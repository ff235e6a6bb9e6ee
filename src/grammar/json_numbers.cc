#include "grammar/json_numbers.h"

#include <string>

namespace qinfer::grammar {

namespace {

NodePtr digits(int min, int max) { return repeat(byte_range('0', '9'), min, max); }

// Fixed-width digit strings lo..hi (same length, leading zeros allowed).
NodePtr fixed_width(const std::string& lo, const std::string& hi) {
  if (lo.empty()) return empty();
  const std::string lr = lo.substr(1), hr = hi.substr(1);
  if (lo[0] == hi[0]) return seq({byte_range(uint8_t(lo[0]), uint8_t(lo[0])), fixed_width(lr, hr)});
  const int n = int(lr.size());
  const bool lo_zero = lr.find_first_not_of('0') == std::string::npos;
  const bool hi_nine = hr.find_first_not_of('9') == std::string::npos;
  std::vector<NodePtr> parts;
  char first = lo[0], last = hi[0];
  if (lo_zero) {
    // lo[0] joins the middle range.
  } else {
    parts.push_back(seq({byte_range(uint8_t(lo[0]), uint8_t(lo[0])), fixed_width(lr, std::string(size_t(n), '9'))}));
    ++first;
  }
  if (!hi_nine) --last;
  if (first <= last) parts.push_back(seq({byte_range(uint8_t(first), uint8_t(last)), digits(n, n)}));
  if (!hi_nine) {
    parts.push_back(seq({byte_range(uint8_t(hi[0]), uint8_t(hi[0])), fixed_width(std::string(size_t(n), '0'), hr)}));
  }
  return alt(std::move(parts));
}

// Decimal (no leading zeros) lo..hi, 0 <= lo <= hi.
NodePtr uint_range(uint64_t lo, uint64_t hi) {
  if (lo > hi) return nothing();
  std::string a = std::to_string(lo), b = std::to_string(hi);
  if (a.size() == b.size()) return fixed_width(a, b);
  uint64_t top = 9;
  for (size_t k = 1; k < a.size(); ++k) top = top * 10 + 9;
  return alt({fixed_width(a, std::to_string(top)), uint_range(top + 1, hi)});
}

const uint64_t kMaxMagnitude = 9999999999999999999ull;  // 19 digits

uint64_t magnitude(int64_t v) { return v < 0 ? uint64_t(-(v + 1)) + 1 : uint64_t(v); }

NodePtr frac_any() { return seq({literal("."), digits(1, kMaxFracDigits)}); }
NodePtr frac_zero() { return seq({literal("."), repeat(literal("0"), 1, kMaxFracDigits)}); }
NodePtr frac_nonzero() {
  return seq({literal("."), digits(0, kMaxFracDigits - 1), byte_range('1', '9')});
}

// y >= 0 with lo <= y <= hi (each bound optional / exclusive) as digits[.digits].
NodePtr unsigned_number(std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
  const uint64_t l = lo ? uint64_t(lo->value) : 0;
  const bool lex = lo && lo->exclusive;
  std::vector<NodePtr> parts;
  if (hi && uint64_t(hi->value) < l) return nothing();
  if (hi && uint64_t(hi->value) == l) {
    if (lex || hi->exclusive) return nothing();
    return seq({uint_range(l, l), optional(frac_zero())});
  }
  // Integer part strictly between the bounds: any fraction.
  const uint64_t mid_hi = hi ? uint64_t(hi->value) - 1 : kMaxMagnitude;
  if (l + 1 <= mid_hi) parts.push_back(seq({uint_range(l + 1, mid_hi), optional(frac_any())}));
  // Integer part == lo.
  parts.push_back(seq({uint_range(l, l), lex ? frac_nonzero() : optional(frac_any())}));
  // Integer part == hi.
  if (hi && !hi->exclusive) parts.push_back(seq({uint_range(uint64_t(hi->value), uint64_t(hi->value)), optional(frac_zero())}));
  return alt(std::move(parts));
}

}  // namespace

NodePtr json_integer(std::optional<int64_t> lo, std::optional<int64_t> hi) {
  if (lo && hi && *lo > *hi) return nothing();
  std::vector<NodePtr> parts;
  if (!hi || *hi >= 0) {
    parts.push_back(uint_range(lo && *lo > 0 ? uint64_t(*lo) : 0, hi ? uint64_t(*hi) : kMaxMagnitude));
  }
  if (!lo || *lo < 0) {
    const uint64_t m_lo = hi && *hi < 0 ? magnitude(*hi) : 1;
    const uint64_t m_hi = lo ? magnitude(*lo) : kMaxMagnitude;
    parts.push_back(seq({literal("-"), uint_range(m_lo, m_hi)}));
  }
  return alt(std::move(parts));
}

NodePtr json_number(std::optional<NumberBound> lo, std::optional<NumberBound> hi) {
  if (!lo && !hi) {
    NodePtr intpart = alt({literal("0"), seq({byte_range('1', '9'), digits(0, kMaxIntDigits - 1)})});
    NodePtr exp = seq({byte_set([] {
                         ByteSet s;
                         s.set('e');
                         s.set('E');
                         return s;
                       }()),
                       optional(byte_set([] {
                         ByteSet s;
                         s.set('+');
                         s.set('-');
                         return s;
                       }())),
                       digits(1, 3)});
    return seq({optional(literal("-")), intpart, optional(frac_any()), optional(exp)});
  }
  std::vector<NodePtr> parts;
  // x >= 0 part.
  const bool hi_allows_nonneg = !hi || hi->value > 0 || (hi->value == 0 && !hi->exclusive);
  if (hi_allows_nonneg) {
    std::optional<NumberBound> l;
    if (lo && lo->value >= 0) l = lo;
    parts.push_back(unsigned_number(l, hi));
  }
  // x < 0 part: x = -y, y > 0.
  const bool lo_allows_neg = !lo || lo->value < 0;
  if (lo_allows_neg) {
    std::optional<NumberBound> yl = NumberBound{0, true};
    if (hi && hi->value < 0) yl = NumberBound{-hi->value, hi->exclusive};
    std::optional<NumberBound> yh;
    if (lo) yh = NumberBound{-lo->value, lo->exclusive};
    parts.push_back(seq({literal("-"), unsigned_number(yl, yh)}));
  }
  return alt(std::move(parts));
}

}  // namespace qinfer::grammar
