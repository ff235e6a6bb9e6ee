// py_literal_eval: Python's ast.literal_eval into a PyValue (the subset of Python
// literal syntax literal_eval accepts: strings with prefixes and implicit concatenation,
// bytes, int/float/complex numbers, True/False/None, tuples, lists, dicts, sets, unary
// +/- on numbers, comments and newlines inside brackets).
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "chat/py_value.h"
#include "chat/text_util.h"
#include "util/py_escape.h"

namespace qinfer::chat {

namespace {

constexpr int kMaxDepth = 200;  // deeper nesting fails, as Python's parser does

struct Fail {};

class LiteralReader {
 public:
  explicit LiteralReader(std::string_view s) : s_(s) {}

  PyValue document() {
    skip(false);
    PyValue v = tuple_or_expr(0, false);
    skip(false);
    if (i_ != s_.size()) throw Fail{};
    return v;
  }

 private:
  // Skips spaces, tabs, comments and line continuations; newlines too when inside brackets
  // (and trailing newlines at top level, which the caller checks by reaching the end).
  void skip(bool in_brackets) {
    for (;;) {
      if (i_ >= s_.size()) return;
      const char c = s_[i_];
      if (c == ' ' || c == '\t' || c == '\f') {
        ++i_;
      } else if (c == '#') {
        while (i_ < s_.size() && s_[i_] != '\n') ++i_;
      } else if (c == '\\' && i_ + 1 < s_.size() && s_[i_ + 1] == '\n') {
        i_ += 2;
      } else if (c == '\n' || c == '\r') {
        if (!in_brackets && !py_isblank_tail()) return;
        ++i_;
      } else {
        return;
      }
    }
  }
  // At top level a newline is only harmless when nothing but blank lines/comments follow.
  bool py_isblank_tail() const {
    for (size_t k = i_; k < s_.size(); ++k) {
      const char c = s_[k];
      if (c == '#') {
        while (k < s_.size() && s_[k] != '\n') ++k;
        continue;
      }
      if (c != ' ' && c != '\t' && c != '\n' && c != '\r' && c != '\f') return false;
    }
    return true;
  }
  bool peek(char c) const { return i_ < s_.size() && s_[i_] == c; }

  // expr (',' expr)* [','] — a bare tuple is allowed at top level and inside parentheses.
  PyValue tuple_or_expr(int depth, bool in_brackets) {
    PyValue first = expr(depth, in_brackets);
    skip(in_brackets);
    if (!peek(',')) return first;
    PyValue t;
    t.kind = PyValue::Kind::kTuple;
    t.items.push_back(std::move(first));
    while (peek(',')) {
      ++i_;
      skip(in_brackets);
      if (i_ >= s_.size() || peek(')') || (!in_brackets && (s_[i_] == '\n' || s_[i_] == '\r'))) break;
      t.items.push_back(expr(depth, in_brackets));
      skip(in_brackets);
    }
    return t;
  }

