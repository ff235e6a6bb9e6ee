// The version GET /version reports (vLLM answers {"version": "<vllm version>"}).
#pragma once

namespace qinfer::server {

inline constexpr const char* kQinferVersion = "0.1.0";

}  // namespace qinfer::server
