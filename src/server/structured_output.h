// Structured outputs in a request body: OpenAI's response_format (json_object, json_schema),
// vLLM's structured_outputs {json, regex, choice, grammar, json_object} and the older
// guided_json / guided_regex / guided_choice / guided_grammar. At most one may be given.
// Unsupported parts (structural_tag, whitespace_pattern, ...) are a 400 naming the field.
#pragma once
#include <memory>
#include <optional>

#include <nlohmann/json.hpp>

#include "grammar/compiler.h"

namespace qinfer::server {

// nullopt: the request asks for free text. Throws ApiError 400 for a malformed field.
std::optional<grammar::Spec> parse_structured_output(const nlohmann::ordered_json& body);

// The forced qwen3_coder tool call (tool_choice "required" or a named function).
grammar::Spec tool_call_spec(const nlohmann::ordered_json& tools, const std::string& named);

// Compiles (or finds in the cache) the grammar; a bad or unsupported schema / regex /
// grammar is an ApiError 400 naming the field and the feature. `compiler` is the engine's
// (Engine::grammar_compiler()); null (a model without a tokenizer) is a 400 too.
std::shared_ptr<const grammar::Grammar> compile_structured(grammar::Compiler* compiler, const grammar::Spec& spec);

}  // namespace qinfer::server
