#include "io/module_regex.h"

#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>

#include "util/error.h"

namespace qinfer {

namespace {

std::string pcre2_message(int code) {
  PCRE2_UCHAR buf[256];
  pcre2_get_error_message(code, buf, sizeof buf);
  return reinterpret_cast<const char*>(buf);
}

}  // namespace

struct ModuleRegex::Impl {
  pcre2_code* code = nullptr;
  pcre2_match_context* mctx = nullptr;
  ~Impl() {
    if (mctx) pcre2_match_context_free(mctx);
    if (code) pcre2_code_free(code);
  }
};

ModuleRegex::ModuleRegex(const std::string& pattern, const std::string& where)
    : impl_(std::make_unique<Impl>()), where_(where) {
  pcre2_compile_context* cctx = pcre2_compile_context_create(nullptr);
  pcre2_set_parens_nest_limit(cctx, kNestLimit);
  int err = 0;
  PCRE2_SIZE off = 0;
  impl_->code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>(pattern.data()), pattern.size(), PCRE2_UTF, &err, &off,
                              cctx);
  pcre2_compile_context_free(cctx);
  if (!impl_->code)
    fail(where, ": bad regular expression (at offset ", static_cast<size_t>(off), "): ", pcre2_message(err));
  impl_->mctx = pcre2_match_context_create(nullptr);
  pcre2_set_match_limit(impl_->mctx, kMatchLimit);
  pcre2_set_depth_limit(impl_->mctx, kDepthLimit);
  pcre2_set_heap_limit(impl_->mctx, 16 * 1024);  // KiB
}

ModuleRegex::~ModuleRegex() = default;

bool ModuleRegex::match_prefix(const std::string& subject) const {
  pcre2_match_data* md = pcre2_match_data_create_from_pattern(impl_->code, nullptr);
  const int rc = pcre2_match(impl_->code, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0,
                             PCRE2_ANCHORED, md, impl_->mctx);
  pcre2_match_data_free(md);
  if (rc >= 0) return true;
  if (rc == PCRE2_ERROR_NOMATCH) return false;
  fail(where_, ": regular expression cannot be matched against module '", subject, "': ", pcre2_message(rc),
       " (too much backtracking; simplify the pattern)");
}

}  // namespace qinfer
