#include "server/api_error.h"

namespace qinfer::server {

std::string ApiError::type() const {
  if (status_ == 401) return "authentication_error";
  if (status_ == 404) return "invalid_request_error";
  if (status_ >= 500) return "server_error";
  return "invalid_request_error";
}

nlohmann::json ApiError::to_json() const {
  nlohmann::json e = {{"message", what()}, {"type", type()}};
  e["param"] = param_.empty() ? nlohmann::json(nullptr) : nlohmann::json(param_);
  e["code"] = code_.empty() ? nlohmann::json(nullptr) : nlohmann::json(code_);
  return {{"error", e}};
}

void bad_request(const std::string& param, const std::string& message) {
  throw ApiError(400, message, param);
}

}  // namespace qinfer::server
