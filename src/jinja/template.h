// jinja::Template: a parsed template that can be rendered many times.
//   auto t = Template::parse(source, "chat_template.jinja");
//   std::string s = t.render({{"messages", msgs}, {"add_generation_prompt", true}});
// Environment = Hugging Face's chat-template environment: trim_blocks,
// lstrip_blocks, loopcontrols, {% generation %}, HF tojson, raise_exception,
// strftime_now. Parse and render errors throw TemplateError.
#pragma once
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "jinja/ast.h"
#include "jinja/value.h"

namespace qinfer::jinja {

class Template {
 public:
  static Template parse(const std::string& source, const std::string& name);

  // `context` must be a JSON object; its members become template variables.
  // The context is read in place (not copied) for the duration of the call.
  std::string render(const Json& context) const;
  // Same, with each variable given by pointer (nothing is copied; the pointees
  // must stay alive during the call). Later entries win over earlier ones.
  std::string render(const std::vector<std::pair<std::string, const Json*>>& vars) const;

  const std::string& name() const { return *name_; }

 private:
  std::shared_ptr<const std::string> name_;
  std::shared_ptr<const Body> body_;
};

}  // namespace qinfer::jinja
