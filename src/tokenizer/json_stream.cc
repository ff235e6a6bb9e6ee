#include "tokenizer/json_stream.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>

#include "tokenizer/utf8.h"
#include "util/error.h"

namespace qinfer::tok {
namespace {

using json = nlohmann::json;

constexpr int kMaxDepth = 256;

class Parser {
 public:
  Parser(std::string_view text, const std::string& path, TokenizerJson& out)
      : begin_(text.data()), p_(text.data()), end_(text.data() + text.size()), path_(path), out_(out) {}

  void parse() {
    ws();
    out_.doc = value(0, kRoot);
    ws();
    if (p_ != end_) syntax("unexpected data after the top-level value");
  }

 private:
  enum Where { kRoot, kModel, kOther };

  [[noreturn]] void syntax(const std::string& what) const {
    fail(path_, ": malformed JSON at byte ", static_cast<size_t>(p_ - begin_), ": ", what);
  }
  [[noreturn]] void field(const std::string& what) const { fail(path_, ": field ", what); }
  [[noreturn]] void bad_merge(const std::string& where) const {
    field(where + " is neither \"left right\" nor [\"left\", \"right\"]");
  }

  void ws() {
    while (p_ < end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\r' || *p_ == '\t')) ++p_;
  }
  char peek() {
    if (p_ >= end_) syntax("unexpected end of input");
    return *p_;
  }
  void expect(char c) {
    if (peek() != c) syntax(std::string("expected '") + c + "'");
    ++p_;
  }
  // Eats `open`; false if the container is empty (its `close` is eaten too).
  bool begin(char open, char close) {
    expect(open);
    ws();
    if (peek() != close) return true;
    ++p_;
    return false;
  }
  // A member name and its colon.
  std::string member_key() {
    if (peek() != '"') syntax("expected a string key");
    std::string key = string();
    ws();
    expect(':');
    ws();
    return key;
  }
  // After an element: true if another follows (a comma was eaten), false at `close`.
  bool next(char close) {
    ws();
    if (peek() == ',') {
      ++p_;
      ws();
      return true;
    }
    expect(close);
    return false;
  }

  json value(int depth, Where where) {
    if (depth > kMaxDepth) syntax("nesting too deep");
    switch (peek()) {
      case '{': return object(depth, where);
      case '[': return array(depth);
      case '"': return json(string());
      case 't': return literal("true", json(true));
      case 'f': return literal("false", json(false));
      case 'n': return literal("null", json());
      default: return number();
    }
  }

  json literal(const char* word, json v) {
    const size_t n = std::strlen(word);
    if (static_cast<size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) syntax("invalid literal");
    p_ += n;
    return v;
  }

  json object(int depth, Where where) {
    json obj = json::object();
    if (!begin('{', '}')) return obj;
    do {
      std::string key = member_key();
      if (where == kModel && key == "vocab" && peek() == '{') {
        stream_vocab();
        out_.vocab_streamed = true;
        obj[key] = nullptr;
      } else if (where == kModel && key == "merges" && peek() == '[') {
        stream_merges();
        out_.merges_streamed = true;
        obj[key] = nullptr;
      } else {
        obj[key] = value(depth + 1, where == kRoot && key == "model" ? kModel : kOther);
      }
    } while (next('}'));
    return obj;
  }

  json array(int depth) {
    json arr = json::array();
    if (!begin('[', ']')) return arr;
    do arr.push_back(value(depth + 1, kOther));
    while (next(']'));
    return arr;
  }

  json number() {
    const char* start = p_;
    if (p_ < end_ && *p_ == '-') ++p_;
    const auto digits = [&] {
      const char* d = p_;
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9') ++p_;
      return p_ - d;
    };
    const char* int_start = p_;
    if (digits() == 0) syntax("invalid value");
    if (*int_start == '0' && p_ - int_start > 1) syntax("leading zero in a number");
    bool is_float = false;
    if (p_ < end_ && *p_ == '.') {
      ++p_;
      if (digits() == 0) syntax("invalid number");
      is_float = true;
    }
    if (p_ < end_ && (*p_ == 'e' || *p_ == 'E')) {
      ++p_;
      if (p_ < end_ && (*p_ == '+' || *p_ == '-')) ++p_;
      if (digits() == 0) syntax("invalid number");
      is_float = true;
    }
    const std::string s(start, p_);
    if (!is_float) {
      errno = 0;
      if (s[0] == '-') {
        const long long v = std::strtoll(s.c_str(), nullptr, 10);
        if (errno == 0) return json(static_cast<int64_t>(v));
      } else {
        const unsigned long long v = std::strtoull(s.c_str(), nullptr, 10);
        if (errno == 0) return json(static_cast<uint64_t>(v));
      }
    }
    return json(std::strtod(s.c_str(), nullptr));
  }

  unsigned hex4() {
    if (end_ - p_ < 4) syntax("truncated \\u escape");
    unsigned v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = *p_++;
      v <<= 4;
      if (c >= '0' && c <= '9') v |= c - '0';
      else if (c >= 'a' && c <= 'f') v |= c - 'a' + 10;
      else if (c >= 'A' && c <= 'F') v |= c - 'A' + 10;
      else syntax("invalid \\u escape");
    }
    return v;
  }

