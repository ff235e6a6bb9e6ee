// The one JSON reader for everything the process takes in (request bodies, config.json,
// tokenizer_config.json, generation_config.json, safetensors headers, index files): nlohmann's
// parser with nesting bounded at parse time, so that no later copy, dump or walk of the tree
// can recurse deep enough to exhaust a thread's stack. Errors name the source ("request body",
// a file path) and, for too-deep input, the field path at which the limit was passed.
#pragma once
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "util/error.h"

namespace qinfer {

// Far above any real JSON Schema, config or tokenizer file (those nest under 20 levels).
inline constexpr int kMaxJsonDepth = 256;

// Malformed or too-deep JSON. what() is "<source>: <detail>"; field() is the path of the
// value at which nesting passed the limit ("tools[0].function.parameters.properties.a"),
// empty for a syntax error.
class JsonError : public Error {
 public:
  JsonError(const std::string& msg, std::string field, bool too_deep)
      : Error(msg), field_(std::move(field)), too_deep_(too_deep) {}
  const std::string& field() const { return field_; }
  bool too_deep() const { return too_deep_; }

 private:
  std::string field_;
  bool too_deep_;
};

// Parses text as JSON (source names it in errors); throws JsonError.
nlohmann::json parse_json(std::string_view text, const std::string& source, int max_depth = kMaxJsonDepth);
nlohmann::ordered_json parse_ordered_json(std::string_view text, const std::string& source,
                                          int max_depth = kMaxJsonDepth);

// Reads a whole regular file (a FIFO or device is refused: opening one could block) and parses
// it; errors name the path.
nlohmann::json read_json_file(const std::string& path, int max_depth = kMaxJsonDepth);
nlohmann::ordered_json read_ordered_json_file(const std::string& path, int max_depth = kMaxJsonDepth);

// A special-token field of tokenizer_config.json (bos_token, eos_token, pad_token, ...): a
// string, an AddedToken-like {"content": ...} object, or null. Its text, "" when absent or
// null; any other value throws Error naming `file` and the field.
std::string special_token_field(const nlohmann::ordered_json& cfg, const char* key, const std::string& file);

// The whole content of a regular file; refuses FIFOs, devices, directories; errors name the path.
std::string read_regular_file(const std::string& path);

}  // namespace qinfer
