#include "jinja/renderer.h"

#include <algorithm>
#include <optional>

#include "jinja/builtins.h"
#include "jinja/template_error.h"

namespace qinfer::jinja {
namespace {
constexpr int kMaxDepth = 200;  // nested macro calls / call blocks
}

const Value* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent.get()) {
    auto it = s->vars.find(name);
    if (it != s->vars.end()) return &it->second;
  }
  return nullptr;
}

Renderer::~Renderer() {
  for (auto& s : closures_) s->vars.clear();
  for (auto& o : assigned_) o->attrs.clear();
}

void Renderer::fail(int line, const std::string& construct, const std::string& msg) {
  throw TemplateError(TemplateError::Kind::Runtime, name_, line, construct, msg);
}

std::string Renderer::construct_of(const Expr& e) const {
  switch (e.kind) {
    case ExprKind::Filter: return "filter '" + e.name + "'";
    case ExprKind::Test: return "test '" + e.name + "'";
    case ExprKind::Call:
      if (e.a->kind == ExprKind::Name) return "call to '" + e.a->name + "'";
      if (e.a->kind == ExprKind::Getattr) return "call to '." + e.a->name + "()'";
      return "call";
    case ExprKind::Getattr: return "attribute '" + e.name + "'";
    case ExprKind::Getitem: return "subscript";
    case ExprKind::Slice: return "slice";
    case ExprKind::Binary: return "operator '" + e.name + "'";
    case ExprKind::Neg: return "operator '-'";
    case ExprKind::Pos: return "operator '+'";
    case ExprKind::Compare: return "comparison";
    case ExprKind::Name: return "variable '" + e.name + "'";
    case ExprKind::Concat: return "operator '~'";
    default: return "expression";
  }
}

std::string Renderer::render(const Body& body, const ScopePtr& scope) {
  std::string out;
  exec(body, scope, out);
  return out;
}

Renderer::Flow Renderer::exec(const Body& body, const ScopePtr& s, std::string& out) {
  for (const auto& st : body) {
    Flow f = exec_stmt(*st, s, out);
    if (f != Flow::Normal) return f;
  }
  return Flow::Normal;
}

void Renderer::assign(const Expr& target, const Value& v, Scope& s) {
  if (target.kind == ExprKind::Name) {
    s.vars[target.name] = v;
    return;
  }
  // tuple unpacking
  std::vector<Value> items = iterate(v);
  size_t n = target.items.size();
  if (items.size() > n)
    throw EvalError(cat("ValueError: too many values to unpack (expected ", n, ")"));
  if (items.size() < n)
    throw EvalError(cat("ValueError: not enough values to unpack (expected ", n, ", got ", items.size(), ")"));
  for (size_t i = 0; i < n; ++i) s.vars[target.items[i]->name] = items[i];
}

Value Renderer::make_macro(const Stmt& st, const ScopePtr& closure, const std::string& name) {
  const Stmt* m = &st;
  closures_.push_back(closure);
  return Value::callable(name, [this, m, closure, name](CallArgs& args) -> Value {
    auto scope = std::make_shared<Scope>();
    scope->parent = closure;
    size_t np = m->params.size();
    std::vector<bool> given(np, false);
    std::vector<Value> extra;
    for (size_t i = 0; i < args.pos.size(); ++i) {
      if (i < np) {
        scope->vars[m->params[i]] = args.pos[i];
        given[i] = true;
      } else if (m->uses_varargs) {
        extra.push_back(args.pos[i]);
      } else {
        throw EvalError(cat("TypeError: macro '", name, "' takes not more than ", np, " argument(s)"));
      }
    }
    std::vector<std::pair<std::string, Value>> kwargs;
    for (auto& [k, v] : args.kw) {
      auto it = std::find(m->params.begin(), m->params.end(), k);
      if (it != m->params.end()) {
        size_t idx = static_cast<size_t>(it - m->params.begin());
        if (given[idx]) throw EvalError(cat("TypeError: macro '", name, "' got multiple values for argument '", k, "'"));
        scope->vars[k] = v;
        given[idx] = true;
      } else if (k == "caller" && m->uses_caller) {
        scope->vars["caller"] = v;
      } else if (m->uses_kwargs) {
        kwargs.emplace_back(k, v);
      } else {
        throw EvalError(cat("TypeError: macro '", name, "' takes no keyword argument '", k, "'"));
      }
    }
    size_t first_default = np - m->defaults.size();
    for (size_t i = 0; i < np; ++i) {
      if (given[i]) continue;
      if (i >= first_default) scope->vars[m->params[i]] = eval(*m->defaults[i - first_default], scope);
      else scope->vars[m->params[i]] = Value::undefined(cat("parameter '", m->params[i], "' was not provided"));
    }
    if (m->uses_varargs) scope->vars["varargs"] = tuple_of(extra, "varargs");
    if (m->uses_kwargs) scope->vars["kwargs"] = make_dict(kwargs, "macro keyword argument");
    if (m->uses_caller && !scope->vars.count("caller"))
      scope->vars["caller"] = Value::undefined(cat("No caller defined for macro '", name, "'"));
    if (++depth_ > kMaxDepth) {
      throw EvalError(cat("RecursionError: macro nesting deeper than ", kMaxDepth));
    }
    std::string out;
    exec(m->body, scope, out);
    --depth_;
    return Value(std::move(out));
  });
}