  std::string string() {
    expect('"');
    std::string s;
    for (;;) {
      const char* run = p_;
      while (p_ < end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20) ++p_;
      s.append(run, p_);
      const char c = peek();
      ++p_;
      if (c == '"') break;
      if (c != '\\') syntax("control character in a string");
      const char e = peek();
      ++p_;
      switch (e) {
        case '"': s += '"'; break;
        case '\\': s += '\\'; break;
        case '/': s += '/'; break;
        case 'b': s += '\b'; break;
        case 'f': s += '\f'; break;
        case 'n': s += '\n'; break;
        case 'r': s += '\r'; break;
        case 't': s += '\t'; break;
        case 'u': {
          uint32_t cp = hex4();
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            if (end_ - p_ < 2 || p_[0] != '\\' || p_[1] != 'u') syntax("unpaired surrogate in \\u escape");
            p_ += 2;
            const uint32_t lo = hex4();
            if (lo < 0xDC00 || lo > 0xDFFF) syntax("unpaired surrogate in \\u escape");
            cp = 0x10000 + ((cp - 0xD800) << 10) + (lo - 0xDC00);
          } else if (cp >= 0xDC00 && cp <= 0xDFFF) {
            syntax("unpaired surrogate in \\u escape");
          }
          append_utf8(s, cp);
          break;
        }
        default: syntax("invalid escape in a string");
      }
    }
    // JSON text is UTF-8; a bad byte here would otherwise surface later as a raw
    // nlohmann error (dump() of the value) that names no file.
    if (utf8_first_invalid(s)) syntax("invalid UTF-8 in a string");
    return s;
  }

  void stream_vocab() {
    if (!begin('{', '}')) return;
    do {
      std::string key = member_key();
      int64_t id = 0;
      const char* d = p_;
      while (p_ < end_ && *p_ >= '0' && *p_ <= '9' && p_ - d < 10) id = id * 10 + (*p_++ - '0');
      if (p_ == d || (p_ < end_ && (*p_ == '.' || *p_ == 'e' || *p_ == 'E' || (*p_ >= '0' && *p_ <= '9'))))
        field("model.vocab[\"" + key + "\"] is not a valid token id");
      out_.vocab.emplace_back(std::move(key), id);
    } while (next('}'));
  }

  void stream_merges() {
    if (!begin('[', ']')) return;
    do {
      const std::string where = "model.merges[" + std::to_string(out_.merges.size()) + "]";
      if (peek() == '"') {
        std::string s = string();
        const size_t sp = s.find(' ');
        if (sp == std::string::npos || sp == 0 || sp + 1 >= s.size() || s.find(' ', sp + 1) != std::string::npos)
          field(where + ": \"" + s + "\" is not \"left right\"");
        out_.merges.emplace_back(s.substr(0, sp), s.substr(sp + 1));
      } else if (peek() == '[') {
        const auto half = [&](char after) {
          ++p_;  // '[' or ','
          ws();
          if (peek() != '"') bad_merge(where);
          std::string h = string();
          ws();
          if (peek() != after) bad_merge(where);
          return h;
        };
        std::string left = half(',');
        std::string right = half(']');
        ++p_;
        out_.merges.emplace_back(std::move(left), std::move(right));
      } else {
        bad_merge(where);
      }
    } while (next(']'));
  }

  const char* begin_;
  const char* p_;
  const char* end_;
  const std::string& path_;
  TokenizerJson& out_;
};

}  // namespace

std::string read_file(const std::string& path) {
  std::unique_ptr<FILE, int (*)(FILE*)> f(std::fopen(path.c_str(), "rb"), &std::fclose);
  if (!f) fail(path, ": cannot open file");
  std::string data;
  if (std::fseek(f.get(), 0, SEEK_END) == 0) {
    const long size = std::ftell(f.get());
    if (size > 0) data.reserve(static_cast<size_t>(size));
    std::rewind(f.get());
  }
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f.get())) > 0) data.append(buf, n);
  if (std::ferror(f.get())) fail(path, ": read error");
  return data;
}

TokenizerJson parse_tokenizer_json(std::string_view text, const std::string& path) {
  TokenizerJson out;
  out.vocab.reserve(text.size() / 40);  // about 26 bytes per vocab/merge entry in HF files
  out.merges.reserve(text.size() / 40);
  Parser(text, path, out).parse();
  return out;
}

}  // namespace qinfer::tok
