#include "jinja/lexer.h"

#include <cctype>
#include <cerrno>
#include <cstring>

#include "jinja/py_string.h"
#include "jinja/template_error.h"
#include "util/py_escape.h"

namespace qinfer::jinja {
namespace {

class Lexer {
 public:
  Lexer(const std::string& src, const std::string& name, const LexOptions& opt)
      : name_(name), opt_(opt) {
    // Normalise \r\n and \r to \n, then drop one trailing newline.
    src_.reserve(src.size());
    for (size_t i = 0; i < src.size(); ++i) {
      if (src[i] == '\r') {
        src_ += '\n';
        if (i + 1 < src.size() && src[i + 1] == '\n') ++i;
      } else {
        src_ += src[i];
      }
    }
    if (!opt_.keep_trailing_newline && !src_.empty() && src_.back() == '\n') src_.pop_back();
  }

  std::vector<Token> run() {
    while (pos_ < src_.size()) lex_root();
    push(Tok::Eof, "");
    return std::move(out_);
  }

 private:
  [[noreturn]] void fail(const std::string& msg) {
    throw TemplateError(TemplateError::Kind::Syntax, name_, line_, "syntax error", msg);
  }

  void push(Tok t, std::string text) { out_.push_back(Token{t, std::move(text), line_, 0, 0}); }

  void count_lines(size_t from, size_t to) {
    for (size_t i = from; i < to; ++i) if (src_[i] == '\n') ++line_;
  }

  // Python str.rstrip() of text; returns the new length.
  static size_t rstrip_len(const std::string& s, size_t b, size_t e) {
    std::u32string u = py::decode(s.substr(b, e - b));
    size_t n = u.size();
    while (n > 0 && py::is_space(u[n - 1])) --n;
    return py::encode(u.substr(0, n)).size();
  }

  // Length of the run of (Python) whitespace starting at p.
  size_t ws_len(size_t p) const {
    size_t q = p;
    while (q < src_.size()) {
      unsigned char c = static_cast<unsigned char>(src_[q]);
      if (c < 0x80) {
        if (py::is_space(c)) { ++q; continue; }
        break;
      }
      std::u32string u = py::decode(src_.substr(q, 4));
      if (!u.empty() && py::is_space(u[0])) { q += py::encode(u[0]).size(); continue; }
      break;
    }
    return q - p;
  }

  bool at(size_t p, const char* s) const { return src_.compare(p, std::strlen(s), s) == 0; }

  // Emit the text before a tag at `tag` whose whitespace-control sign is `sign`.
  void emit_text(size_t tag, char sign, bool is_variable) {
    size_t b = pos_, e = tag;
    size_t keep = e;
    if (sign == '-') {
      keep = b + rstrip_len(src_, b, e);
    } else if (sign != '+' && opt_.lstrip_blocks && !is_variable && e > b) {
      size_t nl = src_.rfind('\n', e - 1);
      size_t l_pos = (nl == std::string::npos || nl < b) ? b : nl + 1;
      if (l_pos > b || line_starting_) {
        std::u32string tail = py::decode(src_.substr(l_pos, e - l_pos));
        bool all_ws = !tail.empty();
        for (char32_t c : tail) all_ws = all_ws && py::is_space(c);
        if (all_ws) keep = l_pos;
      }
    }
    if (keep > b) push(Tok::Data, src_.substr(b, keep - b));
    count_lines(b, e);
  }

  // Consume a closing delimiter; trim_blocks applies to block/comment ends.
  void close_tag(size_t p, size_t delim_len, bool minus, bool plus, bool trim) {
    size_t q = p + delim_len;
    if (minus) q += ws_len(q);
    else if (!plus && trim && opt_.trim_blocks && q < src_.size() && src_[q] == '\n') ++q;
    count_lines(p, q);
    line_starting_ = q > 0 && src_[q - 1] == '\n';
    pos_ = q;
  }

