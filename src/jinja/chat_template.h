// ChatTemplate: renders a Hugging Face chat template (chat_template.jinja or
// tokenizer_config.json "chat_template") exactly as transformers'
// apply_chat_template does, with qinfer's own Jinja engine.
//
//   auto ct = qinfer::ChatTemplate::load("/models/Qwen3.6-35B-A3B");
//   std::string prompt = ct.apply(messages, tools, /*add_generation_prompt=*/true,
//                                 {{"enable_thinking", false}});
//
// Key order matters for byte-exact output (tool JSON, tool-call arguments are
// rendered in insertion order), so pass nlohmann::ordered_json parsed from the
// request. The nlohmann::json overload is a convenience: its objects are
// already sorted by key, so the output follows sorted order.
// Errors (template syntax, raise_exception, bad data) throw qinfer::Error; the
// concrete type is jinja::TemplateError ("<template>:<line>: <construct>: <detail>").
#pragma once
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

namespace qinfer {

namespace jinja {
class Template;
}

class ChatTemplate {
 public:
  // Reads <model_dir>/chat_template.jinja, else tokenizer_config.json's "chat_template"
  // (a string, or a list of {name, template} from which "default" is taken); also the
  // bos/eos/pad/unk token strings of tokenizer_config.json, passed to the template.
  static ChatTemplate load(const std::string& model_dir);
  static ChatTemplate from_string(std::string source, std::string name = "chat_template");

  // messages: OpenAI-style array; tools: array of tool objects or null;
  // kwargs: extra variables (enable_thinking, preserve_thinking, ...) merged into the context.
  std::string apply(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                    bool add_generation_prompt,
                    const nlohmann::ordered_json& kwargs = nlohmann::ordered_json::object()) const;
  std::string apply(const nlohmann::json& messages, const nlohmann::json& tools, bool add_generation_prompt,
                    const nlohmann::json& kwargs = nlohmann::json::object()) const;

  const std::string& source() const { return *source_; }
  const std::string& name() const;
  const std::string& bos_token() const { return bos_token_; }  // "" when the model has none
  const std::string& eos_token() const { return eos_token_; }

 private:
  std::shared_ptr<const std::string> source_;
  std::shared_ptr<const jinja::Template> tmpl_;
  std::string bos_token_, eos_token_, pad_token_, unk_token_;
};

}  // namespace qinfer
