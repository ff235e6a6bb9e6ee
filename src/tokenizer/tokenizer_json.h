// Fast reader for tokenizer.json: a SAX pass that streams model.vocab and
// model.merges into flat arrays and keeps every other part as a small DOM
// (building a full nlohmann DOM of the 12.8 MB file takes most of a second).
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <utility>
#include <vector>

namespace qinfer::tok {

struct TokenizerJson {
  nlohmann::json rest;  // the document with model.vocab and model.merges left out
  std::vector<std::pair<std::string, int64_t>> vocab;  // in file order
  bool has_vocab = false, has_merges = false;
  // Each merge as its two sides ("a b" strings are split at the space here).
  std::vector<std::pair<std::string, std::string>> merges;
};

// Reads and parses `path`; throws qinfer::Error naming the file.
TokenizerJson read_tokenizer_json(const std::string& path);

// Reads the whole file; throws qinfer::Error naming it.
std::string read_whole_file(const std::string& path);

}  // namespace qinfer::tok
