// The qwen3_coder tool-call format as a grammar, for tool_choice "required" / a named
// function. The server writes "<tool_call>\n<function=" (and, for a named function,
// "NAME>\n") into the prompt; this grammar covers the rest of ONE call:
//   NAME>\n                                  (required only: one of the tool names)
//   <parameter=P>\nVALUE\n</parameter>\n      (the schema's properties in order; required
//                                             ones always, the others optional)
//   </function>\n</tool_call>
// VALUE fits the property schema the way chat/tool_schema.cc converts it back: string-typed
// (and untyped) values are raw text without '<' (minLength/maxLength, enum, pattern and
// format apply); integer, number, boolean, null, object and array values are JSON per the
// schema (json_schema.h); anyOf is the alternation of its options.
#pragma once
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "grammar/ast.h"

namespace qinfer::grammar {

// tools: the request's tools list (OpenAI form). named: the forced function, or empty for
// "required" (any of the tools).
NodePtr tool_call_grammar(const nlohmann::ordered_json& tools, const std::string& named, std::string_view where);

}  // namespace qinfer::grammar
