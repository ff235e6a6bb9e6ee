// Structural scanning of the Qwen3-Coder tool-call XML, shared by the non-streaming and the
// streaming qwen3_coder parsers. These mirror vLLM's helpers of the same purpose; a tag only
// counts where the format puts it, so literal tags inside parameter values are skipped:
//   <tool_call>\n<function=NAME>\n<parameter=P>\nVALUE\n</parameter>\n</function>\n</tool_call>
#pragma once
#include <optional>
#include <string>
#include <string_view>

#include "chat/py_value.h"
#include "chat/tool_schema.h"

namespace qinfer::chat::xml {

inline constexpr std::string_view kFunctionPrefix = "<function=";
inline constexpr std::string_view kFunctionEnd = "</function>";
inline constexpr std::string_view kParamPrefix = "<parameter=";
inline constexpr std::string_view kParamEnd = "</parameter>";
inline constexpr size_t npos = std::string_view::npos;

// Next "<parameter=" at or after `from` that starts the text or follows a '\n'; with a
// filter, its name (up to '>') must also be in it. nullptr filter: any name (vLLM's None).
size_t next_param_open(std::string_view text, size_t from, const NameSet* filter);

// First "</function>" followed (after whitespace) by "</tool_call>", or by the end of text
// when allow_end (never true while streaming, since more text may follow).
size_t true_function_end(std::string_view text, bool allow_end);

// The "</parameter>" that really closes a value: depth-0 (nested literal parameter blocks are
// skipped) and followed by a parameter open of a schema name, "</function>", "</tool_call>",
// or (unless require_lookahead) the end of text. npos if none yet. partial: more text may
// follow, so a close whose lookahead is still incomplete gives npos (undecided) rather than
// being skipped for a later one — what keeps streaming independent of the split.
size_t true_param_end(std::string_view value, const NameSet* filter, bool require_lookahead, bool partial = false);

// Walks a function body (text after "<function=NAME>") parameter by parameter and returns
// the offset of its structural "</function>", recovering from a missing "</parameter>" at the
// next structural open of a not-yet-seen schema name. npos if incomplete or malformed.
size_t scan_function_end(std::string_view body, const NameSet* filter, bool allow_end);

// A function name vLLM accepts: non-empty, none of { } < > " ' or whitespace.
bool valid_function_name(std::string_view name);

struct ParsedCall {
  std::string name;
  std::vector<std::pair<std::string, PyValue>> params;  // in text order, duplicates kept
  PyValue arguments() const;  // the dict vLLM builds: later duplicates overwrite in place
};
// vLLM _parse_xml_function_call over the text after "<function=" (up to the structural end).
// nullopt for a missing '>' or an invalid name. May throw ToolValueOverflow.
std::optional<ParsedCall> parse_function(std::string_view fn, const ToolSchemas& tools);

// One streamed arguments fragment: "NAME": VALUE, preceded by ", " unless first.
std::string argument_fragment(std::string_view name, const PyValue& value, bool first);

// vLLM _get_function_calls: the texts after "<function=" of every tool-call block.
std::vector<std::string_view> split_function_calls(std::string_view output, const ToolSchemas& tools);

// One parameter value (between "<parameter=NAME>" and its close) with one leading and one
// trailing '\n' removed, as vLLM stores it.
std::string_view trim_value(std::string_view v);

}  // namespace qinfer::chat::xml
