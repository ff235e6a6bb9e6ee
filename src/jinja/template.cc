#include "jinja/template.h"

#include "jinja/builtins.h"
#include "jinja/renderer.h"
#include "jinja/lexer.h"
#include "jinja/parser.h"
#include "jinja/template_error.h"

namespace qinfer::jinja {
namespace {

// Unknown filters and tests are compile-time errors in Jinja; check them up front.
void check_expr(const Expr* e, const std::string& name) {
  if (!e) return;
  if (e->kind == ExprKind::Filter && !has_filter(e->name))
    throw TemplateError(TemplateError::Kind::Syntax, name, e->line, "filter '" + e->name + "'",
                        "No filter named '" + e->name + "'.");
  if (e->kind == ExprKind::Test && !has_test(e->name))
    throw TemplateError(TemplateError::Kind::Syntax, name, e->line, "test '" + e->name + "'",
                        "No test named '" + e->name + "'.");
  for (const Expr* c : {e->a.get(), e->b.get(), e->c.get(), e->d.get(), e->dyn_args.get(), e->dyn_kwargs.get()})
    check_expr(c, name);
  for (const auto& it : e->items) check_expr(it.get(), name);
  for (const auto& kv : e->kwargs) check_expr(kv.second.get(), name);
}

void check_body(const Body& body, const std::string& name) {
  for (const auto& st : body) {
    for (const Expr* e : {st->expr.get(), st->target.get(), st->cond.get(), st->filter.get()}) check_expr(e, name);
    for (const auto& e : st->defaults) check_expr(e.get(), name);
    for (const auto& e : st->values) check_expr(e.get(), name);
    check_body(st->body, name);
    check_body(st->else_body, name);
  }
}

}  // namespace

Template Template::parse(const std::string& source, const std::string& name) {
  Template t;
  t.name_ = std::make_shared<const std::string>(name);
  auto body = std::make_shared<Body>(parse_template(tokenize(source, name), name));
  check_body(*body, name);
  t.body_ = std::move(body);
  return t;
}

std::string Template::render(const Json& context) const {
  if (!context.is_object())
    throw TemplateError(TemplateError::Kind::Runtime, *name_, 0, "render", "context must be a JSON object");
  std::vector<std::pair<std::string, const Json*>> vars;
  for (auto it = context.begin(); it != context.end(); ++it) vars.emplace_back(it.key(), &it.value());
  return render(vars);
}

std::string Template::render(const std::vector<std::pair<std::string, const Json*>>& vars) const {
  auto globals = std::make_shared<Scope>();
  std::vector<std::pair<std::string, Value>> g;
  add_globals(g);
  for (auto& [k, v] : g) globals->vars[k] = v;
  auto top = std::make_shared<Scope>();
  top->parent = globals;
  // Non-owning holders: values borrowed from the caller's data never outlive this call.
  for (const auto& [k, ptr] : vars) top->vars[k] = Value::borrow(std::shared_ptr<const Json>(), ptr);
  Renderer r(*name_);
  return r.render(*body_, top);
}

}  // namespace qinfer::jinja