  void lex_root() {
    size_t p = pos_;
    size_t tag = std::string::npos;
    while (true) {
      tag = src_.find('{', p);
      if (tag == std::string::npos || tag + 1 >= src_.size()) { tag = std::string::npos; break; }
      char c = src_[tag + 1];
      if (c == '{' || c == '%' || c == '#') break;
      p = tag + 1;
    }
    if (tag == std::string::npos) {
      push(Tok::Data, src_.substr(pos_));
      count_lines(pos_, src_.size());
      pos_ = src_.size();
      return;
    }
    char kind = src_[tag + 1];
    char sign = (tag + 2 < src_.size() && (src_[tag + 2] == '-' || src_[tag + 2] == '+')) ? src_[tag + 2] : 0;
    emit_text(tag, sign, kind == '{');
    line_starting_ = false;
    pos_ = tag + 2 + (sign ? 1 : 0);
    if (kind == '#') return lex_comment();
    if (kind == '%' && try_raw()) return;
    push(kind == '{' ? Tok::VarBegin : Tok::BlockBegin, "");
    lex_tag(kind == '{');
  }

  void lex_comment() {
    size_t e = src_.find("#}", pos_);
    if (e == std::string::npos) fail("Missing end of comment tag");
    bool minus = e > pos_ && src_[e - 1] == '-';
    bool plus = e > pos_ && src_[e - 1] == '+';
    count_lines(pos_, e);
    close_tag(e, 2, minus, plus, true);
  }

  // {% raw %} ... {% endraw %}: the body is emitted as data.
  bool try_raw() {
    size_t q = pos_ + ws_len(pos_);
    if (!at(q, "raw")) return false;
    size_t r = q + 3;
    r += ws_len(r);
    bool minus = false;
    if (at(r, "-%}")) minus = true;
    else if (!at(r, "%}")) return false;
    count_lines(pos_, r);
    size_t body = r + (minus ? 3 : 2);
    if (minus) body += ws_len(body);
    count_lines(r, body);
    // find {%(-|+)?\s*endraw\s*(-|+)?%}
    size_t s = body;
    while (true) {
      size_t t = src_.find("{%", s);
      if (t == std::string::npos) fail("Missing end of raw directive");
      size_t u = t + 2;
      char sign = (u < src_.size() && (src_[u] == '-' || src_[u] == '+')) ? src_[u] : 0;
      if (sign) ++u;
      u += ws_len(u);
      if (!at(u, "endraw")) { s = t + 2; continue; }
      u += 6;
      u += ws_len(u);
      bool emin = at(u, "-%}"), eplus = at(u, "+%}");
      if (!emin && !eplus && !at(u, "%}")) { s = t + 2; continue; }
      pos_ = body;
      line_starting_ = body > 0 && src_[body - 1] == '\n';
      emit_text(t, sign, false);
      count_lines(t, u);
      close_tag(u + (emin || eplus ? 1 : 0), 2, emin, eplus, true);
      return true;
    }
  }

