// Errors of the template engine.
//   TemplateError: what callers see. A qinfer::Error whose message reads
//     "<template>:<line>: <construct>: <detail>", e.g.
//     "chat_template.jinja:87: raise_exception: No user query found in messages."
//     The parts are also available separately (the server reports `detail` of a
//     raise_exception as an HTTP 400 message).
//   EvalError: thrown by value operations that do not know where they are; the
//     interpreter catches it and rethrows a TemplateError naming the line.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>

#include "util/error.h"

namespace qinfer::jinja {

class TemplateError : public qinfer::Error {
 public:
  enum class Kind { Syntax, Runtime, Raised };
  TemplateError(Kind kind, std::string template_name, int line, std::string construct,
                std::string detail)
      : qinfer::Error(template_name + ":" + std::to_string(line) + ": " + construct + ": " + detail),
        kind_(kind),
        template_name_(std::move(template_name)),
        line_(line),
        construct_(std::move(construct)),
        detail_(std::move(detail)) {}

  Kind kind() const { return kind_; }
  const std::string& template_name() const { return template_name_; }
  int line() const { return line_; }
  const std::string& construct() const { return construct_; }
  const std::string& detail() const { return detail_; }

 private:
  Kind kind_;
  std::string template_name_;
  int line_;
  std::string construct_;
  std::string detail_;
};

class EvalError : public std::runtime_error {
 public:
  explicit EvalError(const std::string& msg) : std::runtime_error(msg) {}
};

// The largest string or list one operation may build (padding, indenting, '*'):
// past it a MemoryError names the operation, where Python would try to allocate
// (and a std::length_error or an out-of-memory kill would end the process).
constexpr int64_t kMaxBuiltElems = int64_t{1} << 28;
// n copies of `each` elements (each >= 1).
inline void check_built_size(int64_t n, const char* what, int64_t each = 1) {
  if (each > 0 && n > kMaxBuiltElems / each)
    throw EvalError("MemoryError: " + std::string(what) + " would build " + std::to_string(n) + " x " +
                    std::to_string(each) + " elements (templates stop at " + std::to_string(kMaxBuiltElems) + ")");
}

}  // namespace qinfer::jinja