Renderer::Flow Renderer::exec_stmt(const Stmt& st, const ScopePtr& s, std::string& out) {
  switch (st.kind) {
    case StmtKind::Data:
      out += st.text;
      return Flow::Normal;
    case StmtKind::Output: {
      Value v = eval(*st.expr, s);
      if (v.is_string()) out += v.str();
      else out += to_str(v);
      return Flow::Normal;
    }
    case StmtKind::If: {
      if (truthy(eval(*st.expr, s))) return exec(st.body, s, out);
      return exec(st.else_body, s, out);
    }
    case StmtKind::For:
      return exec_for(st, s, out);
    case StmtKind::Set: {
      Value v = eval(*st.expr, s);
      try {
        assign(*st.target, v, *s);
      } catch (const EvalError& e) {
        fail(st.line, "'set' tag", e.what());
      }
      return Flow::Normal;
    }
    case StmtKind::SetAttr: {
      const Value* ns = s->find(st.name);
      if (!ns || !ns->is_object() || !ns->obj()->is_namespace)
        fail(st.line, "'set' tag", "cannot assign attribute on non-namespace object ('" + st.name + "')");
      ns->obj()->attrs[st.attr] = eval(*st.expr, s);
      assigned_.insert(ns->obj());
      return Flow::Normal;
    }
    case StmtKind::SetBlock: {
      std::string buf;
      exec(st.body, s, buf);
      Value v(std::move(buf));
      if (st.filter) v = apply_filter_chain(*st.filter, v, s);
      s->vars[st.target->name] = v;
      return Flow::Normal;
    }
    case StmtKind::Macro:
      s->vars[st.name] = make_macro(st, s, st.name);
      return Flow::Normal;
    case StmtKind::CallBlock: {
      Value caller = make_macro(st, s, "caller");
      const Expr& call = *st.expr;
      Value callee = eval(*call.a, s);
      CallArgs args = eval_args(call, s);
      args.kw.emplace_back("caller", caller);
      try {
        out += to_str(call_value(callee, args));
      } catch (const EvalError& e) {
        fail(st.line, "'call' tag", e.what());
      }
      return Flow::Normal;
    }
    case StmtKind::FilterBlock: {
      std::string buf;
      exec(st.body, s, buf);
      out += to_str(apply_filter_chain(*st.filter, Value(std::move(buf)), s));
      return Flow::Normal;
    }
    case StmtKind::With: {
      auto inner = std::make_shared<Scope>();
      inner->parent = s;
      std::vector<Value> vals;
      for (const auto& v : st.values) vals.push_back(eval(*v, s));
      try {
        for (size_t i = 0; i < st.targets.size(); ++i) assign(*st.targets[i], vals[i], *inner);
      } catch (const EvalError& e) {
        fail(st.line, "'with' tag", e.what());
      }
      return exec(st.body, inner, out);
    }
    case StmtKind::Break: return Flow::Break;
    case StmtKind::Continue: return Flow::Continue;
    case StmtKind::Scope: return exec(st.body, s, out);
  }
  return Flow::Normal;
}

Renderer::Flow Renderer::exec_for(const Stmt& st, const ScopePtr& s, std::string& out) {
  return run_for(st, s, out, eval(*st.expr, s), 1);
}