  void lex_tag(bool variable) {
    std::vector<char> balance;
    while (true) {
      if (pos_ >= src_.size()) fail(variable ? "unexpected end of template, expected '}}'"
                                             : "unexpected end of template, expected '%}'");
      if (balance.empty()) {
        if (variable) {
          if (at(pos_, "-}}")) { push(Tok::VarEnd, ""); close_tag(pos_ + 1, 2, true, false, false); return; }
          if (at(pos_, "}}")) { push(Tok::VarEnd, ""); close_tag(pos_, 2, false, false, false); return; }
        } else {
          if (at(pos_, "-%}")) { push(Tok::BlockEnd, ""); close_tag(pos_ + 1, 2, true, false, true); return; }
          if (at(pos_, "+%}")) { push(Tok::BlockEnd, ""); close_tag(pos_ + 1, 2, false, true, true); return; }
          if (at(pos_, "%}")) { push(Tok::BlockEnd, ""); close_tag(pos_, 2, false, false, true); return; }
        }
      }
      size_t w = ws_len(pos_);
      if (w) { count_lines(pos_, pos_ + w); pos_ += w; continue; }
      unsigned char c = static_cast<unsigned char>(src_[pos_]);
      if (std::isdigit(c)) { lex_number(); continue; }
      if (c == '_' || std::isalpha(c) || c >= 0x80) {
        size_t q = pos_;
        while (q < src_.size()) {
          unsigned char d = static_cast<unsigned char>(src_[q]);
          if (d == '_' || std::isalnum(d) || d >= 0x80) ++q;
          else break;
        }
        push(Tok::Name, src_.substr(pos_, q - pos_));
        pos_ = q;
        continue;
      }
      if (c == '\'' || c == '"') { lex_string(); continue; }
      static const char* kOps[] = {"//", "**", "==", "!=", ">=", "<=", "+", "-", "/", "*", "%", "~",
                                   "[", "]", "(", ")", "{", "}", ">", "<", "=", ".", ":", "|",
                                   ",", ";"};
      const char* op = nullptr;
      for (const char* o : kOps) if (at(pos_, o)) { op = o; break; }
      if (!op) fail(cat("unexpected char ", py::repr(std::string(1, static_cast<char>(c)))));
      std::string o(op);
      if (o == "(" || o == "[" || o == "{") balance.push_back(o == "(" ? ')' : o == "[" ? ']' : '}');
      else if (o == ")" || o == "]" || o == "}") {
        if (balance.empty()) fail("unexpected '" + o + "'");
        char want = balance.back();
        balance.pop_back();
        if (want != o[0]) fail("unexpected '" + o + "', expected '" + std::string(1, want) + "'");
      }
      push(Tok::Op, o);
      pos_ += o.size();
    }
  }

  static bool digit_run(const std::string& s, size_t& q, int base) {
    // (_?d)+ after a prefix, or d(_?d)* ; returns true if at least one digit consumed
    auto is_d = [&](char ch) {
      if (base == 16) return std::isxdigit(static_cast<unsigned char>(ch)) != 0;
      if (base == 8) return ch >= '0' && ch <= '7';
      if (base == 2) return ch == '0' || ch == '1';
      return std::isdigit(static_cast<unsigned char>(ch)) != 0;
    };
    bool any = false;
    while (q < s.size()) {
      if (is_d(s[q])) { ++q; any = true; continue; }
      if (s[q] == '_' && q + 1 < s.size() && is_d(s[q + 1]) && (any || base != 10)) { q += 2; any = true; continue; }
      break;
    }
    return any;
  }