  PyValue expr(int depth, bool in_brackets) {
    if (depth > kMaxDepth) throw Fail{};
    skip(in_brackets);
    if (i_ >= s_.size()) throw Fail{};
    const char c = s_[i_];
    if (c == '+' || c == '-') {
      // Unary sign on a number literal only (no nesting), then an optional "+/- complex".
      ++i_;
      skip(in_brackets);
      PyValue n = number_literal();
      if (n.kind == PyValue::Kind::kInt && c == '-') n.s = n.s == "0" ? "0" : "-" + n.s;
      if (n.kind == PyValue::Kind::kFloat && c == '-') n.f = -n.f;
      return complex_tail(std::move(n), in_brackets);
    }
    if (std::isdigit(static_cast<unsigned char>(c)) || (c == '.' && i_ + 1 < s_.size() &&
                                                        std::isdigit(static_cast<unsigned char>(s_[i_ + 1])))) {
      return complex_tail(number_literal(), in_brackets);
    }
    if (c == '(') {
      ++i_;
      skip(true);
      if (peek(')')) {
        ++i_;
        PyValue t;
        t.kind = PyValue::Kind::kTuple;
        return t;
      }
      PyValue first = expr(depth + 1, true);
      skip(true);
      if (peek(')')) {
        ++i_;
        return first;  // parenthesised expression
      }
      if (!peek(',')) throw Fail{};
      PyValue t;
      t.kind = PyValue::Kind::kTuple;
      t.items.push_back(std::move(first));
      while (peek(',')) {
        ++i_;
        skip(true);
        if (peek(')')) break;
        t.items.push_back(expr(depth + 1, true));
        skip(true);
      }
      if (!peek(')')) throw Fail{};
      ++i_;
      return t;
    }
    if (c == '[') {
      ++i_;
      PyValue l;
      l.kind = PyValue::Kind::kList;
      sequence(l.items, ']', depth);
      return l;
    }
    if (c == '{') return brace(depth);
    if (c == '"' || c == '\'' ) return strings(in_brackets);
    if (std::isalpha(static_cast<unsigned char>(c)) || c == '_') {
      size_t j = i_;
      while (j < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[j])) || s_[j] == '_')) ++j;
      const std::string_view word = s_.substr(i_, j - i_);
      if (j < s_.size() && (s_[j] == '\'' || s_[j] == '"') && word.size() <= 2) return strings(in_brackets);
      i_ = j;
      if (word == "True") return PyValue::boolean(true);
      if (word == "False") return PyValue::boolean(false);
      if (word == "None") return PyValue::none();
      if (word == "set") {  // set() is the one call literal_eval allows
        skip(in_brackets);
        if (peek('(')) {
          ++i_;
          skip(true);
          if (peek(')')) {
            ++i_;
            return PyValue::unserializable();
          }
        }
      }
      throw Fail{};
    }
    if (c == '.' && s_.substr(i_).starts_with("...")) {
      i_ += 3;
      return PyValue::unserializable();  // Ellipsis
    }
    throw Fail{};
  }

  void sequence(std::vector<PyValue>& items, char close, int depth) {
    skip(true);
    while (!peek(close)) {
      items.push_back(expr(depth + 1, true));
      skip(true);
      if (peek(',')) {
        ++i_;
        skip(true);
      } else if (!peek(close)) {
        throw Fail{};
      }
    }
    ++i_;
  }

  PyValue brace(int depth) {
    ++i_;
    skip(true);
    PyValue d;
    d.kind = PyValue::Kind::kDict;
    if (peek('}')) {
      ++i_;
      return d;
    }
    PyValue first = expr(depth + 1, true);
    skip(true);
    if (!peek(':')) {
      // A set literal: json.dumps cannot write it, but every element must still be hashable.
      std::vector<PyValue> items{std::move(first)};
      if (peek(',')) {
        ++i_;
        sequence(items, '}', depth);
      } else if (peek('}')) {
        ++i_;
      } else {
        throw Fail{};
      }
      for (const auto& it : items) require_hashable(it);
      return PyValue::unserializable();
    }
    for (;;) {
      ++i_;  // ':'
      PyValue value = expr(depth + 1, true);
      require_hashable(first);
      d.dict_set(std::move(first), std::move(value));
      skip(true);
      if (peek(',')) {
        ++i_;
        skip(true);
      }
      if (peek('}')) {
        ++i_;
        return d;
      }
      first = expr(depth + 1, true);
      skip(true);
      if (!peek(':')) throw Fail{};
    }
  }

  static void require_hashable(const PyValue& v) {
    using K = PyValue::Kind;
    if (v.kind == K::kList || v.kind == K::kDict) throw Fail{};  // TypeError: unhashable
    if (v.kind == K::kTuple)
      for (const auto& it : v.items) require_hashable(it);
  }

  // After a real number: "+ 2j" / "- 2j" makes a complex value.
  PyValue complex_tail(PyValue n, bool in_brackets) {
    const size_t save = i_;
    skip(in_brackets);
    if ((peek('+') || peek('-')) && n.kind != PyValue::Kind::kUnserializable) {
      ++i_;
      skip(in_brackets);
      if (i_ < s_.size() && (std::isdigit(static_cast<unsigned char>(s_[i_])) || s_[i_] == '.')) {
        PyValue im = number_literal();
        if (im.kind == PyValue::Kind::kUnserializable) return im;  // complex
      }
      throw Fail{};
    }
    i_ = save;
    return n;
  }

  PyValue number_literal() {
    const size_t start = i_;
    auto is_word = [&](size_t k) {
      return k < s_.size() && (std::isalnum(static_cast<unsigned char>(s_[k])) || s_[k] == '_' || s_[k] == '.');
    };
    size_t j = i_;
    while (is_word(j) || ((s_[j - 1] == 'e' || s_[j - 1] == 'E') && j < s_.size() && (s_[j] == '+' || s_[j] == '-') &&
                          !(s_[start] == '0' && start + 1 < s_.size() && (s_[start + 1] == 'x' || s_[start + 1] == 'X'))))
      ++j;
    std::string_view tok = s_.substr(start, j - start);
    i_ = j;
    if (tok.empty()) throw Fail{};
    if (tok.back() == 'j' || tok.back() == 'J') {
      if (!py_float(tok.substr(0, tok.size() - 1))) throw Fail{};
      return PyValue::unserializable();
    }
    if (tok.size() > 2 && tok[0] == '0' && std::isalpha(static_cast<unsigned char>(tok[1]))) {
      const char b = char(std::tolower(static_cast<unsigned char>(tok[1])));
      const int base = b == 'x' ? 16 : b == 'o' ? 8 : b == 'b' ? 2 : 0;
      if (!base) throw Fail{};
      std::string_view rest = tok.substr(2);
      if (!rest.empty() && rest[0] == '_') rest.remove_prefix(1);
      std::string digits;
      for (size_t k = 0; k < rest.size(); ++k) {
        if (rest[k] == '_' && k > 0 && k + 1 < rest.size() && rest[k - 1] != '_' && rest[k + 1] != '_') continue;
        const int h = hex_val(rest[k]);
        if (h < 0 || h >= base) throw Fail{};
        digits += rest[k];
      }
      if (digits.empty()) throw Fail{};
      // Convert to decimal with schoolbook arithmetic (values may exceed 64 bits).
      std::string dec = "0";
      for (char ch : digits) {
        int carry = hex_val(ch);
        for (auto it = dec.rbegin(); it != dec.rend(); ++it) {
          const int x = (*it - '0') * base + carry;
          *it = char('0' + x % 10);
          carry = x / 10;
        }
        while (carry) {
          dec.insert(dec.begin(), char('0' + carry % 10));
          carry /= 10;
        }
      }
      const size_t nz = dec.find_first_not_of('0');
      return PyValue::integer(nz == std::string::npos ? "0" : dec.substr(nz));
    }
    const bool looks_float = tok.find_first_of(".eE") != std::string_view::npos;
    if (looks_float) {
      auto f = py_float(tok);
      if (!f) throw Fail{};
      return PyValue::floating(*f);
    }
    // Decimal integer: "0", "00", or no leading zero.
    auto n = py_int(tok);
    if (!n) throw Fail{};
    if (tok[0] == '0' && n->s != "0") throw Fail{};
    return *n;
  }

  // One or more adjacent string literals (implicit concatenation); all str or all bytes.
  PyValue strings(bool in_brackets) {
    std::string out;
    int kind = -1;  // 0 str, 1 bytes
    for (;;) {
      skip(in_brackets);
      size_t j = i_;
      bool raw = false, bytes = false;
      while (j < s_.size() && std::isalpha(static_cast<unsigned char>(s_[j]))) {
        const char p = char(std::tolower(static_cast<unsigned char>(s_[j])));
        if (p == 'r') raw = true;
        else if (p == 'b') bytes = true;
        else if (p != 'u') throw Fail{};  // f-strings are not literals
        ++j;
      }
      if (j >= s_.size() || (s_[j] != '\'' && s_[j] != '"')) {
        if (kind < 0) throw Fail{};
        break;
      }
      if (j - i_ > 2) throw Fail{};
      if (kind >= 0 && kind != int(bytes)) throw Fail{};  // cannot mix bytes and str
      kind = int(bytes);
      i_ = j;
      one_string(out, raw);
    }
    return kind == 1 ? PyValue::unserializable() : PyValue::str(std::move(out));
  }

  void one_string(std::string& out, bool raw) {
    const char q = s_[i_];
    const bool triple = s_.substr(i_).starts_with(std::string(3, q));
    i_ += triple ? 3 : 1;
    for (;;) {
      if (i_ >= s_.size()) throw Fail{};
      const char c = s_[i_];
      if (c == q && (!triple || s_.substr(i_).starts_with(std::string(3, q)))) {
        i_ += triple ? 3 : 1;
        return;
      }
      if (c == '\n' && !triple) throw Fail{};
      if (c != '\\') {
        out += c;
        ++i_;
        continue;
      }
      if (i_ + 1 >= s_.size()) throw Fail{};
      const char e = s_[i_ + 1];
      if (raw) {
        out += c;
        out += e;
        i_ += 2;
        continue;
      }
      ++i_;  // at the escape letter
      if (py_decode_escape(s_, i_, out, append_utf8) != EscapeResult::kOk) throw Fail{};
    }
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

std::optional<PyValue> py_literal_eval(std::string_view s) {
  // literal_eval strips leading spaces and tabs, then parses in "eval" mode.
  while (!s.empty() && (s[0] == ' ' || s[0] == '\t')) s.remove_prefix(1);
  // Leading blank lines are fine in eval mode; an indented first token is not.
  size_t k = 0;
  while (k < s.size() && (s[k] == '\n' || s[k] == '\r')) ++k;
  if (k > 0 && k < s.size() && (s[k] == ' ' || s[k] == '\t')) return std::nullopt;
  s.remove_prefix(k);
  try {
    return LiteralReader(s).document();
  } catch (const Fail&) {
    return std::nullopt;
  }
}

}  // namespace qinfer::chat
