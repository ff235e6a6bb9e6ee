#include "chat/tool_xml.h"

#include "chat/reasoning_parser.h"
#include "chat/text_util.h"

namespace qinfer::chat::xml {

namespace {

bool filter_has(const NameSet* filter, std::string_view name) { return filter->find(name) != filter->end(); }

bool is_xml_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

}  // namespace

size_t next_param_open(std::string_view text, size_t from, const NameSet* filter) {
  for (size_t ni = from;; ++ni) {
    ni = text.find(kParamPrefix, ni);
    if (ni == npos) return npos;
    if (ni != 0 && text[ni - 1] != '\n') continue;
    if (!filter) return ni;
    const size_t name_start = ni + kParamPrefix.size();
    const size_t name_end = text.find('>', name_start);
    if (name_end != npos && filter_has(filter, text.substr(name_start, name_end - name_start))) return ni;
  }
}

size_t true_function_end(std::string_view text, bool allow_end) {
  for (size_t pos = 0;;) {
    const size_t idx = text.find(kFunctionEnd, pos);
    if (idx == npos) return npos;
    const std::string_view after = py_lstrip(text.substr(idx + kFunctionEnd.size()));
    if ((after.empty() && allow_end) || after.starts_with(kToolCallEnd)) return idx;
    // While streaming, a lookahead that may still become "</tool_call>" is undecided: going on
    // to a later "</function>" would make the result depend on how the text was split.
    if (!allow_end && kToolCallEnd.starts_with(after)) return npos;
    pos = idx + kFunctionEnd.size();
  }
}

size_t true_param_end(std::string_view value, const NameSet* filter, bool require_lookahead, bool partial) {
  int depth = 0;
  size_t pos = 0;
  while (pos < value.size()) {
    // Depth tracking uses every structural open, whatever its name.
    const size_t next_open = next_param_open(value, pos, nullptr);
    const size_t next_close = value.find(kParamEnd, pos);
    if (next_close == npos) return npos;
    if (next_open != npos && next_open < next_close) {
      ++depth;
      pos = next_open + kParamPrefix.size();
    } else if (depth == 0) {
      const std::string_view after = py_lstrip(value.substr(next_close + kParamEnd.size()));
      bool next_param = false;
      const auto proper_prefix = [&](std::string_view tag) { return after.size() < tag.size() && tag.starts_with(after); };
      if (partial && (proper_prefix(kParamPrefix) || proper_prefix(kFunctionEnd) || proper_prefix(kToolCallEnd) ||
                      (filter && after.starts_with(kParamPrefix) && after.find('>') == npos)))
        return npos;  // the lookahead is not complete yet: undecided, not "no"
      if (after.starts_with(kParamPrefix)) {
        if (filter) {
          const size_t name_end = after.find('>', kParamPrefix.size());
          next_param = name_end != npos &&
                       filter_has(filter, after.substr(kParamPrefix.size(), name_end - kParamPrefix.size()));
        } else {
          next_param = true;
        }
      }
      if ((after.empty() && !require_lookahead) || next_param || after.starts_with(kFunctionEnd) ||
          after.starts_with(kToolCallEnd))
        return next_close;
      pos = next_close + kParamEnd.size();
    } else {
      --depth;
      pos = next_close + kParamEnd.size();
    }
  }
  return npos;
}

size_t scan_function_end(std::string_view body, const NameSet* filter, bool allow_end) {
  NameSet seen;
  size_t pos = 0;
  const size_t n = body.size();
  while (pos < n) {
    while (pos < n && is_xml_space(body[pos])) ++pos;
    if (pos >= n) return npos;
    const std::string_view rest = body.substr(pos);
    if (rest.starts_with(kFunctionEnd)) return pos;
    if (!rest.starts_with(kParamPrefix)) {
      // Unexpected text before </function>: fall back to the lookahead heuristic.
      const size_t off = true_function_end(rest, allow_end);
      return off == npos ? npos : pos + off;
    }
    const size_t name_end = body.find('>', pos + kParamPrefix.size());
    if (name_end == npos) return npos;
    std::string name(body.substr(pos + kParamPrefix.size(), name_end - pos - kParamPrefix.size()));
    size_t value_start = name_end + 1;
    if (value_start < n && body[value_start] == '\n') ++value_start;
    const std::string_view value = body.substr(value_start);
    const size_t end = true_param_end(value, filter, true, !allow_end);
    if (end == npos) {
      // While streaming, the close may still arrive: undecided.
      if (!allow_end) return npos;
      // Missing </parameter>: the next structural open of an unseen name ends the value.
      size_t implicit;
      if (filter) {
        NameSet unseen;
        for (const auto& k : *filter)
          if (!seen.count(k) && k != name) unseen.insert(k);
        implicit = next_param_open(value, 0, &unseen);
      } else {
        implicit = next_param_open(value, 0, nullptr);
      }
      if (implicit == npos) return npos;
      pos = value_start + implicit;
      seen.insert(std::move(name));
      continue;
    }
    seen.insert(std::move(name));
    pos = value_start + end + kParamEnd.size();
  }
  return npos;
}

bool valid_function_name(std::string_view name) {
  if (name.empty()) return false;
  return name.find_first_of("{}<>\"' \t\n\r") == npos;
}

std::string_view trim_value(std::string_view v) {
  if (v.starts_with('\n')) v.remove_prefix(1);
  if (v.ends_with('\n')) v.remove_suffix(1);
  return v;
}

std::optional<ParsedCall> parse_function(std::string_view fn, const ToolSchemas& tools) {
  const size_t end_index = fn.find('>');
  if (end_index == npos) return std::nullopt;
  ParsedCall call{std::string(fn.substr(0, end_index)), {}};
  if (!valid_function_name(call.name)) return std::nullopt;
  const nlohmann::json* props = tools.properties(call.name);
  const NameSet names = tools.property_names(call.name);
  const NameSet* filter = props ? &names : nullptr;
  const std::string_view params = fn.substr(end_index + 1);
  size_t pos = 0;
  for (;;) {
    // Top-level opens are not filtered by the schema: undeclared names are kept as strings.
    const size_t start = next_param_open(params, pos, nullptr);
    if (start == npos) break;
    const size_t name_start = start + kParamPrefix.size();
    const size_t name_end = params.find('>', name_start);
    if (name_end == npos) break;
    const std::string_view pname = params.substr(name_start, name_end - name_start);
    const std::string_view value_text = params.substr(name_end + 1);
    std::string_view value;
    const size_t end = true_param_end(value_text, filter, false);
    if (end == npos) {
      const size_t next = next_param_open(value_text, 0, filter);
      if (next != npos) {
        value = value_text.substr(0, next);
        pos = name_end + 1 + next;
      } else {
        const size_t fend = true_function_end(value_text, true);
        value = fend != npos ? value_text.substr(0, fend) : value_text;
        pos = params.size();
      }
    } else {
      value = value_text.substr(0, end);
      pos = name_end + 1 + end + kParamEnd.size();
    }
    call.params.emplace_back(std::string(pname), convert_param_value(trim_value(value), pname, props));
  }
  return call;
}

PyValue ParsedCall::arguments() const {
  PyValue d;
  d.kind = PyValue::Kind::kDict;
  for (const auto& [k, v] : params) d.dict_set(PyValue::str(k), v);
  return d;
}

std::string argument_fragment(std::string_view name, const PyValue& value, bool first) {
  std::string frag = first ? "" : ", ";
  py_json_dump_string(frag, name);
  frag += ": ";
  try {
    frag += py_json_dumps(value);
  } catch (const JsonDumpError&) {
    frag += "null";  // only reached for values the non-streaming parser would reject outright
  }
  return frag;
}

std::vector<std::string_view> split_function_calls(std::string_view output, const ToolSchemas& tools) {
  // Tool-call blocks end at a structural </tool_call>: one followed by another <tool_call>
  // or by the end of the text; an unterminated last block runs to the end.
  std::vector<std::string_view> raw;
  for (size_t search = 0;;) {
    const size_t start = output.find(kToolCallStart, search);
    if (start == npos) break;
    const std::string_view after_open = output.substr(start + kToolCallStart.size());
    size_t end = npos;
    for (size_t inner = 0;;) {
      const size_t idx = after_open.find(kToolCallEnd, inner);
      if (idx == npos) break;
      const std::string_view after = py_lstrip(after_open.substr(idx + kToolCallEnd.size()));
      if (after.empty() || after.starts_with(kToolCallStart)) {
        end = idx;
        break;
      }
      inner = idx + kToolCallEnd.size();
    }
    if (end == npos) {
      raw.push_back(after_open);
      break;
    }
    raw.push_back(after_open.substr(0, end));
    search = start + kToolCallStart.size() + end + kToolCallEnd.size();
  }
  if (raw.empty()) raw.push_back(output);  // back-off: a bare <function=...>

  std::vector<std::string_view> calls;
  for (std::string_view block : raw) {
    const size_t fs = block.find(kFunctionPrefix);
    if (fs == npos) continue;
    const std::string_view after = block.substr(fs + kFunctionPrefix.size());
    const size_t name_end = after.find('>');
    NameSet names;
    const NameSet* filter = nullptr;
    size_t body_start = 0;
    if (name_end != npos) {
      const std::string_view fname = after.substr(0, name_end);
      if (tools.properties(fname)) {
        names = tools.property_names(fname);
        filter = &names;
      }
      body_start = name_end + 1;
    }
    const size_t scan = scan_function_end(after.substr(body_start), filter, true);
    if (scan != npos) {
      calls.push_back(after.substr(0, body_start + scan));
      continue;
    }
    const size_t fend = true_function_end(after, true);
    calls.push_back(fend == npos ? after : after.substr(0, fend));
  }
  return calls;
}

}  // namespace qinfer::chat::xml
