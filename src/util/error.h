// qinfer::Error: the one exception type the product throws for bad input or
// failed operations. Its message always names the offending thing (file,
// tensor, config key, request field) so the CLI and server can print it as is.
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <type_traits>

namespace qinfer {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& msg) : std::runtime_error(msg) {}
};

namespace detail {
template <typename T>
std::string to_str(const T& v) {
  if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    return std::string(std::string_view(v));
  } else if constexpr (std::is_same_v<T, char>) {
    return std::string(1, v);
  } else if constexpr (std::is_same_v<T, bool>) {
    return v ? "true" : "false";
  } else if constexpr (std::is_arithmetic_v<T>) {
    return std::to_string(v);
  } else {
    std::ostringstream os;
    os << v;
    return os.str();
  }
}
}  // namespace detail

// Concatenates strings and numbers: cat("layer ", 3, ": ", name).
template <typename... Args>
std::string cat(const Args&... args) {
  std::string out;
  ((out += detail::to_str(args)), ...);
  return out;
}

// Throws qinfer::Error built from the pieces, e.g. fail("file ", path, ": truncated").
template <typename... Args>
[[noreturn]] void fail(const Args&... args) {
  throw Error(cat(args...));
}

}  // namespace qinfer
