// qinfer::Error: the one exception type the product throws for bad input or
// failed operations. Its message always names the offending thing (file,
// tensor, config key, request field) so the CLI and server can print it as is.
#pragma once
#include <stdexcept>
#include <string>

namespace qinfer {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

// Throws qinfer::Error built from the pieces, e.g. fail("file ", path, ": truncated").
template <typename... Args>
[[noreturn]] void fail(const Args&... args);

std::string str_cat_impl(std::initializer_list<std::string> parts);

namespace detail {
inline std::string to_str(const std::string& s) { return s; }
inline std::string to_str(const char* s) { return s; }
inline std::string to_str(char c) { return std::string(1, c); }
template <typename T>
std::string to_str(const T& v) { return std::to_string(v); }
}  // namespace detail

template <typename... Args>
std::string cat(const Args&... args) {
  std::string out;
  ((out += detail::to_str(args)), ...);
  return out;
}

template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
  throw Error(cat(args...));
}

}  // namespace qinfer
