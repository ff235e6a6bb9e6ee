#define PCRE2_CODE_UNIT_WIDTH 8
#include "tokenizer/pretokenizer.h"

#include <pcre2.h>

#include "util/error.h"

namespace qinfer::tok {
namespace {

// Unicode White_Space (PropList.txt), what Oniguruma's \s matches.
constexpr const char* kWhiteSpace =
    "\\x{09}-\\x{0D}\\x{20}\\x{85}\\x{A0}\\x{1680}\\x{2000}-\\x{200A}\\x{2028}\\x{2029}\\x{202F}\\x{205F}\\x{3000}";

bool is_ascii_letter(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
char other_case(char c) { return (c >= 'a' && c <= 'z') ? static_cast<char>(c - 32) : static_cast<char>(c + 32); }

std::string pcre2_message(int code) {
  PCRE2_UCHAR msg[256];
  pcre2_get_error_message(code, msg, sizeof msg);
  return reinterpret_cast<const char*>(msg);
}

}  // namespace

std::string translate_pattern(std::string_view p) {
  std::string out;
  bool in_class = false;
  int depth = 0;            // open groups
  int caseless_depth = -1;  // depth of the outermost open (?i: group, -1 if none
  for (size_t i = 0; i < p.size(); ++i) {
    const char c = p[i];
    if (c == '\\' && i + 1 < p.size()) {
      const char e = p[++i];
      if (e == 's') {
        out += in_class ? std::string(kWhiteSpace) : std::string("[") + kWhiteSpace + "]";
      } else if (e == 'S' && !in_class) {
        out += std::string("[^") + kWhiteSpace + "]";
      } else if ((e == 'p' || e == 'P') && i + 1 < p.size() && p[i + 1] == '{') {
        const size_t close = p.find('}', i);
        const size_t end = close == std::string_view::npos ? p.size() : close + 1;
        out += '\\';
        out.append(p.substr(i, end - i));
        i = end - 1;
      } else {
        out += '\\';
        out += e;
      }
      continue;
    }
    if (in_class) {  // classes inside (?i: ...) are left as they are (none in the Qwen patterns)
      if (c == ']') in_class = false;
      out += c;
      continue;
    }
    if (c == '[') {
      in_class = true;
      out += c;
      if (i + 1 < p.size() && p[i + 1] == '^') out += p[++i];
      if (i + 1 < p.size() && p[i + 1] == ']') out += p[++i];  // a literal ] first in a class
      continue;
    }
    if (c == '(') {
      ++depth;
      if (p.substr(i, 4) == "(?i:") {
        if (caseless_depth < 0) caseless_depth = depth;
        out += "(?:";
        i += 3;
        continue;
      }
    } else if (c == ')') {
      if (depth == caseless_depth) caseless_depth = -1;
      --depth;
    } else if (caseless_depth >= 0 && is_ascii_letter(c)) {
      out += '[';
      out += c;
      out += other_case(c);
      out += ']';
      continue;
    }
    out += c;
  }
  return out;
}

struct RegexSplitter::Impl {
  pcre2_code* code = nullptr;
  bool jit = false;
};

RegexSplitter::RegexSplitter(std::string_view onig_pattern, const std::string& where) : impl_(new Impl) {
  const std::string pat = translate_pattern(onig_pattern);
  int err = 0;
  PCRE2_SIZE off = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pat.data()), pat.size(), PCRE2_UTF | PCRE2_UCP, &err,
                              &off, nullptr);
  if (impl_->code == nullptr)
    fail(where, ": cannot compile pre-tokenizer regex (offset ", static_cast<size_t>(off), "): ", pcre2_message(err));
  impl_->jit = pcre2_jit_compile(impl_->code, PCRE2_JIT_COMPLETE) == 0;
}

RegexSplitter::~RegexSplitter() {
  if (impl_ && impl_->code) pcre2_code_free(impl_->code);
}

void RegexSplitter::split(std::string_view text, std::vector<std::string_view>& out) const {
  if (text.empty()) return;
  struct MatchData {
    pcre2_match_data* md;
    MatchData() : md(pcre2_match_data_create(1, nullptr)) {}
    ~MatchData() { pcre2_match_data_free(md); }
  };
  thread_local MatchData m;  // only the whole match is read; captures beyond it give rc == 0
  const auto* subject = reinterpret_cast<PCRE2_SPTR>(text.data());
  size_t pos = 0, emitted = 0;
  while (pos < text.size()) {
    const int rc = impl_->jit ? pcre2_jit_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, m.md, nullptr)
                              : pcre2_match(impl_->code, subject, text.size(), pos, PCRE2_NO_UTF_CHECK, m.md, nullptr);
    if (rc == PCRE2_ERROR_NOMATCH) break;
    if (rc < 0) fail("tokenizer: pre-tokenizer regex failed: ", pcre2_message(rc));
    const PCRE2_SIZE* ov = pcre2_get_ovector_pointer(m.md);
    const size_t start = ov[0], end = ov[1];
    if (start > emitted) out.push_back(text.substr(emitted, start - emitted));
    if (end > start) {
      out.push_back(text.substr(start, end - start));
      emitted = end;
      pos = end;
    } else {  // empty match: step over one character
      pos = start + 1;
      while (pos < text.size() && (static_cast<unsigned char>(text[pos]) & 0xC0) == 0x80) ++pos;
    }
  }
  if (emitted < text.size()) out.push_back(text.substr(emitted));
}

}  // namespace qinfer::tok