Renderer::Flow Renderer::run_for(const Stmt& st, const ScopePtr& s, std::string& out, const Value& iterable,
                                 int64_t depth) {
  std::vector<Value> items;
  try {
    items = iterate(iterable);
  } catch (const EvalError& e) {
    fail(st.line, "'for' tag", e.what());
  }
  if (st.cond) {
    std::vector<Value> kept;
    for (auto& it : items) {
      auto fs = std::make_shared<Scope>();
      fs->parent = s;
      try {
        assign(*st.target, it, *fs);
      } catch (const EvalError& e) {
        fail(st.line, "'for' tag", e.what());
      }
      if (truthy(eval(*st.cond, fs))) kept.push_back(std::move(it));
    }
    items = std::move(kept);
  }
  if (items.empty()) return exec(st.else_body, s, out);
  const int64_t n = static_cast<int64_t>(items.size());
  // loop.changed(*values) compares with the values of its previous call, across iterations.
  auto last_changed = std::make_shared<std::optional<std::vector<Value>>>();
  Value recurse;
  if (st.recursive)
    recurse = Value::callable("loop", [this, &st, s, depth](CallArgs& args) -> Value {
      if (args.pos.size() != 1 || !args.kw.empty())
        throw EvalError("TypeError: loop() takes exactly one argument: the items to recurse into");
      if (depth >= kMaxDepth) throw EvalError(cat("RecursionError: recursive loop deeper than ", kMaxDepth));
      std::string buf;
      run_for(st, s, buf, args.pos[0], depth + 1);
      return Value(std::move(buf));
    });
  for (int64_t i = 0; i < n; ++i) {
    auto scope = std::make_shared<Scope>();
    scope->parent = s;
    try {
      assign(*st.target, items[i], *scope);
    } catch (const EvalError& e) {
      fail(st.line, "'for' tag", e.what());
    }
    auto loop = std::make_shared<Object>();
    loop->is_namespace = false;
    auto& a = loop->attrs;
    a["index0"] = Value(i);
    a["index"] = Value(i + 1);
    a["revindex"] = Value(n - i);
    a["revindex0"] = Value(n - i - 1);
    a["first"] = Value(i == 0);
    a["last"] = Value(i == n - 1);
    a["length"] = Value(n);
    a["depth"] = Value(depth);
    a["depth0"] = Value(depth - 1);
    a["previtem"] = i > 0 ? items[i - 1] : Value::undefined("there is no previous item");
    a["nextitem"] = i + 1 < n ? items[i + 1] : Value::undefined("there is no next item");
    a["cycle"] = Value::callable("loop.cycle", [i](CallArgs& args) -> Value {
      if (args.pos.empty()) throw EvalError("TypeError: no items for cycling given");
      return args.pos[static_cast<size_t>(i) % args.pos.size()];
    });
    a["changed"] = Value::callable("loop.changed", [last_changed](CallArgs& args) -> Value {
      const auto& prev = *last_changed;
      bool same = prev && prev->size() == args.pos.size() &&
                  std::equal(prev->begin(), prev->end(), args.pos.begin(), equals);
      if (same) return Value(false);
      *last_changed = args.pos;
      return Value(true);
    });
    if (st.recursive) loop->call = recurse.fn();
    scope->vars["loop"] = Value::object(loop);
    Flow f = exec(st.body, scope, out);
    if (f == Flow::Break) break;
  }
  return Flow::Normal;
}

CallArgs Renderer::eval_args(const Expr& e, const ScopePtr& s) {
  CallArgs args;
  for (const auto& it : e.items) args.pos.push_back(eval(*it, s));
  for (const auto& [k, v] : e.kwargs) args.kw.emplace_back(k, eval(*v, s));
  if (e.dyn_args) {
    Value d = eval(*e.dyn_args, s);
    for (auto& v : iterate(d)) args.pos.push_back(std::move(v));
  }
  if (e.dyn_kwargs) {
    Value d = eval(*e.dyn_kwargs, s);
    if (!d.is_dict()) throw EvalError("TypeError: argument after ** must be a mapping, not " + type_name(d));
    for (auto it = d.json().begin(); it != d.json().end(); ++it) args.kw.emplace_back(it.key(), d.member(it.key()));
  }
  return args;
}

Value Renderer::apply_filter_chain(const Expr& f, const Value& input, const ScopePtr& s) {
  // f is a Filter whose innermost `a` is null (filter blocks / set blocks).
  Value in = f.a ? apply_filter_chain(*f.a, input, s) : input;
  CallArgs args = eval_args(f, s);
  try {
    return filter(f.name, in, args);
  } catch (const EvalError& e) {
    fail(f.line, construct_of(f), e.what());
  }
}

Value Renderer::filter(const std::string& name, const Value& input, const CallArgs& args) {
  return call_filter(*this, name, input, args);
}

bool Renderer::test(const std::string& name, const Value& v, const CallArgs& args) {
  return call_test(*this, name, v, args);
}

