#include "chat/tool_schema.h"

#include <cmath>

#include "chat/text_util.h"

namespace qinfer::chat {

ToolSchemas::ToolSchemas(const nlohmann::json& tools) {
  if (!tools.is_array()) return;
  for (const auto& tool : tools) {
    if (!tool.is_object()) continue;
    const nlohmann::json* fn = &tool;
    if (auto it = tool.find("function"); it != tool.end() && it->is_object()) fn = &*it;
    auto name = fn->find("name");
    if (name == fn->end() || !name->is_string()) continue;
    Tool t{name->get<std::string>(), nlohmann::json::object()};
    if (auto params = fn->find("parameters"); params != fn->end() && params->is_object()) {
      if (auto props = params->find("properties"); props != params->end() && props->is_object())
        t.properties = *props;
    }
    tools_.push_back(std::move(t));
  }
}

const nlohmann::json* ToolSchemas::properties(std::string_view name) const {
  for (const auto& t : tools_)
    if (t.name == name) return t.properties.empty() ? nullptr : &t.properties;
  return nullptr;
}

NameSet ToolSchemas::property_names(std::string_view name) const {
  NameSet out;
  if (const auto* props = properties(name))
    for (const auto& [k, v] : props->items()) out.insert(k);
  return out;
}

namespace {

std::string ascii_lower(std::string_view s) {
  std::string out(s);
  for (char& c : out)
    if (c >= 'A' && c <= 'Z') c = char(c - 'A' + 'a');
  return out;
}

// str(schema["type"]).strip().lower(). A non-string type (a list such as ["string", "null"])
// stringifies to Python repr text that matches none of the type names below.
std::string type_name(const nlohmann::json& t) {
  if (t.is_string()) return ascii_lower(py_strip(t.get_ref<const std::string&>()));
  return "<non-string type>";
}

bool starts_with_any(std::string_view s, std::initializer_list<std::string_view> prefixes) {
  for (auto p : prefixes)
    if (s.starts_with(p)) return true;
  return false;
}

bool one_of(std::string_view s, std::initializer_list<std::string_view> names) {
  for (auto n : names)
    if (s == n) return true;
  return false;
}

}  // namespace

PyValue convert_param_value(std::string_view value, std::string_view param, const nlohmann::json* props) {
  if (!props) return PyValue::str(std::string(value));
  auto it = props->find(std::string(param));
  if (it == props->end()) return PyValue::str(std::string(value));
  const nlohmann::json& cfg = *it;

  bool allows_null = false;
  std::string type = "string";
  if (cfg.is_object() && cfg.contains("type")) {
    type = type_name(cfg["type"]);
    allows_null = type == "null";
  } else if (cfg.is_object() && cfg.contains("anyOf")) {
    bool picked = false;
    const auto& any_of = cfg["anyOf"];
    if (any_of.is_array()) {
      for (const auto& option : any_of) {
        if (!option.is_object() || !option.contains("type")) continue;
        const std::string t = type_name(option["type"]);
        if (t == "null") {
          allows_null = true;
        } else if (!picked) {
          type = t;
          picked = true;
        }
      }
    }
  }

  const std::string lower = ascii_lower(value);
  const bool null_word = lower == "null" || lower == "none";
  if (allows_null && null_word) return PyValue::none();
  if (one_of(type, {"string", "str", "text", "varchar", "char", "enum"})) return PyValue::str(std::string(value));
  if (null_word) return PyValue::none();
  if (starts_with_any(type, {"int", "uint", "long", "short", "unsigned"})) {
    if (auto n = py_int(value)) return *n;
    return PyValue::str(std::string(value));
  }
  if (starts_with_any(type, {"num", "float"})) {
    const auto f = py_float(value);
    if (!f || std::isnan(*f)) return PyValue::str(std::string(value));  // int(nan): ValueError
    if (std::isinf(*f)) throw ToolValueOverflow("cannot convert float infinity to integer");
    if (*f - std::trunc(*f) != 0.0) return PyValue::floating(*f);
    return PyValue::integer(py_int_of_double(*f));
  }
  if (one_of(type, {"boolean", "bool", "binary"})) return PyValue::boolean(lower == "true");

  const bool container = one_of(type, {"object", "array", "arr"}) || starts_with_any(type, {"dict", "list"});
  if (container) {
    if (auto parsed = py_json_loads(value)) {
      // A JSON-encoded Python repr ("{'k': 'v'}" in quotes) gets one more literal pass.
      if (parsed->kind == PyValue::Kind::kStr)
        if (auto lit = py_literal_eval(parsed->s)) return *lit;
      return *parsed;
    }
  }
  auto lit = py_literal_eval(value);
  if (!lit) return PyValue::str(std::string(value));
  if (container && lit->kind == PyValue::Kind::kStr)
    if (auto again = py_literal_eval(lit->s)) return *again;
  return *lit;
}

}  // namespace qinfer::chat
