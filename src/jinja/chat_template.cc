#include "jinja/chat_template.h"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "jinja/template.h"
#include "util/error.h"
#include "util/json_parse.h"

namespace qinfer {
namespace {

std::string read_file(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  if (!f) fail("cannot read ", p.string());
  std::ostringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace

ChatTemplate ChatTemplate::from_string(std::string source, std::string name) {
  ChatTemplate ct;
  ct.tmpl_ = std::make_shared<const jinja::Template>(jinja::Template::parse(source, name));
  ct.source_ = std::make_shared<const std::string>(std::move(source));
  return ct;
}

ChatTemplate ChatTemplate::load(const std::string& model_dir) {
  namespace fs = std::filesystem;
  fs::path dir(model_dir);
  fs::path jinja_path = dir / "chat_template.jinja";
  fs::path cfg_path = dir / "tokenizer_config.json";
  nlohmann::ordered_json cfg = nlohmann::ordered_json::object();
  if (fs::exists(cfg_path)) {
    cfg = read_ordered_json_file(cfg_path.string());
    if (!cfg.is_object()) fail(cfg_path.string(), ": expected a JSON object");
  }
  ChatTemplate ct;
  if (fs::exists(jinja_path)) {
    ct = from_string(read_file(jinja_path), jinja_path.filename().string());
  } else {
    if (!cfg.contains("chat_template"))
      fail(model_dir, ": no chat_template.jinja and no \"chat_template\" in tokenizer_config.json");
    const auto& t = cfg["chat_template"];
    std::string src;
    if (t.is_string()) {
      src = t.get<std::string>();
    } else if (t.is_array()) {
      bool found = false;
      for (const auto& e : t) {
        if (e.is_object() && e.value("name", "") == "default" && e.contains("template") && e["template"].is_string()) {
          src = e["template"].get<std::string>();
          found = true;
        }
      }
      if (!found) fail(cfg_path.string(), ": field 'chat_template' is a list without a \"default\" template");
    } else {
      fail(cfg_path.string(), ": field 'chat_template' must be a string or a list of {name, template}");
    }
    ct = from_string(std::move(src), "tokenizer_config.json:chat_template");
  }
  ct.bos_token_ = special_token_field(cfg, "bos_token", cfg_path.string());
  ct.eos_token_ = special_token_field(cfg, "eos_token", cfg_path.string());
  ct.pad_token_ = special_token_field(cfg, "pad_token", cfg_path.string());
  ct.unk_token_ = special_token_field(cfg, "unk_token", cfg_path.string());
  return ct;
}

const std::string& ChatTemplate::name() const { return tmpl_->name(); }

std::string ChatTemplate::apply(const nlohmann::ordered_json& messages, const nlohmann::ordered_json& tools,
                                bool add_generation_prompt, const nlohmann::ordered_json& kwargs) const {
  if (!tmpl_) fail("ChatTemplate: no template loaded");
  if (!messages.is_array()) fail("chat template: 'messages' must be an array");
  if (!tools.is_null() && !tools.is_array()) fail("chat template: 'tools' must be an array or null");
  if (!kwargs.is_object()) fail("chat template: template kwargs must be a JSON object");
  // Same variables as transformers: special tokens, then messages/tools/documents/
  // add_generation_prompt, then the caller's kwargs (which win). Nothing large is copied.
  using OJ = nlohmann::ordered_json;
  static const OJ kNull = nullptr;
  const OJ bos = bos_token_, eos = eos_token_, pad = pad_token_, unk = unk_token_;
  const OJ gen = add_generation_prompt;
  std::vector<std::pair<std::string, const OJ*>> vars;
  if (!bos_token_.empty()) vars.emplace_back("bos_token", &bos);
  if (!eos_token_.empty()) vars.emplace_back("eos_token", &eos);
  if (!pad_token_.empty()) vars.emplace_back("pad_token", &pad);
  if (!unk_token_.empty()) vars.emplace_back("unk_token", &unk);
  vars.emplace_back("messages", &messages);
  vars.emplace_back("tools", &tools);
  vars.emplace_back("documents", &kNull);
  vars.emplace_back("add_generation_prompt", &gen);
  for (auto it = kwargs.begin(); it != kwargs.end(); ++it) vars.emplace_back(it.key(), &it.value());
  return tmpl_->render(vars);
}

std::string ChatTemplate::apply(const nlohmann::json& messages, const nlohmann::json& tools,
                                bool add_generation_prompt, const nlohmann::json& kwargs) const {
  return apply(nlohmann::ordered_json(messages), nlohmann::ordered_json(tools), add_generation_prompt,
               nlohmann::ordered_json(kwargs));
}

}  // namespace qinfer