  void lex_number() {
    size_t start = pos_;
    // float: (?<!\.) digits ( (.digits)? e[+-]?digits | .digits )
    bool after_dot = start > 0 && src_[start - 1] == '.';
    if (!after_dot) {
      size_t q = start;
      digit_run(src_, q, 10);
      size_t mant_end = q;
      bool frac = false;
      if (q < src_.size() && src_[q] == '.' ) {
        size_t r = q + 1;
        if (r < src_.size() && std::isdigit(static_cast<unsigned char>(src_[r])) && digit_run(src_, r, 10)) {
          frac = true;
          q = r;
        }
      }
      bool expo = false;
      if (q < src_.size() && (src_[q] == 'e' || src_[q] == 'E')) {
        size_t r = q + 1;
        if (r < src_.size() && (src_[r] == '+' || src_[r] == '-')) ++r;
        if (r < src_.size() && std::isdigit(static_cast<unsigned char>(src_[r])) && digit_run(src_, r, 10)) {
          expo = true;
          q = r;
        }
      }
      (void)mant_end;
      if (frac || expo) {
        std::string t;
        for (size_t i = start; i < q; ++i) if (src_[i] != '_') t += src_[i];
        Token tok{Tok::Float, t, line_, 0, 0, std::strtod(t.c_str(), nullptr)};
        out_.push_back(tok);
        pos_ = q;
        return;
      }
    }
    size_t q = start;
    int base = 10;
    if (src_[q] == '0' && q + 1 < src_.size() && std::strchr("bBoOxX", src_[q + 1])) {
      char p = static_cast<char>(std::tolower(static_cast<unsigned char>(src_[q + 1])));
      base = p == 'b' ? 2 : p == 'o' ? 8 : 16;
      size_t r = q + 2;
      if (digit_run(src_, r, base)) q = r;
      else base = 10;
    }
    if (base == 10) {
      if (src_[q] == '0') {
        ++q;
        while (q < src_.size() && (src_[q] == '0' || (src_[q] == '_' && q + 1 < src_.size() && src_[q + 1] == '0'))) ++q;
      } else {
        digit_run(src_, q, 10);
      }
    }
    std::string t;
    for (size_t i = start + (base == 10 ? 0 : 2); i < q; ++i) if (src_[i] != '_') t += src_[i];
    errno = 0;
    unsigned long long v = std::strtoull(t.c_str(), nullptr, base);
    // Past 2^64-1 qinfer has no exact integer: refused rather than rounded.
    if (errno == ERANGE) fail("integer literal too large (qinfer's template integers stop at 2**64-1): " + t);
    const bool big = v > static_cast<unsigned long long>(INT64_MAX);
    Token tok{Tok::Integer, src_.substr(start, q - start), line_, big ? 0 : static_cast<int64_t>(v), big ? v : 0, 0};
    out_.push_back(tok);
    pos_ = q;
  }

  void lex_string() {
    char q = src_[pos_];
    size_t p = pos_ + 1;
    std::string raw;
    while (true) {
      if (p >= src_.size()) fail("unexpected char " + py::repr(std::string(1, q)));
      char c = src_[p];
      if (c == '\\' && p + 1 < src_.size()) { raw += c; raw += src_[p + 1]; p += 2; continue; }
      if (c == q) break;
      raw += c;
      ++p;
    }
    int start_line = line_;
    count_lines(pos_, p + 1);
    pos_ = p + 1;
    out_.push_back(Token{Tok::String, unescape(raw), start_line, 0, 0});
  }

  static void append_code_point(std::string& out, uint32_t cp) { out += py::encode(static_cast<char32_t>(cp)); }

  // Python "unicode-escape" decoding of a string literal body.
  std::string unescape(const std::string& s) {
    std::string out;
    for (size_t i = 0; i < s.size(); ++i) {
      char c = s[i];
      if (c != '\\' || i + 1 >= s.size()) { out += c; continue; }
      size_t j = i + 1;  // at the escape letter
      const char e = s[j];
      switch (py_decode_escape(s, j, out, append_code_point)) {
        case EscapeResult::kOk: break;
        case EscapeResult::kTruncated: fail(cat("truncated \\", e, " escape"));
        case EscapeResult::kIllegal: fail("illegal Unicode character");
      }
      i = j - 1;  // the loop steps past the escape
    }
    return out;
  }

  std::string src_;
  const std::string& name_;
  LexOptions opt_;
  size_t pos_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> out_;
};

}  // namespace

std::vector<Token> tokenize(const std::string& source, const std::string& template_name,
                            const LexOptions& opt) {
  return Lexer(source, template_name, opt).run();
}

std::string describe(const Token& t) {
  switch (t.type) {
    case Tok::Data: return "template data";
    case Tok::VarBegin: return "begin of print statement";
    case Tok::VarEnd: return "end of print statement";
    case Tok::BlockBegin: return "begin of statement block";
    case Tok::BlockEnd: return "end of statement block";
    case Tok::Eof: return "end of template";
    case Tok::String: return "string";
    case Tok::Integer: return "integer";
    case Tok::Float: return "float";
    case Tok::Name:
    case Tok::Op: return t.text;
  }
  return t.text;
}

}  // namespace qinfer::jinja
