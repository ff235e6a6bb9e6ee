// An error answered to an HTTP client as OpenAI does:
//   {"error": {"message": ..., "type": ..., "param": ..., "code": ...}} with an HTTP status.
#pragma once
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

namespace qinfer::server {

class ApiError : public std::runtime_error {
 public:
  ApiError(int status, std::string message, std::string param = {}, std::string code = {})
      : std::runtime_error(message), status_(status), param_(std::move(param)), code_(std::move(code)) {}
  int status() const { return status_; }
  const std::string& param() const { return param_; }
  const std::string& code() const { return code_; }
  // "invalid_request_error" (4xx), "authentication_error" (401), "server_error" (5xx).
  std::string type() const;
  nlohmann::json to_json() const;

 private:
  int status_;
  std::string param_, code_;
};

// 400 invalid_request_error naming the field.
[[noreturn]] void bad_request(const std::string& param, const std::string& message);

}  // namespace qinfer::server
