// generation_config.json of a model folder, read once: the sampling defaults the server
// applies (kept as the file's ordered JSON; server/openai_request.cc reads its keys) and
// the end-of-sequence ids the engine stops on. An absent file is an empty config.
#pragma once
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace qinfer {

struct GenerationConfig {
  nlohmann::ordered_json json = nlohmann::ordered_json::object();  // the whole file (an object)
  std::vector<int> eos_token_ids;  // eos_token_id: an int or a list of ints; absent or null: none
};

// Reads DIR/generation_config.json through the bounded JSON parser; errors name the file
// and field (a non-object file, eos ids that are not integers in 0..2^31-1).
GenerationConfig read_generation_config(const std::string& model_dir);

}  // namespace qinfer
