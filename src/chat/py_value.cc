#include "chat/py_value.h"

#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "chat/text_util.h"
#include "util/py_escape.h"
#include "util/py_format.h"
#include "util/py_json_writer.h"

namespace qinfer::chat {

PyValue PyValue::boolean(bool v) {
  PyValue p;
  p.kind = Kind::kBool;
  p.b = v;
  return p;
}

PyValue PyValue::integer(std::string digits) {
  PyValue p;
  p.kind = Kind::kInt;
  p.s = std::move(digits);
  return p;
}

PyValue PyValue::floating(double v) {
  PyValue p;
  p.kind = Kind::kFloat;
  p.f = v;
  return p;
}

PyValue PyValue::str(std::string v) {
  PyValue p;
  p.kind = Kind::kStr;
  p.s = std::move(v);
  return p;
}

PyValue PyValue::unserializable() {
  PyValue p;
  p.kind = Kind::kUnserializable;
  return p;
}

namespace {

bool numeric(const PyValue& v) {
  return v.kind == PyValue::Kind::kBool || v.kind == PyValue::Kind::kInt || v.kind == PyValue::Kind::kFloat;
}

double as_double(const PyValue& v) {
  if (v.kind == PyValue::Kind::kBool) return v.b ? 1.0 : 0.0;
  if (v.kind == PyValue::Kind::kInt) return std::strtod(v.s.c_str(), nullptr);
  return v.f;
}

}  // namespace

bool py_key_equal(const PyValue& a, const PyValue& b) {
  using K = PyValue::Kind;
  if (numeric(a) && numeric(b)) {
    if (a.kind == K::kInt && b.kind == K::kInt) return a.s == b.s;
    return as_double(a) == as_double(b);
  }
  if (a.kind != b.kind) return false;
  switch (a.kind) {
    case K::kNone:
      return true;
    case K::kStr:
      return a.s == b.s;
    case K::kTuple:
      if (a.items.size() != b.items.size()) return false;
      for (size_t i = 0; i < a.items.size(); ++i)
        if (!py_key_equal(a.items[i], b.items[i])) return false;
      return true;
    default:
      return false;
  }
}

void PyValue::dict_set(PyValue key, PyValue value) {
  for (auto& [k, v] : entries) {
    if (py_key_equal(k, key)) {
      v = std::move(value);
      return;
    }
  }
  entries.push_back(Entry{std::move(key), std::move(value)});
}

std::string py_int_of_double(double v) {
  v = std::trunc(v);
  if (std::fabs(v) < 9.0e18) return std::to_string(static_cast<long long>(v));
  // Exact decimal of mantissa * 2^exp by repeated doubling of a little-endian digit string.
  int exp = 0;
  const double m = std::frexp(std::fabs(v), &exp);  // |v| = m * 2^exp, m in [0.5, 1)
  unsigned long long mant = static_cast<unsigned long long>(std::ldexp(m, 53));
  exp -= 53;
  std::string d;  // reversed digits
  for (; mant; mant /= 10) d += char('0' + mant % 10);
  for (int k = 0; k < exp; ++k) {
    int carry = 0;
    for (char& c : d) {
      const int x = (c - '0') * 2 + carry;
      c = char('0' + x % 10);
      carry = x / 10;
    }
    if (carry) d += char('0' + carry);
  }
  std::string out = v < 0 ? "-" : "";
  out.append(d.rbegin(), d.rend());
  return out;
}

void py_json_dump_string(std::string& out, std::string_view s) { PyJsonWriter(out).string(s); }

namespace {

// json.dumps's walk over a PyValue; every spelling is PyJsonWriter's.
void dump(PyJsonWriter& w, const PyValue& v) {
  using K = PyValue::Kind;
  switch (v.kind) {
    case K::kNone: w.null(); return;
    case K::kBool: w.boolean(v.b); return;
    case K::kInt: w.integer(v.s); return;
    case K::kFloat: w.floating(v.f); return;
    case K::kStr: w.string(v.s); return;
    case K::kList:
    case K::kTuple:
      w.begin_list();
      for (const PyValue& item : v.items) {
        w.item();
        dump(w, item);
      }
      w.end_list();
      return;
    case K::kDict:
      w.begin_dict();
      for (const PyValue::Entry& e : v.entries) {
        const PyValue& k = e.first;
        w.item();
        // Keys become strings: str as is, the other scalars as json.dumps spells them.
        switch (k.kind) {
          case K::kStr: w.string(k.s); break;
          case K::kInt: w.string(k.s); break;
          case K::kBool: w.string(k.b ? "true" : "false"); break;
          case K::kNone: w.string("null"); break;
          case K::kFloat: w.string(py_json_float(k.f)); break;
          default: throw JsonDumpError("keys must be str, int, float, bool or None");
        }
        w.key_end();
        dump(w, e.second);
      }
      w.end_dict();
      return;
    case K::kUnserializable: throw JsonDumpError("object is not JSON serializable");
  }
}

// Removes Python's digit-group underscores: only single ones between two digits are allowed.
std::optional<std::string> strip_underscores(std::string_view s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '_') {
      const bool ok = i > 0 && i + 1 < s.size() && std::isdigit(static_cast<unsigned char>(s[i - 1])) &&
                      std::isdigit(static_cast<unsigned char>(s[i + 1]));
      if (!ok) return std::nullopt;
      continue;
    }
    out += s[i];
  }
  return out;
}