Value Renderer::call_value(const Value& callee, CallArgs& args) {
  if (callee.is_undefined()) fail_undefined(callee);
  if (callee.is_object() && callee.obj()->call) return callee.obj()->call->fn(args);
  if (!callee.is_callable()) throw EvalError(cat("TypeError: '", type_name(callee), "' object is not callable"));
  return callee.fn()->fn(args);
}

Value Renderer::eval(const Expr& e, const ScopePtr& s) {
  try {
    return eval_inner(e, s);
  } catch (const EvalError& err) {
    fail(e.line, construct_of(e), err.what());
  } catch (const RaisedError& err) {
    throw TemplateError(TemplateError::Kind::Raised, name_, e.line, "raise_exception", err.what());
  }
}

Value Renderer::eval_inner(const Expr& e, const ScopePtr& s) {
  switch (e.kind) {
    case ExprKind::Const: return e.value;
    case ExprKind::Name: {
      const Value* v = s->find(e.name);
      if (!v) return Value::undefined("'" + e.name + "' is undefined");
      return *v;
    }
    case ExprKind::List:
    case ExprKind::Tuple: {
      std::vector<Value> items;
      for (const auto& it : e.items) items.push_back(eval(*it, s));
      if (e.kind == ExprKind::Tuple) return tuple_of(items, "tuple literal");
      return make_list(items, "list literal");
    }
    case ExprKind::Dict: {
      std::vector<std::pair<std::string, Value>> members;
      for (size_t i = 0; i + 1 < e.items.size(); i += 2) {
        Value k = eval(*e.items[i], s);
        if (!k.is_string()) throw EvalError("dict literal keys must be strings, got " + type_name(k));
        members.emplace_back(k.str(), eval(*e.items[i + 1], s));
      }
      return make_dict(members, "dict literal");
    }
    case ExprKind::Getattr: return get_attr(eval(*e.a, s), e.name);
    case ExprKind::Getitem: return get_item(eval(*e.a, s), eval(*e.b, s));
    case ExprKind::Slice: {
      Value obj = eval(*e.a, s);
      Value b = e.b ? eval(*e.b, s) : Value::none();
      Value c = e.c ? eval(*e.c, s) : Value::none();
      Value d = e.d ? eval(*e.d, s) : Value::none();
      return slice(obj, b, c, d);
    }
    case ExprKind::Call: {
      Value callee = eval(*e.a, s);
      CallArgs args = eval_args(e, s);
      return call_value(callee, args);
    }
    case ExprKind::Filter: {
      Value in = e.a ? eval(*e.a, s) : Value();
      CallArgs args = eval_args(e, s);
      return filter(e.name, in, args);
    }
    case ExprKind::Test: {
      Value in = eval(*e.a, s);
      CallArgs args = eval_args(e, s);
      return Value(test(e.name, in, args));
    }
    case ExprKind::Not: return Value(!truthy(eval(*e.a, s)));
    case ExprKind::Neg: return negate(eval(*e.a, s), true);
    case ExprKind::Pos: return negate(eval(*e.a, s), false);
    case ExprKind::Binary: {
      Value a = eval(*e.a, s);
      Value b = eval(*e.b, s);
      return binary_op(e.name, a, b);
    }
    case ExprKind::Concat: {
      std::string out;
      for (const auto& it : e.items) {
        Value v = eval(*it, s);
        out += v.is_string() ? v.str() : to_str(v);
      }
      return Value(std::move(out));
    }
    case ExprKind::Compare: {
      Value left = eval(*e.items[0], s);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(*e.items[i + 1], s);
        const std::string& op = e.ops[i];
        bool r;
        if (op == "==") r = equals(left, right);
        else if (op == "!=") r = !equals(left, right);
        else if (op == "<") r = less(left, right, "<");
        else if (op == ">") r = less(right, left, ">");
        else if (op == "<=") r = !less(right, left, "<=");
        else if (op == ">=") r = !less(left, right, ">=");
        else if (op == "in") r = contains(right, left);
        else r = !contains(right, left);  // notin
        if (!r) return Value(false);
        left = std::move(right);
      }
      return Value(true);
    }
    case ExprKind::And: {
      Value a = eval(*e.a, s);
      if (!truthy(a)) return a;
      return eval(*e.b, s);
    }
    case ExprKind::Or: {
      Value a = eval(*e.a, s);
      if (truthy(a)) return a;
      return eval(*e.b, s);
    }
    case ExprKind::CondExpr: {
      if (truthy(eval(*e.a, s))) return eval(*e.b, s);
      if (e.c) return eval(*e.c, s);
      return Value::undefined(cat("the inline if-expression on line ", e.line,
                                  " evaluated to false and no else section was defined."));
    }
  }
  return Value();
}

}  // namespace qinfer::jinja
