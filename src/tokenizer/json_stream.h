// Fast reading of tokenizer.json: a SAX pass that streams model.vocab and model.merges (about
// 500k strings) straight into vectors and builds an ordinary nlohmann::json tree for everything
// else. Building the full tree is about ten times slower.
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
  std::vector<std::pair<std::string, int64_t>> vocab;           // byte-level token, id
  std::vector<std::pair<std::string, std::string>> merges;      // byte-level halves
};

// Reads the whole file; throws qinfer::Error naming the path when it cannot be read.
std::string read_file(const std::string& path);

// Parses tokenizer.json text; errors name `path` and the offending field.
TokenizerJson parse_tokenizer_json(const std::string& text, const std::string& path);

}  // namespace qinfer::tok
