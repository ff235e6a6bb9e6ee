// ToolSchemas: the request's `tools` list reduced to what the qwen3_coder parser needs
// (each function's name and its parameters.properties), and the conversion of a raw
// parameter value string against that schema, exactly as vLLM's _convert_param_value.
#pragma once
#include <nlohmann/json.hpp>
#include <set>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "chat/py_value.h"

namespace qinfer::chat {

using NameSet = std::set<std::string, std::less<>>;

class ToolSchemas {
 public:
  ToolSchemas() = default;
  // tools: the OpenAI list [{"type": "function", "function": {"name", "parameters"}}] (the
  // flat Responses form {"type": "function", "name", "parameters"} is accepted too); null or
  // an empty list mean no schemas. Entries that are not function tools are ignored.
  explicit ToolSchemas(const nlohmann::json& tools);

  // parameters.properties of the first tool with this name; nullptr when unknown, when it
  // has none, or when they are not an object or empty (vLLM's `{}`).
  const nlohmann::json* properties(std::string_view name) const;
  // The property names as a set (empty set = no filtering is possible).
  NameSet property_names(std::string_view name) const;

 private:
  struct Tool {
    std::string name;
    nlohmann::json properties;  // object (possibly empty)
  };
  std::vector<Tool> tools_;
};

// Raised where Python raises something vLLM does not catch (int(float("inf")) for a number
// typed parameter): the non-streaming parser then returns no tool calls at all.
struct ToolValueOverflow : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// vLLM's _convert_param_value: the raw value text of parameter `param` converted with its
// schema entry in `props` (nullptr: keep the string).
PyValue convert_param_value(std::string_view value, std::string_view param, const nlohmann::json* props);

}  // namespace qinfer::chat
