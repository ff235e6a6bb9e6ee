// Helpers shared by the qwen3_coder parser tests: tool-call XML builders and a
// deterministic id generator.
#pragma once
#include <memory>
#include <string>
#include <string_view>

#include "chat/tool_parser.h"

namespace qinfer::chat::testing {

inline ToolCallIdGenerator counter_ids() {
  auto n = std::make_shared<int>(0);
  return [n] { return "id" + std::to_string((*n)++); };
}

// <tool_call>\n<function=FN>\nPARAMS</function>\n</tool_call>
inline std::string call(std::string_view fn, std::string_view params) {
  return "<tool_call>\n<function=" + std::string(fn) + ">\n" + std::string(params) + "</function>\n</tool_call>";
}

// <parameter=NAME>\nVALUE\n</parameter>\n
inline std::string param(std::string_view name, std::string_view value) {
  return "<parameter=" + std::string(name) + ">\n" + std::string(value) + "\n</parameter>\n";
}

}  // namespace qinfer::chat::testing
