// Parser: tokens -> statement list, with Jinja2's grammar and precedence
// (condexpr < or < and < not < compare < +,- < ~ < *,/,//,% < ** < unary <
// postfix < filters/tests). Syntax errors throw TemplateError (Kind::Syntax)
// with the line and the tag being parsed.
#pragma once
#include <string>
#include <vector>

#include "jinja/ast.h"
#include "jinja/lexer.h"

namespace qinfer::jinja {

Body parse_template(const std::vector<Token>& tokens, const std::string& template_name);

}  // namespace qinfer::jinja
