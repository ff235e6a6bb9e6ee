// ToolCallStream: the streaming qwen3_coder parser (see tool_parser.h). It rescans the
// accumulated text with the same structural helpers as the non-streaming parser, so a split
// anywhere (even inside a tag) cannot change what is emitted, only when.
#include "chat/reasoning_parser.h"
#include "chat/text_util.h"
#include "chat/tool_parser.h"
#include "chat/tool_xml.h"

namespace qinfer::chat {

namespace {

bool is_xml_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

bool has_duplicate_name(const xml::ParsedCall& call) {
  for (size_t i = 0; i < call.params.size(); ++i)
    for (size_t j = 0; j < i; ++j)
      if (call.params[i].first == call.params[j].first) return true;
  return false;
}

// A call with a duplicated parameter name streams every value in text order, however the
// text was split: piecewise the first value may already be out before the duplicate shows up,
// so the whole-block case sends the same (JSON readers keep the last value, as the
// non-streaming dict does).
bool has_tag(std::string_view value) {
  for (std::string_view tag : {xml::kParamPrefix, xml::kParamEnd, xml::kFunctionPrefix, xml::kFunctionEnd,
                               kToolCallStart, kToolCallEnd})
    if (value.find(tag) != std::string_view::npos) return true;
  return false;
}

std::string text_order_args(const xml::ParsedCall& call) {
  std::string args = "{";
  for (size_t i = 0; i < call.params.size(); ++i)
    args += xml::argument_fragment(call.params[i].first, call.params[i].second, i == 0);
  return args + "}";
}

}  // namespace

ToolCallStream::ToolCallStream(ToolSchemas tools, ToolCallIdGenerator ids)
    : tools_(std::move(tools)), ids_(std::move(ids)) {}

ToolStreamDelta ToolCallStream::push(std::string_view delta) {
  ToolStreamDelta out;
  // A character cut by the split waits for its last byte (see incomplete_utf8_tail).
  append_whole_characters(utf8_tail_, delta, text_);
  process(out, false);
  return out;
}

ToolStreamDelta ToolCallStream::finish() {
  ToolStreamDelta out;
  text_.append(utf8_tail_);
  utf8_tail_.clear();
  process(out, true);
  return out;
}

void ToolCallStream::emit_args(ToolStreamDelta& out, std::string_view text) {
  if (text.empty()) return;
  streamed_args_.append(text);
  if (out.tool_calls.empty() || out.tool_calls.back().index != next_index_) out.tool_calls.push_back({next_index_, "", "", ""});
  out.tool_calls.back().arguments.append(text);
}

void ToolCallStream::process(ToolStreamDelta& out, bool at_end) {
  for (;;) {
    if (in_call_) {
      if (!process_call(out, at_end)) return;
      continue;
    }
    const size_t p = text_.find(kToolCallStart, sent_);
    if (p != xml::npos) {
      const std::string_view before = std::string_view(text_).substr(sent_, p - sent_);
      if (!(after_call_ && py_isblank(before))) out.content.append(before);
      after_call_ = false;
      sent_ = p;
      in_call_ = true;
      call_start_ = p;
      header_seen_ = header_sent_ = false;
      param_pos_ = 0;
      params_emitted_ = 0;
      params_blocked_ = false;
      streamed_args_.clear();
      continue;
    }
    const std::string_view rest = std::string_view(text_).substr(sent_);
    const size_t hold = at_end ? 0 : partial_tag_overlap(rest, kToolCallStart);
    const std::string_view chunk = rest.substr(0, rest.size() - hold);
    if (after_call_ && py_isblank(chunk)) {
      // Whitespace after a call is dropped unless real text follows it.
      if (at_end) sent_ = text_.size();
      return;
    }
    out.content.append(chunk);
    sent_ += chunk.size();
    if (!chunk.empty()) after_call_ = false;
    return;
  }
}

bool ToolCallStream::process_call(ToolStreamDelta& out, bool at_end) {
  const size_t block_start = call_start_ + kToolCallStart.size();
  if (!header_seen_) {
    const std::string_view block = std::string_view(text_).substr(block_start);
    const size_t fpos = block.find(xml::kFunctionPrefix);
    const size_t close = block.find(kToolCallEnd);
    if (close != xml::npos && (fpos == xml::npos || close < fpos)) {
      // <tool_call>...</tool_call> without a function: prose, not a call.
      const size_t end = block_start + close + kToolCallEnd.size();
      out.content.append(text_, call_start_, end - call_start_);
      sent_ = end;
      in_call_ = false;
      return true;
    }
    if (fpos == xml::npos) {
      if (!at_end) return false;
      out.content.append(text_, call_start_);
      sent_ = text_.size();
      in_call_ = false;
      return true;
    }
    const size_t name_start = fpos + xml::kFunctionPrefix.size();
    const size_t name_end = block.find('>', name_start);
    if (name_end == xml::npos) {
      if (!at_end) return false;
      // Like the non-streaming parser: a call whose name never closed yields nothing.
      sent_ = text_.size();
      in_call_ = false;
      after_call_ = true;
      return true;
    }
    header_seen_ = true;
    name_ = std::string(block.substr(name_start, name_end - name_start));
    body_start_ = block_start + name_end + 1;
    param_pos_ = 0;
    has_props_ = tools_.properties(name_) != nullptr;
    names_ = tools_.property_names(name_);
    if (xml::valid_function_name(name_)) {
      header_sent_ = true;
      id_ = ids_();
      out.tool_calls.push_back({next_index_, id_, name_, ""});
      emit_args(out, "{");
    }
  }

  const NameSet* filter = has_props_ ? &names_ : nullptr;
  // The function's extent is cut as split_function_calls cuts it: at the first "</tool_call>"
  // followed (after whitespace) by "<tool_call>", or by the end of the text. While the text
  // after a "</tool_call>" may still become "<tool_call>", the cut is undecided; then only what
  // lies before it is used and nothing that needs the end of the text is decided, so every
  // decision made is the one the whole text would give (independent of the split).
  const std::string_view whole_body = std::string_view(text_).substr(body_start_);
  std::string_view body = whole_body;
  bool decided = at_end;
  for (size_t idx = body.find(kToolCallEnd); idx != xml::npos; idx = body.find(kToolCallEnd, idx + 1)) {
    const std::string_view after = py_lstrip(body.substr(idx + kToolCallEnd.size()));
    const bool cut = after.starts_with(kToolCallStart) || (at_end && after.empty());
    if (cut || (!at_end && kToolCallStart.starts_with(after))) {
      body = body.substr(0, idx + kToolCallEnd.size());
      decided = cut;
      break;
    }
  }
  size_t block_end = xml::npos;
  const size_t fend = xml::scan_function_end(body, filter, decided);
  if (fend != xml::npos) {
    const size_t after = body_start_ + fend + xml::kFunctionEnd.size();
    size_t k = after;
    while (k < text_.size() && is_xml_space(text_[k])) ++k;
    const std::string_view rest = std::string_view(text_).substr(k);
    if (rest.starts_with(kToolCallEnd)) {
      block_end = k + kToolCallEnd.size();
    } else if (at_end || (!rest.empty() && !kToolCallEnd.starts_with(rest))) {
      block_end = after;  // </function> not followed by </tool_call>: the call ends here
    }
  } else if (decided) {
    // The function end is not structurally known (e.g. a missing </function>): the block
    // ends at the cut.
    block_end = body_start_ + body.size();
  }

  if (block_end == xml::npos) {
    if (header_sent_) stream_params(out, body);
    return false;
  }
  end_call(out, block_end);
  return true;
}

// Streams every parameter of the body (text from body_start_; all of it or what has come so
// far) whose structural close has arrived and that the block's final parse is certain to read
// the same, continuing from param_pos_; stops for good (params_blocked_) at the first that is
// not. Only what lies before the first "</function>" or "</tool_call>" of any kind is used
// (what follows one may belong to another block; those values go out with the final parse).
void ToolCallStream::stream_params(ToolStreamDelta& out, std::string_view body) {
  if (params_blocked_) return;
  const NameSet* filter = has_props_ ? &names_ : nullptr;
  const nlohmann::json* props = tools_.properties(name_);
  const size_t fn_end = body.find(xml::kFunctionEnd);  // kept, as the last value's lookahead
  body = body.substr(0, std::min(fn_end == xml::npos ? fn_end : fn_end + xml::kFunctionEnd.size(),
                                 body.find(kToolCallEnd)));
  for (;;) {
    const size_t start = xml::next_param_open(body, param_pos_, nullptr);
    if (start == xml::npos) break;
    const size_t pname_start = start + xml::kParamPrefix.size();
    const size_t pname_end = body.find('>', pname_start);
    if (pname_end == xml::npos) break;
    const std::string_view pname = body.substr(pname_start, pname_end - pname_start);
    const std::string_view value_text = body.substr(pname_end + 1);
    const size_t end = xml::true_param_end(value_text, filter, true, true);
    if (end == xml::npos) break;
    const std::string_view value = xml::trim_value(value_text.substr(0, end));
    // Only a value free of tags is certain to be read the same by the block's final parse
    // (its close is then the first "</parameter>" in every reading); anything else, and a
    // value vLLM would reject, waits for the final parse with all that follow it.
    if (has_tag(value)) {
      params_blocked_ = true;
      break;
    }
    PyValue v;
    try {
      v = convert_param_value(value, pname, props);
    } catch (const ToolValueOverflow&) {
      params_blocked_ = true;
      break;
    }
    emit_args(out, xml::argument_fragment(pname, v, params_emitted_ == 0));
    ++params_emitted_;
    param_pos_ = pname_end + 1 + end + xml::kParamEnd.size();
  }
}

void ToolCallStream::end_call(ToolStreamDelta& out, size_t block_end) {
  if (header_sent_) {
    // The block's final arguments, exactly as the non-streaming parser reads them.
    const std::string_view block = std::string_view(text_).substr(call_start_, block_end - call_start_);
    std::optional<xml::ParsedCall> parsed;
    std::string final_args;
    try {
      const auto fns = xml::split_function_calls(block, tools_);
      if (!fns.empty()) parsed = xml::parse_function(fns[0], tools_);
      if (parsed) final_args = has_duplicate_name(*parsed) ? text_order_args(*parsed) : py_json_dumps(parsed->arguments());
    } catch (const std::exception&) {
      final_args.clear();
    }
    if (!final_args.empty() && final_args.starts_with(streamed_args_)) {
      emit_args(out, std::string_view(final_args).substr(streamed_args_.size()));
    } else {
      // A duplicated parameter name (or a value json.dumps rejects): the earlier value is
      // already out, so send the remaining parameters in text order. JSON readers keep the
      // last duplicate, which is the value the non-streaming dict holds.
      if (parsed) {
        for (size_t i = params_emitted_; i < parsed->params.size(); ++i)
          emit_args(out, xml::argument_fragment(parsed->params[i].first, parsed->params[i].second, i == 0));
      } else {
        // No final parse (it threw: a value vLLM rejects, e.g. 1e999 for a number): what
        // streaming sends of the whole block, however much of it had come before
        // (split-independent), then the close.
        stream_params(out, std::string_view(text_).substr(body_start_, block_end - body_start_));
      }
      emit_args(out, "}");
    }
    calls_.push_back({id_, name_, streamed_args_});
    ++next_index_;
  }
  sent_ = block_end;
  in_call_ = false;
  header_seen_ = header_sent_ = false;
  after_call_ = true;
}

}  // namespace qinfer::chat
