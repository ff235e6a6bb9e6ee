#include "server/structured_output.h"

#include "server/api_error.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace qinfer::server {

using json = nlohmann::ordered_json;

namespace {

bool present(const json& b, const char* k) { return b.contains(k) && !b.at(k).is_null(); }

// A schema given as an object or as JSON text.
std::string schema_text(const json& v, const std::string& field) {
  if (v.is_string()) {
    json parsed;
    try {
      parsed = parse_ordered_json(v.get<std::string>(), field);
    } catch (const JsonError& e) {
      if (e.too_deep()) bad_request(field, cat(field, ": nested deeper than ", kMaxJsonDepth, " levels"));
      bad_request(field, cat(field, ": not valid JSON"));
    }
    if (!parsed.is_object() && !parsed.is_boolean()) bad_request(field, cat(field, ": the schema must be a JSON object"));
    return parsed.dump();
  }
  if (!v.is_object() && !v.is_boolean()) bad_request(field, cat(field, ": the schema must be a JSON object"));
  return v.dump();
}

std::string string_field(const json& v, const std::string& field) {
  if (!v.is_string()) bad_request(field, cat(field, ": must be a string"));
  if (v.get<std::string>().empty()) bad_request(field, cat(field, ": must not be empty"));
  return v.get<std::string>();
}

std::string choice_text(const json& v, const std::string& field) {
  if (!v.is_array() || v.empty()) bad_request(field, cat(field, ": must be a non-empty array of strings"));
  for (size_t i = 0; i < v.size(); ++i) {
    if (!v[i].is_string()) bad_request(field, cat(field, "[", i, "]: must be a string"));
  }
  return v.dump();
}

void set_once(std::optional<grammar::Spec>& out, grammar::Spec s) {
  if (out) {
    bad_request(s.field, cat(s.field, ": only one structured output constraint may be given, but ", out->field,
                             " is set too"));
  }
  out = std::move(s);
}

void parse_response_format(const json& rf, std::optional<grammar::Spec>& out) {
  if (!rf.is_object()) bad_request("response_format", "response_format: must be an object");
  if (present(rf, "type") && !rf["type"].is_string()) bad_request("response_format.type", "response_format.type: must be a string");
  const std::string type = present(rf, "type") ? rf["type"].get<std::string>() : "text";
  if (type == "text") return;
  if (type == "json_object") {
    set_once(out, {grammar::SpecKind::kJsonObject, "", "response_format"});
    return;
  }
  if (type == "json_schema") {
    if (!present(rf, "json_schema") || !rf["json_schema"].is_object()) {
      bad_request("response_format.json_schema", "response_format.json_schema: is required for type 'json_schema' and must be an object");
    }
    const json& js = rf["json_schema"];
    // OpenAI names it "schema"; some clients send "json_schema" inside.
    const char* key = present(js, "schema") ? "schema" : present(js, "json_schema") ? "json_schema" : nullptr;
    if (!key) bad_request("response_format.json_schema.schema", "response_format.json_schema.schema: is required");
    const std::string field = cat("response_format.json_schema.", key);
    set_once(out, {grammar::SpecKind::kJsonSchema, schema_text(js[key], field), field});
    return;
  }
  if (type == "structural_tag") {
    bad_request("response_format.type", "response_format.type: 'structural_tag' is not supported by this server");
  }
  bad_request("response_format.type",
              cat("response_format.type: must be 'text', 'json_object' or 'json_schema', got '", type, "'"));
}

}  // namespace

std::optional<grammar::Spec> parse_structured_output(const json& b) {
  std::optional<grammar::Spec> out;
  if (present(b, "response_format")) parse_response_format(b["response_format"], out);
  if (present(b, "structured_outputs")) {
    const json& so = b["structured_outputs"];
    if (!so.is_object()) bad_request("structured_outputs", "structured_outputs: must be an object");
    for (auto it = so.begin(); it != so.end(); ++it) {
      const std::string& k = it.key();
      const std::string f = "structured_outputs." + k;
      const json& v = it.value();
      if (v.is_null()) continue;
      if (k == "json") set_once(out, {grammar::SpecKind::kJsonSchema, schema_text(v, f), f});
      else if (k == "regex") set_once(out, {grammar::SpecKind::kRegex, string_field(v, f), f});
      else if (k == "choice") set_once(out, {grammar::SpecKind::kChoice, choice_text(v, f), f});
      else if (k == "grammar") set_once(out, {grammar::SpecKind::kGbnf, string_field(v, f), f});
      else if (k == "json_object") {
        if (!v.is_boolean()) bad_request(f, cat(f, ": must be a boolean"));
        if (v.get<bool>()) set_once(out, {grammar::SpecKind::kJsonObject, "", f});
      } else if (k == "disable_fallback" || k == "disable_any_whitespace" || k == "disable_additional_properties") {
        // Backend tuning flags of vLLM; this engine always behaves as with them set.
      } else if (k == "whitespace_pattern" || k == "structural_tag") {
        bad_request(f, cat(f, ": is not supported by this server"));
      } else {
        bad_request(f, cat(f, ": unknown structured output field"));
      }
    }
  }
  if (present(b, "guided_json")) set_once(out, {grammar::SpecKind::kJsonSchema, schema_text(b["guided_json"], "guided_json"), "guided_json"});
  if (present(b, "guided_regex")) set_once(out, {grammar::SpecKind::kRegex, string_field(b["guided_regex"], "guided_regex"), "guided_regex"});
  if (present(b, "guided_choice")) set_once(out, {grammar::SpecKind::kChoice, choice_text(b["guided_choice"], "guided_choice"), "guided_choice"});
  if (present(b, "guided_grammar")) set_once(out, {grammar::SpecKind::kGbnf, string_field(b["guided_grammar"], "guided_grammar"), "guided_grammar"});
  if (present(b, "guided_whitespace_pattern")) {
    bad_request("guided_whitespace_pattern", "guided_whitespace_pattern: is not supported by this server");
  }
  return out;
}

grammar::Spec tool_call_spec(const json& tools, const std::string& named) {
  json j = {{"tools", tools}, {"name", named}};
  return {grammar::SpecKind::kToolCall, j.dump(), "tools"};
}

std::shared_ptr<const grammar::Grammar> compile_structured(grammar::Compiler* c, const grammar::Spec& spec) {
  if (!c) bad_request(spec.field, cat(spec.field, ": structured outputs need a model with a tokenizer"));
  try {
    return c->compile(spec);
  } catch (const grammar::GrammarError& e) {
    const std::string param = spec.field.substr(0, spec.field.find('.'));
    throw ApiError(400, e.what(), param);
  }
}

}  // namespace qinfer::server
