#include "jinja/py_string.h"

#include <unicode/uchar.h>
#include <unicode/unistr.h>
#include <unicode/locid.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstring>

#include "jinja/template_error.h"

namespace qinfer::jinja::py {

std::u32string decode(const std::string& s) {
  std::u32string out;
  out.reserve(s.size());
  const auto* p = reinterpret_cast<const unsigned char*>(s.data());
  size_t n = s.size(), i = 0;
  while (i < n) {
    unsigned char c = p[i];
    int len = 0;
    char32_t cp = 0;
    if (c < 0x80) { out.push_back(c); ++i; continue; }
    if ((c & 0xE0) == 0xC0) { len = 2; cp = c & 0x1F; }
    else if ((c & 0xF0) == 0xE0) { len = 3; cp = c & 0x0F; }
    else if ((c & 0xF8) == 0xF0) { len = 4; cp = c & 0x07; }
    bool ok = len > 0 && i + len <= n;
    for (int k = 1; ok && k < len; ++k) {
      if ((p[i + k] & 0xC0) != 0x80) ok = false;
      else cp = (cp << 6) | (p[i + k] & 0x3F);
    }
    if (ok) {
      static const char32_t kMin[5] = {0, 0, 0x80, 0x800, 0x10000};
      if (cp < kMin[len] || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) ok = false;
    }
    if (!ok) { out.push_back(0xDC00 + c); ++i; continue; }  // surrogate escape
    out.push_back(cp);
    i += len;
  }
  return out;
}

std::string encode(char32_t c) {
  std::string out;
  if (c >= 0xDC80 && c <= 0xDCFF) { out.push_back(static_cast<char>(c - 0xDC00)); return out; }
  if (c < 0x80) {
    out.push_back(static_cast<char>(c));
  } else if (c < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (c >> 6)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else if (c < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (c >> 12)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (c >> 18)));
    out.push_back(static_cast<char>(0x80 | ((c >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((c >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (c & 0x3F)));
  }
  return out;
}

std::string encode(const std::u32string& s) {
  std::string out;
  out.reserve(s.size());
  for (char32_t c : s) out += encode(c);
  return out;
}

size_t length(const std::string& s) {
  bool ascii = true;
  for (unsigned char c : s) if (c >= 0x80) { ascii = false; break; }
  return ascii ? s.size() : decode(s).size();
}

bool is_space(char32_t c) {
  if (c >= 0x09 && c <= 0x0D) return true;
  if (c >= 0x1C && c <= 0x20) return true;
  if (c < 0x80) return false;
  return c == 0x85 || c == 0xA0 || c == 0x1680 || (c >= 0x2000 && c <= 0x200A) || c == 0x2028 ||
         c == 0x2029 || c == 0x202F || c == 0x205F || c == 0x3000;
}

std::string strip(const std::string& s, const std::optional<std::string>& chars, bool left, bool right) {
  std::u32string u = decode(s);
  std::u32string set = chars ? decode(*chars) : std::u32string();
  auto strip_it = [&](char32_t c) {
    return chars ? set.find(c) != std::u32string::npos : is_space(c);
  };
  size_t b = 0, e = u.size();
  if (left) while (b < e && strip_it(u[b])) ++b;
  if (right) while (e > b && strip_it(u[e - 1])) --e;
  return encode(u.substr(b, e - b));
}

static void check_sep(const std::optional<std::string>& sep) {
  if (sep && sep->empty()) throw EvalError("ValueError: empty separator");
}

std::vector<std::string> split(const std::string& s, const std::optional<std::string>& sep,
                               int64_t maxsplit) {
  check_sep(sep);
  std::vector<std::string> out;
  if (sep) {
    size_t pos = 0;
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      size_t f = s.find(*sep, pos);
      if (f == std::string::npos) break;
      out.push_back(s.substr(pos, f - pos));
      pos = f + sep->size();
    }
    out.push_back(s.substr(pos));
    return out;
  }
  std::u32string u = decode(s);
  size_t i = 0, n = u.size();
  while (true) {
    while (i < n && is_space(u[i])) ++i;
    if (i >= n) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
      size_t e = n;
      while (e > i && is_space(u[e - 1])) --e;
      out.push_back(encode(u.substr(i, e - i)));
      break;
    }
    size_t j = i;
    while (j < n && !is_space(u[j])) ++j;
    out.push_back(encode(u.substr(i, j - i)));
    i = j;
  }
  return out;
}

std::vector<std::string> rsplit(const std::string& s, const std::optional<std::string>& sep,
                                int64_t maxsplit) {
  check_sep(sep);
  std::vector<std::string> out;
  if (sep) {
    size_t end = s.size();
    while (maxsplit < 0 || static_cast<int64_t>(out.size()) < maxsplit) {
      if (end < sep->size()) break;
      size_t f = s.rfind(*sep, end - sep->size());
      if (f == std::string::npos) break;
      out.push_back(s.substr(f + sep->size(), end - f - sep->size()));
      end = f;
    }
    out.push_back(s.substr(0, end));
    std::reverse(out.begin(), out.end());
    return out;
  }
  std::u32string u = decode(s);
  int64_t i = static_cast<int64_t>(u.size()) - 1;
  while (true) {
    while (i >= 0 && is_space(u[i])) --i;
    if (i < 0) break;
    if (maxsplit >= 0 && static_cast<int64_t>(out.size()) >= maxsplit) {
      int64_t b = 0;
      while (b <= i && is_space(u[b])) ++b;
      out.push_back(encode(u.substr(b, i - b + 1)));
      break;
    }
    int64_t j = i;
    while (j >= 0 && !is_space(u[j])) --j;
    out.push_back(encode(u.substr(j + 1, i - j)));
    i = j;
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<std::string> splitlines(const std::string& s, bool keepends) {
  std::u32string u = decode(s);
  std::vector<std::string> out;
  size_t i = 0, n = u.size();
  while (i < n) {
    size_t j = i;
    while (j < n) {
      char32_t c = u[j];
      if (c == '\n' || c == '\r' || c == 0x0B || c == 0x0C || c == 0x1C || c == 0x1D ||
          c == 0x1E || c == 0x85 || c == 0x2028 || c == 0x2029)
        break;
      ++j;
    }
    size_t eol = j;
    if (j < n) {
      if (u[j] == '\r' && j + 1 < n && u[j + 1] == '\n') j += 2;
      else j += 1;
    }
    out.push_back(encode(u.substr(i, (keepends ? j : eol) - i)));
    i = j;
  }
  return out;
}

std::string replace(const std::string& s, const std::string& old, const std::string& repl,
                    int64_t count) {
  std::string out;
  if (old.empty()) {
    std::u32string u = decode(s);
    int64_t done = 0;
    for (char32_t c : u) {
      if (count < 0 || done < count) { out += repl; ++done; }
      out += encode(c);
    }
    if (count < 0 || done < count) out += repl;
    return out;
  }
  size_t pos = 0;
  int64_t done = 0;
  while (count < 0 || done < count) {
    size_t f = s.find(old, pos);
    if (f == std::string::npos) break;
    out.append(s, pos, f - pos);
    out += repl;
    pos = f + old.size();
    ++done;
  }
  out.append(s, pos, std::string::npos);
  return out;
}

static void adjust_range(int64_t len, std::optional<int64_t> start, std::optional<int64_t> end,
                         int64_t& b, int64_t& e) {
  b = start.value_or(0);
  e = end.value_or(len);
  if (b < 0) b = std::max<int64_t>(0, b + len);
  if (e < 0) e = std::max<int64_t>(0, e + len);
  e = std::min(e, len);
}

int64_t find(const std::string& s, const std::string& sub, std::optional<int64_t> start,
             std::optional<int64_t> end, bool reverse) {
  std::u32string u = decode(s), v = decode(sub);
  int64_t b, e;
  adjust_range(static_cast<int64_t>(u.size()), start, end, b, e);
  if (b > static_cast<int64_t>(u.size())) return -1;
  if (e - b < static_cast<int64_t>(v.size())) return -1;
  std::u32string_view win(u.data() + b, static_cast<size_t>(e - b));
  size_t f = reverse ? win.rfind(v) : win.find(v);
  return f == std::u32string_view::npos ? -1 : static_cast<int64_t>(f) + b;
}

int64_t count(const std::string& s, const std::string& sub, std::optional<int64_t> start,
              std::optional<int64_t> end) {
  std::u32string u = decode(s), v = decode(sub);
  int64_t b, e;
  adjust_range(static_cast<int64_t>(u.size()), start, end, b, e);
  if (b > static_cast<int64_t>(u.size()) || e < b) return 0;
  if (v.empty()) return e - b + 1;
  std::u32string_view win(u.data() + b, static_cast<size_t>(e - b));
  int64_t n = 0;
  size_t pos = 0;
  while ((pos = win.find(v, pos)) != std::u32string_view::npos) { ++n; pos += v.size(); }
  return n;
}

static std::string icu_case(const std::string& s, bool up) {
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(s);
  if (up) u.toUpper(icu::Locale::getRoot());
  else u.toLower(icu::Locale::getRoot());
  std::string out;
  u.toUTF8String(out);
  return out;
}

static bool ascii_only(const std::string& s) {
  for (unsigned char c : s) if (c >= 0x80) return false;
  return true;
}

std::string upper(const std::string& s) {
  if (ascii_only(s)) {
    std::string r = s;
    for (char& c : r) if (c >= 'a' && c <= 'z') c = static_cast<char>(c - 32);
    return r;
  }
  return icu_case(s, true);
}

std::string lower(const std::string& s) {
  if (ascii_only(s)) {
    std::string r = s;
    for (char& c : r) if (c >= 'A' && c <= 'Z') c = static_cast<char>(c + 32);
    return r;
  }
  return icu_case(s, false);
}

std::string casefold(const std::string& s) {
  if (ascii_only(s)) return lower(s);
  icu::UnicodeString u = icu::UnicodeString::fromUTF8(s);
  u.foldCase(U_FOLD_CASE_DEFAULT);  // full folding, as Python: "ß" -> "ss"
  std::string out;
  u.toUTF8String(out);
  return out;
}

static bool is_cased(char32_t c) { return u_hasBinaryProperty(static_cast<UChar32>(c), UCHAR_CASED); }

std::string capitalize(const std::string& s) {
  std::u32string u = decode(s);
  if (u.empty()) return s;
  std::string first = encode(static_cast<char32_t>(u_totitle(static_cast<UChar32>(u[0]))));
  return first + lower(encode(u.substr(1)));
}

std::string title(const std::string& s) {
  std::u32string u = decode(s);
  bool prev_cased = false;
  for (char32_t& c : u) {
    c = prev_cased ? static_cast<char32_t>(u_tolower(static_cast<UChar32>(c)))
                   : static_cast<char32_t>(u_totitle(static_cast<UChar32>(c)));
    prev_cased = is_cased(c);
  }
  return encode(u);
}

std::string swapcase(const std::string& s) {
  std::u32string u = decode(s);
  for (char32_t& c : u) {
    if (u_isupper(static_cast<UChar32>(c))) c = static_cast<char32_t>(u_tolower(static_cast<UChar32>(c)));
    else if (u_islower(static_cast<UChar32>(c))) c = static_cast<char32_t>(u_toupper(static_cast<UChar32>(c)));
  }
  return encode(u);
}

bool is_lower(const std::string& s) {
  bool cased = false;
  for (char32_t c : decode(s)) {
    if (u_isupper(static_cast<UChar32>(c)) || u_istitle(static_cast<UChar32>(c))) return false;
    if (u_islower(static_cast<UChar32>(c))) cased = true;
  }
  return cased;
}

bool is_upper(const std::string& s) {
  bool cased = false;
  for (char32_t c : decode(s)) {
    if (u_islower(static_cast<UChar32>(c)) || u_istitle(static_cast<UChar32>(c))) return false;
    if (u_isupper(static_cast<UChar32>(c))) cased = true;
  }
  return cased;
}

bool is_alpha_cp(char32_t c) { return u_isalpha(static_cast<UChar32>(c)); }
bool is_digit_cp(char32_t c) {
  int t = u_getIntPropertyValue(static_cast<UChar32>(c), UCHAR_NUMERIC_TYPE);
  return t == U_NT_DECIMAL || t == U_NT_DIGIT;
}
bool is_alnum_cp(char32_t c) {
  return is_alpha_cp(c) ||
         u_getIntPropertyValue(static_cast<UChar32>(c), UCHAR_NUMERIC_TYPE) != U_NT_NONE;
}

bool all_chars(const std::string& s, bool (*pred)(char32_t)) {
  std::u32string u = decode(s);
  if (u.empty()) return false;
  for (char32_t c : u) if (!pred(c)) return false;
  return true;
}

static bool printable(char32_t c) {
  if (c == ' ') return true;
  if (c < 0x20 || c == 0x7F) return false;
  if (c < 0x7F) return true;
  switch (u_charType(static_cast<UChar32>(c))) {
    case U_CONTROL_CHAR: case U_FORMAT_CHAR: case U_SURROGATE: case U_PRIVATE_USE_CHAR:
    case U_UNASSIGNED: case U_LINE_SEPARATOR: case U_PARAGRAPH_SEPARATOR: case U_SPACE_SEPARATOR:
      return false;
    default:
      return true;
  }
}

std::string repr(const std::string& s) {
  bool has_single = s.find('\'') != std::string::npos;
  bool has_double = s.find('"') != std::string::npos;
  char q = (has_single && !has_double) ? '"' : '\'';
  std::string out(1, q);
  char buf[16];
  for (char32_t c : decode(s)) {
    if (c == static_cast<char32_t>(q) || c == '\\') { out += '\\'; out += static_cast<char>(c); }
    else if (c == '\n') out += "\\n";
    else if (c == '\r') out += "\\r";
    else if (c == '\t') out += "\\t";
    else if (printable(c)) out += encode(c);
    else {
      if (c < 0x100) std::snprintf(buf, sizeof buf, "\\x%02x", static_cast<unsigned>(c));
      else if (c < 0x10000) std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(c));
      else std::snprintf(buf, sizeof buf, "\\U%08x", static_cast<unsigned>(c));
      out += buf;
    }
  }
  out += q;
  return out;
}


}  // namespace qinfer::jinja::py
