// Template errors name the template, the line and the construct.
#include <gtest/gtest.h>

#include "jinja/template.h"
#include "jinja/template_error.h"

using qinfer::jinja::Json;
using qinfer::jinja::Template;
using qinfer::jinja::TemplateError;

namespace {

TemplateError render_error(const std::string& src, const Json& ctx = Json::object()) {
  try {
    Template::parse(src, "my.jinja").render(ctx);
  } catch (const TemplateError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for: " << src;
  return TemplateError(TemplateError::Kind::Runtime, "", 0, "", "");
}

}  // namespace

TEST(TemplateErrors, RaiseExceptionNamesLineAndConstruct) {
  TemplateError e = render_error("a\nb\n{{ raise_exception('Bad input: ' ~ 3) }}");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Raised);
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.detail(), "Bad input: 3");
  EXPECT_STREQ(e.what(), "my.jinja:3: raise_exception: Bad input: 3");
}

TEST(TemplateErrors, IsAQinferError) {
  try {
    Template::parse("{{ raise_exception('x') }}", "t").render(Json::object());
    FAIL();
  } catch (const qinfer::Error& e) {
    EXPECT_NE(std::string(e.what()).find("raise_exception"), std::string::npos);
  }
}

TEST(TemplateErrors, RuntimeErrorsNameTheFilterOrOperator) {
  TemplateError e = render_error("\n\n{% for k, v in x|items %}{% endfor %}", Json{{"x", "str"}});
  EXPECT_EQ(e.kind(), TemplateError::Kind::Runtime);
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.construct(), "filter 'items'");
  EXPECT_NE(e.detail().find("Can only get item pairs from a mapping."), std::string::npos);

  e = render_error("{{ 'a' + n }}", Json{{"n", 1}});
  EXPECT_EQ(e.construct(), "operator '+'");
  EXPECT_NE(e.detail().find("can only concatenate str"), std::string::npos);

  e = render_error("x\n{{ m.role.upper }}", Json::object());
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.construct(), "attribute 'role'");
  EXPECT_NE(e.detail().find("'m' is undefined"), std::string::npos);

  e = render_error("{% for x in 5 %}{% endfor %}");
  EXPECT_EQ(e.construct(), "'for' tag");
  EXPECT_NE(e.detail().find("'int' object is not iterable"), std::string::npos);

  e = render_error("{{ 'abc'.startswith(1) }}");
  EXPECT_EQ(e.construct(), "call to '.startswith()'");
}

TEST(TemplateErrors, SyntaxErrorsNameTheTag) {
  TemplateError e = render_error("line1\n{% for x in %}\n{% endfor %}");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Syntax);
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.construct(), "syntax error in 'for' tag");

  e = render_error("{% if x %}\n\n{% endfor %}");
  EXPECT_EQ(e.line(), 3);
  EXPECT_NE(e.detail().find("Encountered unknown tag 'endfor'"), std::string::npos);
  EXPECT_NE(e.detail().find("'if'"), std::string::npos);

  e = render_error("{% include 'other.jinja' %}");
  EXPECT_NE(e.detail().find("not supported"), std::string::npos);

  e = render_error("ok\n{{ 'unterminated }}");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Syntax);
  EXPECT_EQ(e.line(), 2);

  e = render_error("{{ x | nope }}");
  EXPECT_EQ(e.construct(), "filter 'nope'");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Syntax);
}

TEST(TemplateErrors, ErrorsInsideMacrosReportTheMacroLine) {
  TemplateError e = render_error("{% macro m(x) %}\n{{ x + 1 }}\n{% endmacro %}\n{{ m('s') }}");
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.construct(), "operator '+'");
}

TEST(TemplateErrors, RunawayRecursionIsAnErrorNotACrash) {
  TemplateError e = render_error("{% macro f(n) %}{{ f(n + 1) }}{% endmacro %}{{ f(0) }}");
  EXPECT_NE(e.detail().find("RecursionError"), std::string::npos);
}

TEST(TemplateErrors, SandboxRefusesMutation) {
  TemplateError e = render_error("{{ d.update({'a': 1}) }}", Json{{"d", Json::object()}});
  EXPECT_NE(e.detail().find("unsafe"), std::string::npos);
  e = render_error("{{ range(1000000)|length }}");
  EXPECT_NE(e.detail().find("Range too big"), std::string::npos);
}

TEST(TemplateErrors, DeepNestingIsASyntaxErrorNotACrash) {
  std::string deep = "{{ " + std::string(5000, '(') + "1" + std::string(5000, ')') + " }}";
  TemplateError e = render_error(deep);
  EXPECT_EQ(e.kind(), TemplateError::Kind::Syntax);
  std::string ifs;
  for (int i = 0; i < 2000; ++i) ifs += "{% if true %}";
  e = render_error(ifs);
  EXPECT_EQ(e.kind(), TemplateError::Kind::Syntax);
  std::string nots = "{{ " ;
  for (int i = 0; i < 5000; ++i) nots += "not ";
  e = render_error(nots + "1 }}");
  EXPECT_EQ(e.kind(), TemplateError::Kind::Syntax);
  // Moderate nesting still works.
  EXPECT_EQ(Template::parse("{{ " + std::string(30, '(') + "1" + std::string(30, ')') + " }}", "t").render(Json::object()), "1");
}
