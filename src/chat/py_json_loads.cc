// py_json_loads: Python's json.loads into a PyValue: strict strings (no raw control
// characters), NaN / Infinity / -Infinity accepted, integers kept exact (as their text), a
// repeated key keeps its first place and its last value (as a dict does), nesting past 200
// levels refused (Python's recursion limit).
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

class JsonReader {
 public:
  explicit JsonReader(std::string_view s) : s_(s) {}

  PyValue document() {
    ws();
    PyValue v = value(0);
    ws();
    if (i_ != s_.size()) throw Fail{};  // "Extra data"
    return v;
  }

 private:
  void ws() {
    while (i_ < s_.size() && (s_[i_] == ' ' || s_[i_] == '\t' || s_[i_] == '\n' || s_[i_] == '\r')) ++i_;
  }
  bool eat(std::string_view word) {
    if (s_.substr(i_).starts_with(word)) {
      i_ += word.size();
      return true;
    }
    return false;
  }

  PyValue value(int depth) {
    if (depth > kMaxDepth || i_ >= s_.size()) throw Fail{};
    const char c = s_[i_];
    if (c == '{') return object(depth);
    if (c == '[') return array(depth);
    if (c == '"') return PyValue::str(string());
    if (eat("null")) return PyValue::none();
    if (eat("true")) return PyValue::boolean(true);
    if (eat("false")) return PyValue::boolean(false);
    if (eat("NaN")) return PyValue::floating(NAN);
    if (eat("Infinity")) return PyValue::floating(HUGE_VAL);
    if (eat("-Infinity")) return PyValue::floating(-HUGE_VAL);
    return number();
  }

  PyValue number() {
    const size_t start = i_;
    if (i_ < s_.size() && s_[i_] == '-') ++i_;
    auto digit = [&] { return i_ < s_.size() && s_[i_] >= '0' && s_[i_] <= '9'; };
    if (!digit()) throw Fail{};
    if (s_[i_] == '0') {
      ++i_;
    } else {
      while (digit()) ++i_;
    }
    bool is_float = false;
    if (i_ + 1 < s_.size() && s_[i_] == '.' && s_[i_ + 1] >= '0' && s_[i_ + 1] <= '9') {
      is_float = true;
      ++i_;
      while (digit()) ++i_;
    }
    if (i_ < s_.size() && (s_[i_] == 'e' || s_[i_] == 'E')) {
      size_t j = i_ + 1;
      if (j < s_.size() && (s_[j] == '+' || s_[j] == '-')) ++j;
      if (j < s_.size() && s_[j] >= '0' && s_[j] <= '9') {
        is_float = true;
        i_ = j;
        while (digit()) ++i_;
      }
    }
    const std::string text(s_.substr(start, i_ - start));
    if (is_float) return PyValue::floating(std::strtod(text.c_str(), nullptr));
    return text == "-0" ? PyValue::integer("0") : PyValue::integer(text);
  }

  std::string string() {
    ++i_;  // opening quote
    std::string out;
    for (;;) {
      if (i_ >= s_.size()) throw Fail{};
      const char c = s_[i_++];
      if (c == '"') return out;
      if (static_cast<unsigned char>(c) < 0x20) throw Fail{};  // strict: no control characters
      if (c != '\\') {
        out += c;
        continue;
      }
      if (i_ >= s_.size()) throw Fail{};
      const char e = s_[i_++];
      switch (e) {
        case '"': out += '"'; break;
        case '\\': out += '\\'; break;
        case '/': out += '/'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': {
          uint32_t cp;
          if (!read_hex(s_, i_, 4, cp)) throw Fail{};
          i_ += 4;
          uint32_t lo;
          if (cp >= 0xD800 && cp <= 0xDBFF && s_.substr(i_).starts_with("\\u") && read_hex(s_, i_ + 2, 4, lo) &&
              lo >= 0xDC00 && lo <= 0xDFFF) {
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
            i_ += 6;
          }
          append_utf8(out, cp);
          break;
        }
        default: throw Fail{};
      }
    }
  }

  PyValue array(int depth) {
    ++i_;
    PyValue v;
    v.kind = PyValue::Kind::kList;
    ws();
    if (eat("]")) return v;
    for (;;) {
      ws();
      v.items.push_back(value(depth + 1));
      ws();
      if (eat("]")) return v;
      if (!eat(",")) throw Fail{};
    }
  }

  PyValue object(int depth) {
    ++i_;
    PyValue v;
    v.kind = PyValue::Kind::kDict;
    ws();
    if (eat("}")) return v;
    for (;;) {
      ws();
      if (i_ >= s_.size() || s_[i_] != '"') throw Fail{};
      PyValue key = PyValue::str(string());
      ws();
      if (!eat(":")) throw Fail{};
      ws();
      v.dict_set(std::move(key), value(depth + 1));
      ws();
      if (eat("}")) return v;
      if (!eat(",")) throw Fail{};
    }
  }

  std::string_view s_;
  size_t i_ = 0;
};

}  // namespace

std::optional<PyValue> py_json_loads(std::string_view s) {
  try {
    return JsonReader(s).document();
  } catch (const Fail&) {
    return std::nullopt;
  }
}

}  // namespace qinfer::chat
