// Python json.dumps() over JSON data, byte for byte: insertion key order,
// separators (", ", ": ") by default or (",", ": ") with indent, floats as
// Python repr, ensure_ascii \uXXXX escapes (with surrogate pairs), sort_keys.
// Hugging Face's `tojson` filter is json.dumps(x, ensure_ascii=False, ...).
#pragma once
#include <optional>
#include <string>

#include "jinja/value.h"

namespace qinfer::jinja {

struct DumpOptions {
  bool ensure_ascii = false;
  std::optional<std::string> indent;  // nullopt: single line; else the per-level indent string
  std::string item_sep = ", ";
  std::string key_sep = ": ";
  bool sort_keys = false;
};

std::string py_json_dumps(const Json& j, const DumpOptions& opt);

}  // namespace qinfer::jinja