bool ieq(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i)
    if (std::tolower(static_cast<unsigned char>(a[i])) != b[i]) return false;
  return true;
}

}  // namespace

std::string py_json_dumps(const PyValue& v) {
  std::string out;
  PyJsonWriter w(out);
  dump(w, v);
  return out;
}

std::optional<PyValue> py_int(std::string_view s) {
  s = py_strip(s);
  bool neg = false;
  if (!s.empty() && (s[0] == '+' || s[0] == '-')) {
    neg = s[0] == '-';
    s.remove_prefix(1);
  }
  if (s.empty()) return std::nullopt;
  auto digits = strip_underscores(s);
  if (!digits || digits->empty()) return std::nullopt;
  for (char c : *digits)
    if (c < '0' || c > '9') return std::nullopt;
  const size_t nz = digits->find_first_not_of('0');
  if (nz == std::string::npos) return PyValue::integer("0");
  return PyValue::integer((neg ? "-" : "") + digits->substr(nz));
}

std::optional<double> py_float(std::string_view s) {
  s = py_strip(s);
  std::string_view body = s;
  bool neg = false;
  if (!body.empty() && (body[0] == '+' || body[0] == '-')) {
    neg = body[0] == '-';
    body.remove_prefix(1);
  }
  if (ieq(body, "inf") || ieq(body, "infinity")) return neg ? -HUGE_VAL : HUGE_VAL;
  if (ieq(body, "nan")) return neg ? -NAN : NAN;
  auto clean = strip_underscores(body);
  if (!clean || clean->empty()) return std::nullopt;
  // digits [. digits] [e [sign] digits], with at least one mantissa digit.
  const std::string& t = *clean;
  size_t i = 0, mant_digits = 0;
  while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i, ++mant_digits;
  if (i < t.size() && t[i] == '.') {
    ++i;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i, ++mant_digits;
  }
  if (mant_digits == 0) return std::nullopt;
  if (i < t.size() && (t[i] == 'e' || t[i] == 'E')) {
    ++i;
    if (i < t.size() && (t[i] == '+' || t[i] == '-')) ++i;
    size_t exp_digits = 0;
    while (i < t.size() && std::isdigit(static_cast<unsigned char>(t[i]))) ++i, ++exp_digits;
    if (exp_digits == 0) return std::nullopt;
  }
  if (i != t.size()) return std::nullopt;
  const double v = std::strtod(t.c_str(), nullptr);  // overflow gives inf, like Python
  return neg ? -v : v;
}

}  // namespace qinfer::chat
