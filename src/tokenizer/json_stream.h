// Fast reading of tokenizer.json. A small strict JSON parser streams model.vocab and
// model.merges (about 500k strings) straight into vectors and builds an ordinary
// nlohmann::json tree for everything else; nlohmann's own parser is several times slower on
// this 13 MB file.
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace qinfer::tok {

struct TokenizerJson {
  nlohmann::json doc;  // the file, with model.vocab / model.merges set to null when streamed
  bool vocab_streamed = false, merges_streamed = false;
  std::vector<std::pair<std::string, int64_t>> vocab;       // byte-level token, id
  std::vector<std::pair<std::string, std::string>> merges;  // byte-level halves
};

// Reads the whole file; throws qinfer::Error naming the path when it cannot be read.
std::string read_file(const std::string& path);

// Parses tokenizer.json text. model.vocab is streamed when it is an object and model.merges
// when it is an array. Errors name `path` and the byte offset or the offending field.
TokenizerJson parse_tokenizer_json(std::string_view text, const std::string& path);

}  // namespace qinfer::tok
