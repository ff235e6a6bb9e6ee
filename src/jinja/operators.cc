// Python arithmetic on template values: + - * / // % ** and unary +/-,
// plus printf-style `fmt % args` formatting.
#include <cmath>
#include <cstdio>

#include "jinja/builtins.h"
#include "jinja/py_string.h"
#include "jinja/template_error.h"

namespace qinfer::jinja {
namespace {

bool int_like(const Value& v) { return v.is_int() || v.is_bool(); }

[[noreturn]] void unsupported(const std::string& op, const Value& a, const Value& b) {
  if (op == "+" && (a.is_string() || a.is_list()))
    throw EvalError(cat("TypeError: can only concatenate ", type_name(a), " (not \"", type_name(b), "\") to ",
                        type_name(a)));
  throw EvalError(cat("TypeError: unsupported operand type(s) for ", op, ": '", type_name(a), "' and '",
                      type_name(b), "'"));
}

Value int_result(bool overflow, int64_t r) {
  if (overflow) throw EvalError("OverflowError: integer result does not fit in 64 bits");
  return Value(r);
}

int64_t floordiv(int64_t a, int64_t b) {
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

double py_fmod(double a, double b) {
  double m = std::fmod(a, b);
  if (m != 0 && ((m < 0) != (b < 0))) m += b;
  return m;
}

Value repeat(const Value& seq, int64_t n) {
  if (seq.is_string()) {
    const std::string& once = seq.str();
    if (n > 0) check_built_size(n, "operator '*'", static_cast<int64_t>(once.size()));
    std::string out;
    for (int64_t i = 0; i < n; ++i) out += once;
    return Value(std::move(out));
  }
  std::vector<Value> items, once = iterate(seq);
  if (n > 0) check_built_size(n, "operator '*'", static_cast<int64_t>(once.size()));
  for (int64_t i = 0; i < n; ++i) items.insert(items.end(), once.begin(), once.end());
  return make_list(items, "operator '*'", seq.is_tuple());
}

}  // namespace

Value negate(const Value& a, bool minus) {
  if (a.is_undefined()) fail_undefined(a);
  if (int_like(a)) return Value(minus ? -a.as_int() : a.as_int());
  if (a.is_float()) return Value(minus ? -a.as_double() : a.as_double());
  throw EvalError(cat("TypeError: bad operand type for unary ", minus ? "-" : "+", ": '", type_name(a), "'"));
}

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  bool nums = a.is_number() && b.is_number();
  bool ints = int_like(a) && int_like(b);
  int64_t r = 0;
  if (op == "+") {
    if (ints) { bool of = __builtin_add_overflow(a.as_int(), b.as_int(), &r); return int_result(of, r); }
    if (nums) return Value(a.as_double() + b.as_double());
    if (a.is_string() && b.is_string()) return Value(a.str() + b.str());
    if (a.is_list() && b.is_list() && a.is_tuple() == b.is_tuple()) {
      std::vector<Value> items = iterate(a), tail = iterate(b);
      items.insert(items.end(), tail.begin(), tail.end());
      return make_list(items, "operator '+'", a.is_tuple());
    }
    unsupported(op, a, b);
  }
  if (op == "-") {
    if (ints) { bool of = __builtin_sub_overflow(a.as_int(), b.as_int(), &r); return int_result(of, r); }
    if (nums) return Value(a.as_double() - b.as_double());
    unsupported(op, a, b);
  }
  if (op == "*") {
    if (ints) { bool of = __builtin_mul_overflow(a.as_int(), b.as_int(), &r); return int_result(of, r); }
    if (nums) return Value(a.as_double() * b.as_double());
    if ((a.is_string() || a.is_list()) && int_like(b)) return repeat(a, b.as_int());
    if ((b.is_string() || b.is_list()) && int_like(a)) return repeat(b, a.as_int());
    unsupported(op, a, b);
  }
  if (op == "/") {
    if (!nums) unsupported(op, a, b);
    if (b.as_double() == 0) throw EvalError("ZeroDivisionError: division by zero");
    return Value(a.as_double() / b.as_double());
  }
  if (op == "//") {
    if (!nums) unsupported(op, a, b);
    if (b.as_double() == 0) throw EvalError("ZeroDivisionError: integer division or modulo by zero");
    if (ints) return Value(floordiv(a.as_int(), b.as_int()));
    return Value(std::floor(a.as_double() / b.as_double()));
  }
  if (op == "%") {
    if (a.is_string()) return Value(percent_format(a.str(), b));
    if (!nums) unsupported(op, a, b);
    if (b.as_double() == 0) throw EvalError("ZeroDivisionError: integer division or modulo by zero");
    if (ints) {
      int64_t x = a.as_int(), y = b.as_int();
      return Value(x - floordiv(x, y) * y);
    }
    return Value(py_fmod(a.as_double(), b.as_double()));
  }
  if (op == "**") {
    if (!nums) unsupported(op, a, b);
    if (ints && b.as_int() >= 0) {
      int64_t base = a.as_int(), e = b.as_int(), acc = 1;
      bool of = false;
      if (base == 0) acc = e == 0 ? 1 : 0;
      else if (base == 1) acc = 1;
      else if (base == -1) acc = e % 2 ? -1 : 1;
      else if (e >= 64) of = true;   // |base| >= 2: past 2^63 (no loop over a huge exponent)
      else while (e-- > 0) of |= __builtin_mul_overflow(acc, base, &acc);
      return int_result(of, acc);
    }
    return Value(std::pow(a.as_double(), b.as_double()));
  }
  throw EvalError("unknown operator " + op);
}

std::string percent_format(const std::string& fmt, const Value& args) {
  // As Python: a tuple holds the arguments; any other value is the one argument, and a dict
  // (or a list, which Python also takes for a mapping) may be left unused.
  std::vector<Value> list;
  bool mapping = args.is_dict();
  bool may_be_unused = mapping || (args.is_list() && !args.is_tuple());
  if (args.is_tuple()) list = iterate(args);
  else list.push_back(args);
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < fmt.size(); ++i) {
    if (fmt[i] != '%') { out += fmt[i]; continue; }
    if (++i >= fmt.size()) throw EvalError("ValueError: incomplete format");
    Value arg;
    bool have = false;
    if (fmt[i] == '(') {
      size_t close = fmt.find(')', i);
      if (close == std::string::npos || !mapping) throw EvalError("TypeError: format requires a mapping");
      arg = args.member(fmt.substr(i + 1, close - i - 1));
      if (arg.is_undefined()) throw EvalError("KeyError: " + py::repr(fmt.substr(i + 1, close - i - 1)));
      have = true;
      i = close + 1;
    }
    std::string spec = "%";
    while (i < fmt.size() && std::string("-+ #0123456789.").find(fmt[i]) != std::string::npos) spec += fmt[i++];
    if (i >= fmt.size()) throw EvalError("ValueError: incomplete format");
    char conv = fmt[i];
    if (conv == '%') { out += '%'; continue; }
    if (!have) {
      if (next >= list.size()) throw EvalError("TypeError: not enough arguments for format string");
      arg = list[next++];
    }
    char buf[512];
    switch (conv) {
      case 's': case 'r': {
        std::string s = conv == 's' ? to_str(arg) : repr(arg);
        if (spec == "%") out += s;
        else {
          int width = std::atoi(spec.c_str() + 1 + (spec.size() > 1 && spec[1] == '-' ? 1 : 0));
          size_t len = py::length(s);
          std::string pad(len < static_cast<size_t>(width) ? width - len : 0, ' ');
          out += spec.find('-') != std::string::npos ? s + pad : pad + s;
        }
        break;
      }
      case 'd': case 'i': case 'x': case 'X': case 'o': {
        if (!arg.is_number()) throw EvalError(cat("TypeError: %", conv, " format: a number is required, not ", type_name(arg)));
        std::snprintf(buf, sizeof buf, (spec + "ll" + (conv == 'i' ? 'd' : conv)).c_str(),
                      static_cast<long long>(arg.as_int()));
        out += buf;
        break;
      }
      case 'f': case 'F': case 'e': case 'E': case 'g': case 'G': {
        if (!arg.is_number()) throw EvalError(cat("TypeError: must be real number, not ", type_name(arg)));
        std::snprintf(buf, sizeof buf, (spec + conv).c_str(), arg.as_double());
        out += buf;
        break;
      }
      default:
        throw EvalError(cat("ValueError: unsupported format character '", conv, "'"));
    }
  }
  if (next < list.size() && !may_be_unused)
    throw EvalError("TypeError: not all arguments converted during string formatting");
  return out;
}

}  // namespace qinfer::jinja
