#include "jinja/parser.h"

#include <algorithm>
#include <initializer_list>

#include "jinja/template_error.h"

namespace qinfer::jinja {
namespace {

ExprPtr make(ExprKind k, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = k;
  e->line = line;
  return e;
}

StmtPtr make_stmt(StmtKind k, int line) {
  auto s = std::make_unique<Stmt>();
  s->kind = k;
  s->line = line;
  return s;
}

class Parser {
 public:
  Parser(const std::vector<Token>& toks, const std::string& name) : t_(toks), name_(name) {}

  Body parse_all() {
    Body b = subparse({});
    if (cur().type != Tok::Eof) fail("unexpected " + quoted(cur()));
    return b;
  }

 private:
  const Token& cur() const { return t_[i_]; }
  const Token& look() const { return t_[std::min(i_ + 1, t_.size() - 1)]; }
  const Token& next() {
    const Token& t = t_[i_];
    if (i_ + 1 < t_.size()) ++i_;
    return t;
  }
  bool is_name(const Token& t, const char* v) const { return t.type == Tok::Name && t.text == v; }
  bool is_name(const char* v) const { return is_name(cur(), v); }
  bool is_op(const char* o) const { return cur().type == Tok::Op && cur().text == o; }
  bool skip_name(const char* v) {
    if (!is_name(v)) return false;
    next();
    return true;
  }
  bool skip_op(const char* o) {
    if (!is_op(o)) return false;
    next();
    return true;
  }

  static std::string quoted(const Token& t) { return "'" + describe(t) + "'"; }

  [[noreturn]] void fail(const std::string& msg, int line = -1) const {
    std::string construct = tag_stack_.empty() ? "syntax error"
                                               : "syntax error in '" + tag_stack_.back() + "' tag";
    throw TemplateError(TemplateError::Kind::Syntax, name_, line < 0 ? cur().line : line, construct, msg);
  }

  void expect_op(const char* o) {
    if (!is_op(o)) fail(std::string("expected token '") + o + "', got " + quoted(cur()));
    next();
  }
  void expect(Tok type, const char* what) {
    if (cur().type != type) fail(std::string("expected token '") + what + "', got " + quoted(cur()));
    next();
  }
  std::string expect_name() {
    if (cur().type != Tok::Name) fail("expected token 'name', got " + quoted(cur()));
    return next().text;
  }
  void expect_name(const char* v) {
    if (!is_name(v)) fail(std::string("expected token '") + v + "', got " + quoted(cur()));
    next();
  }

  // ---- statements ----------------------------------------------------------

  bool at_end_token(const std::vector<const char*>& ends) const {
    for (const char* e : ends) if (is_name(e)) return true;
    return false;
  }

  Body subparse(const std::vector<const char*>& ends) {
    DepthGuard guard(*this);
    Body body;
    while (cur().type != Tok::Eof) {
      const Token& t = cur();
      if (t.type == Tok::Data) {
        auto s = make_stmt(StmtKind::Data, t.line);
        s->text = t.text;
        body.push_back(std::move(s));
        next();
      } else if (t.type == Tok::VarBegin) {
        next();
        auto s = make_stmt(StmtKind::Output, cur().line);
        tag_stack_.push_back("{{ }}");
        s->expr = parse_tuple(false, true, {}, false);
        expect(Tok::VarEnd, "end of print statement");
        tag_stack_.pop_back();
        body.push_back(std::move(s));
      } else if (t.type == Tok::BlockBegin) {
        next();
        if (!ends.empty() && at_end_token(ends)) return body;
        StmtPtr s = parse_statement();
        if (s) body.push_back(std::move(s));
        expect(Tok::BlockEnd, "end of statement block");
      } else {
        fail("unexpected " + quoted(t));
      }
    }
    if (!ends.empty()) {
      std::string want;
      for (size_t k = 0; k < ends.size(); ++k)
        want += (k ? (k + 1 == ends.size() ? " or '" : ", '") : "'") + std::string(ends[k]) + "'";
      std::string msg = "Unexpected end of template. Jinja was looking for the following tags: " + want + ".";
      if (!tag_stack_.empty())
        msg += " The innermost block that needs to be closed is '" + tag_stack_.back() + "'.";
      fail(msg);
    }
    return body;
  }

  Body parse_statements(const std::vector<const char*>& ends, bool drop_needle) {
    skip_op(":");
    expect(Tok::BlockEnd, "end of statement block");
    Body b = subparse(ends);
    if (drop_needle) next();
    return b;
  }

  StmtPtr parse_statement() {
    const Token& t = cur();
    if (t.type != Tok::Name) fail("tag name expected");
    std::string tag = t.text;
    static const char* kUnsupported[] = {"include", "import", "from", "extends", "block", "autoescape"};
    for (const char* u : kUnsupported)
      if (tag == u) fail("tag '" + tag + "' is not supported (templates are standalone)");
    tag_stack_.push_back(tag);
    StmtPtr s;
    if (tag == "for") s = parse_for();
    else if (tag == "if") s = parse_if();
    else if (tag == "set") s = parse_set();
    else if (tag == "macro") s = parse_macro();
    else if (tag == "call") s = parse_call_block();
    else if (tag == "filter") s = parse_filter_block();
    else if (tag == "with") s = parse_with();
    else if (tag == "print") s = parse_print();
    else if (tag == "generation") {
      s = make_stmt(StmtKind::Scope, next().line);
      s->body = parse_statements({"endgeneration"}, true);
    } else if (tag == "break" || tag == "continue") {
      int line = next().line;
      if (loop_depth_ == 0) fail("'" + tag + "' outside of a loop", line);
      s = make_stmt(tag == "break" ? StmtKind::Break : StmtKind::Continue, line);
    } else {
      tag_stack_.pop_back();
      static const char* kEnds[] = {"endfor", "endif", "endset", "endmacro", "endcall", "endfilter",
                                    "endwith", "endgeneration", "else", "elif", "endraw"};
      for (const char* e : kEnds)
        if (tag == e) {
          std::string msg = "Encountered unknown tag '" + tag + "'.";
          if (!tag_stack_.empty())
            msg += " The innermost block that needs to be closed is '" + tag_stack_.back() + "'.";
          fail(msg);
        }
      fail("Encountered unknown tag '" + tag + "'.");
    }
    tag_stack_.pop_back();
    return s;
  }

  StmtPtr parse_for() {
    auto s = make_stmt(StmtKind::For, next().line);
    s->target = parse_assign_target(true, {"in"});
    expect_name("in");
    s->expr = parse_tuple(false, false, {"recursive"}, false);
    if (skip_name("if")) s->cond = parse_expression(true);
    s->recursive = skip_name("recursive");
    ++loop_depth_;
    s->body = parse_statements({"endfor", "else"}, false);
    --loop_depth_;
    if (next().text == "else") s->else_body = parse_statements({"endfor"}, true);
    return s;
  }

  StmtPtr parse_if() {
    auto root = make_stmt(StmtKind::If, next().line);
    Stmt* node = root.get();
    while (true) {
      node->expr = parse_tuple(false, false, {}, false);
      node->body = parse_statements({"elif", "else", "endif"}, false);
      const Token& tok = next();
      if (tok.text == "elif") {
        auto e = make_stmt(StmtKind::If, tok.line);
        Stmt* raw = e.get();
        node->else_body.push_back(std::move(e));
        node = raw;
        continue;
      }
      if (tok.text == "else") node->else_body = parse_statements({"endif"}, true);
      break;
    }
    return root;
  }

  StmtPtr parse_set() {
    int line = next().line;
    if (cur().type == Tok::Name && look().type == Tok::Op && look().text == ".") {
      auto s = make_stmt(StmtKind::SetAttr, line);
      s->name = next().text;
      next();
      s->attr = expect_name();
      expect_op("=");
      s->expr = parse_tuple(false, true, {}, false);
      return s;
    }
    ExprPtr target = parse_assign_target(true, {});
    if (skip_op("=")) {
      auto s = make_stmt(StmtKind::Set, line);
      s->target = std::move(target);
      s->expr = parse_tuple(false, true, {}, false);
      return s;
    }
    auto s = make_stmt(StmtKind::SetBlock, line);
    s->target = std::move(target);
    if (is_op("|")) s->filter = parse_filter(nullptr, false);
    s->body = parse_statements({"endset"}, true);
    return s;
  }

  void parse_signature(Stmt& s) {
    expect_op("(");
    while (!is_op(")")) {
      if (!s.params.empty()) expect_op(",");
      s.params.push_back(expect_name());
      if (skip_op("=")) s.defaults.push_back(parse_expression(true));
      else if (!s.defaults.empty()) fail("non-default argument follows default argument");
    }
    expect_op(")");
  }

  StmtPtr parse_macro() {
    auto s = make_stmt(StmtKind::Macro, next().line);
    s->name = expect_name();
    parse_signature(*s);
    macro_stack_.push_back(s.get());
    int saved_depth = loop_depth_;
    loop_depth_ = 0;
    s->body = parse_statements({"endmacro"}, true);
    loop_depth_ = saved_depth;
    macro_stack_.pop_back();
    return s;
  }

  StmtPtr parse_call_block() {
    auto s = make_stmt(StmtKind::CallBlock, next().line);
    if (is_op("(")) parse_signature(*s);
    s->expr = parse_expression(true);
    if (s->expr->kind != ExprKind::Call) fail("expected call", s->line);
    macro_stack_.push_back(s.get());
    s->body = parse_statements({"endcall"}, true);
    macro_stack_.pop_back();
    return s;
  }

  StmtPtr parse_filter_block() {
    auto s = make_stmt(StmtKind::FilterBlock, next().line);
    s->filter = parse_filter(nullptr, true);
    s->body = parse_statements({"endfilter"}, true);
    return s;
  }

  StmtPtr parse_with() {
    auto s = make_stmt(StmtKind::With, next().line);
    while (cur().type != Tok::BlockEnd) {
      if (!s->targets.empty()) expect_op(",");
      s->targets.push_back(parse_assign_target(true, {}));
      expect_op("=");
      s->values.push_back(parse_expression(true));
    }
    s->body = parse_statements({"endwith"}, true);
    return s;
  }

  StmtPtr parse_print() {
    auto s = make_stmt(StmtKind::Output, next().line);
    auto tuple = make(ExprKind::Concat, s->line);
    while (cur().type != Tok::BlockEnd) {
      if (!tuple->items.empty()) expect_op(",");
      tuple->items.push_back(parse_expression(true));
    }
    s->expr = std::move(tuple);
    return s;
  }

  ExprPtr parse_assign_target(bool with_tuple, const std::vector<const char*>& extra_end) {
    ExprPtr target = with_tuple ? parse_tuple(true, true, extra_end, false) : parse_primary();
    auto check = [&](const Expr& e) {
      if (e.kind != ExprKind::Name) fail("can't assign to '" + std::string(e.kind == ExprKind::Const ? "const" : "expression") + "'", e.line);
      if (e.name == "true" || e.name == "false" || e.name == "none") fail("can't assign to 'const'", e.line);
    };
    if (target->kind == ExprKind::Tuple) {
      for (auto& it : target->items) check(*it);
    } else {
      check(*target);
    }
    return target;
  }

  // ---- expressions ---------------------------------------------------------

  bool is_tuple_end(const std::vector<const char*>& extra_end) const {
    const Token& t = cur();
    if (t.type == Tok::VarEnd || t.type == Tok::BlockEnd || (t.type == Tok::Op && t.text == ")")) return true;
    for (const char* e : extra_end) if (is_name(e)) return true;
    return false;
  }

  ExprPtr parse_tuple(bool simplified, bool with_condexpr, const std::vector<const char*>& extra_end,
                      bool explicit_parens) {
    int line = cur().line;
    std::vector<ExprPtr> args;
    bool is_tuple = false;
    while (true) {
      if (!args.empty()) expect_op(",");
      if (is_tuple_end(extra_end)) break;
      if (simplified) args.push_back(parse_primary());
      else args.push_back(with_condexpr ? parse_expression(true) : parse_or());
      if (is_op(",")) is_tuple = true;
      else break;
    }
    if (!is_tuple) {
      if (!args.empty()) return std::move(args[0]);
      if (!explicit_parens) fail("Expected an expression, got " + quoted(cur()));
    }
    auto t = make(ExprKind::Tuple, line);
    t->items = std::move(args);
    return t;
  }

  ExprPtr parse_expression(bool with_condexpr) { return with_condexpr ? parse_condexpr() : parse_or(); }

  // Bounds recursion so hostile nesting is a syntax error, not a stack overflow.
  struct DepthGuard {
    Parser& p;
    explicit DepthGuard(Parser& parser) : p(parser) {
      if (++p.depth_ > kMaxNesting) p.fail("expression or block nesting too deep");
    }
    ~DepthGuard() { --p.depth_; }
  };
  static constexpr int kMaxNesting = 300;

  ExprPtr parse_condexpr() {
    DepthGuard guard(*this);
    int line = cur().line;
    ExprPtr expr1 = parse_or();
    while (skip_name("if")) {
      auto ce = make(ExprKind::CondExpr, line);
      ce->a = parse_or();
      ce->b = std::move(expr1);
      if (skip_name("else")) ce->c = parse_condexpr();
      expr1 = std::move(ce);
      line = cur().line;
    }
    return expr1;
  }

  ExprPtr binary(ExprKind k, int line, ExprPtr l, ExprPtr r, std::string op = "") {
    auto e = make(k, line);
    e->a = std::move(l);
    e->b = std::move(r);
    e->name = std::move(op);
    return e;
  }

  ExprPtr parse_or() {
    int line = cur().line;
    ExprPtr left = parse_and();
    while (skip_name("or")) {
      left = binary(ExprKind::Or, line, std::move(left), parse_and());
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_and() {
    int line = cur().line;
    ExprPtr left = parse_not();
    while (skip_name("and")) {
      left = binary(ExprKind::And, line, std::move(left), parse_not());
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_not() {
    DepthGuard guard(*this);
    if (is_name("not")) {
      auto e = make(ExprKind::Not, next().line);
      e->a = parse_not();
      return e;
    }
    return parse_compare();
  }

  ExprPtr parse_compare() {
    int line = cur().line;
    ExprPtr expr = parse_math1();
    ExprPtr cmp;
    while (true) {
      std::string op;
      if (cur().type == Tok::Op && (cur().text == "==" || cur().text == "!=" || cur().text == "<" ||
                                    cur().text == ">" || cur().text == "<=" || cur().text == ">=")) {
        op = next().text;
      } else if (skip_name("in")) {
        op = "in";
      } else if (is_name("not") && is_name(look(), "in")) {
        next();
        next();
        op = "notin";
      } else {
        break;
      }
      if (!cmp) {
        cmp = make(ExprKind::Compare, line);
        cmp->items.push_back(std::move(expr));
      }
      cmp->ops.push_back(op);
      cmp->items.push_back(parse_math1());
    }
    return cmp ? std::move(cmp) : std::move(expr);
  }

  ExprPtr parse_math1() {
    int line = cur().line;
    ExprPtr left = parse_concat();
    while (is_op("+") || is_op("-")) {
      std::string op = next().text;
      left = binary(ExprKind::Binary, line, std::move(left), parse_concat(), op);
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_concat() {
    int line = cur().line;
    ExprPtr first = parse_math2();
    if (!is_op("~")) return first;
    auto c = make(ExprKind::Concat, line);
    c->items.push_back(std::move(first));
    while (skip_op("~")) c->items.push_back(parse_math2());
    return c;
  }

  ExprPtr parse_math2() {
    int line = cur().line;
    ExprPtr left = parse_pow();
    while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
      std::string op = next().text;
      left = binary(ExprKind::Binary, line, std::move(left), parse_pow(), op);
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_pow() {
    int line = cur().line;
    ExprPtr left = parse_unary(true);
    while (skip_op("**")) {
      left = binary(ExprKind::Binary, line, std::move(left), parse_unary(true), "**");
      line = cur().line;
    }
    return left;
  }

  ExprPtr parse_unary(bool with_filter) {
    DepthGuard guard(*this);
    int line = cur().line;
    ExprPtr node;
    if (is_op("-") || is_op("+")) {
      bool neg = next().text == "-";
      node = make(neg ? ExprKind::Neg : ExprKind::Pos, line);
      node->a = parse_unary(false);
    } else {
      node = parse_primary();
    }
    node = parse_postfix(std::move(node));
    if (with_filter) node = parse_filter_expr(std::move(node));
    return node;
  }

  void note_name(const std::string& n) {
    if (macro_stack_.empty()) return;
    Stmt* m = macro_stack_.back();
    if (n == "varargs") m->uses_varargs = true;
    else if (n == "kwargs") m->uses_kwargs = true;
    else if (n == "caller") m->uses_caller = true;
  }

  ExprPtr parse_primary() {
    const Token& t = cur();
    ExprPtr node;
    if (t.type == Tok::Name) {
      if (t.text == "true" || t.text == "True" || t.text == "false" || t.text == "False") {
        node = make(ExprKind::Const, t.line);
        node->value = Value(t.text == "true" || t.text == "True");
      } else if (t.text == "none" || t.text == "None") {
        node = make(ExprKind::Const, t.line);
        node->value = Value::none();
      } else {
        node = make(ExprKind::Name, t.line);
        node->name = t.text;
        note_name(t.text);
      }
      next();
    } else if (t.type == Tok::String) {
      node = make(ExprKind::Const, t.line);
      std::string s;
      while (cur().type == Tok::String) s += next().text;
      node->value = Value(std::move(s));
    } else if (t.type == Tok::Integer) {
      node = make(ExprKind::Const, t.line);
      node->value = t.uval ? Value(Json(t.uval)) : Value(t.ival);
      next();
    } else if (t.type == Tok::Float) {
      node = make(ExprKind::Const, t.line);
      node->value = Value(t.fval);
      next();
    } else if (t.type == Tok::Op && t.text == "(") {
      next();
      node = parse_tuple(false, true, {}, true);
      expect_op(")");
    } else if (t.type == Tok::Op && t.text == "[") {
      node = make(ExprKind::List, next().line);
      while (!is_op("]")) {
        if (!node->items.empty()) expect_op(",");
        if (is_op("]")) break;
        node->items.push_back(parse_expression(true));
      }
      expect_op("]");
    } else if (t.type == Tok::Op && t.text == "{") {
      node = make(ExprKind::Dict, next().line);
      while (!is_op("}")) {
        if (!node->items.empty()) expect_op(",");
        if (is_op("}")) break;
        node->items.push_back(parse_expression(true));
        expect_op(":");
        node->items.push_back(parse_expression(true));
      }
      expect_op("}");
    } else {
      fail("unexpected " + quoted(t));
    }
    return node;
  }

  ExprPtr parse_postfix(ExprPtr node) {
    while (true) {
      if (is_op(".") || is_op("[")) node = parse_subscript(std::move(node));
      else if (is_op("(")) node = parse_call(std::move(node));
      else break;
    }
    return node;
  }

  ExprPtr parse_filter_expr(ExprPtr node) {
    while (true) {
      if (is_op("|")) node = parse_filter(std::move(node), false);
      else if (is_name("is")) node = parse_test(std::move(node));
      else if (is_op("(")) node = parse_call(std::move(node));
      else break;
    }
    return node;
  }

  ExprPtr parse_subscript(ExprPtr node) {
    const Token& tok = next();
    int line = tok.line;
    if (tok.text == ".") {
      const Token& attr = next();
      if (attr.type == Tok::Name) {
        auto e = make(ExprKind::Getattr, line);
        e->a = std::move(node);
        e->name = attr.text;
        return e;
      }
      if (attr.type != Tok::Integer) fail("expected name or number", attr.line);
      auto e = make(ExprKind::Getitem, line);
      e->a = std::move(node);
      e->b = make(ExprKind::Const, attr.line);
      e->b->value = Value(attr.ival);
      return e;
    }
    // '['
    std::vector<ExprPtr> args;
    while (!is_op("]")) {
      if (!args.empty()) expect_op(",");
      args.push_back(parse_subscribed());
    }
    expect_op("]");
    if (args.size() != 1) fail("tuple subscripts are not supported", line);
    ExprPtr arg = std::move(args[0]);
    if (arg->kind == ExprKind::Slice) {
      arg->a = std::move(node);
      return arg;
    }
    auto e = make(ExprKind::Getitem, line);
    e->a = std::move(node);
    e->b = std::move(arg);
    return e;
  }

  ExprPtr parse_subscribed() {
    int line = cur().line;
    ExprPtr start;
    if (!is_op(":")) {
      ExprPtr n = parse_expression(true);
      if (!is_op(":")) return n;
      start = std::move(n);
    }
    next();  // ':'
    auto s = make(ExprKind::Slice, line);
    s->b = std::move(start);
    if (!is_op(":") && !is_op("]") && !is_op(",")) s->c = parse_expression(true);
    if (skip_op(":")) {
      if (!is_op("]") && !is_op(",")) s->d = parse_expression(true);
    }
    return s;
  }

  void parse_call_args(Expr& e) {
    int line = cur().line;
    expect_op("(");
    bool require_comma = false;
    auto ensure = [&](bool ok) { if (!ok) fail("invalid syntax for function call expression", line); };
    while (!is_op(")")) {
      if (require_comma) {
        expect_op(",");
        if (is_op(")")) break;
      }
      if (is_op("*")) {
        ensure(!e.dyn_args && !e.dyn_kwargs);
        next();
        e.dyn_args = parse_expression(true);
      } else if (is_op("**")) {
        ensure(!e.dyn_kwargs);
        next();
        e.dyn_kwargs = parse_expression(true);
      } else if (cur().type == Tok::Name && look().type == Tok::Op && look().text == "=") {
        ensure(!e.dyn_kwargs);
        std::string key = next().text;
        next();
        e.kwargs.emplace_back(key, parse_expression(true));
      } else {
        ensure(!e.dyn_args && !e.dyn_kwargs && e.kwargs.empty());
        e.items.push_back(parse_expression(true));
      }
      require_comma = true;
    }
    expect_op(")");
  }

  ExprPtr parse_call(ExprPtr node) {
    auto e = make(ExprKind::Call, cur().line);
    e->a = std::move(node);
    parse_call_args(*e);
    return e;
  }

  ExprPtr parse_filter(ExprPtr node, bool start_inline) {
    while (is_op("|") || start_inline) {
      if (!start_inline) next();
      start_inline = false;
      int line = cur().line;
      std::string name = expect_name();
      while (skip_op(".")) name += "." + expect_name();
      auto f = make(ExprKind::Filter, line);
      f->a = std::move(node);
      f->name = name;
      if (is_op("(")) parse_call_args(*f);
      node = std::move(f);
    }
    return node;
  }

  ExprPtr parse_test(ExprPtr node) {
    int line = next().line;  // 'is'
    bool negated = skip_name("not");
    std::string name = expect_name();
    while (skip_op(".")) name += "." + expect_name();
    auto t = make(ExprKind::Test, line);
    t->a = std::move(node);
    t->name = name;
    if (is_op("(")) {
      parse_call_args(*t);
    } else {
      const Token& c = cur();
      bool arg_start = c.type == Tok::Name || c.type == Tok::String || c.type == Tok::Integer ||
                       c.type == Tok::Float || (c.type == Tok::Op && (c.text == "(" || c.text == "[" || c.text == "{"));
      if (arg_start && !is_name("else") && !is_name("or") && !is_name("and")) {
        if (is_name("is")) fail("You cannot chain multiple tests with is");
        t->items.push_back(parse_postfix(parse_primary()));
      }
    }
    if (!negated) return t;
    auto n = make(ExprKind::Not, line);
    n->a = std::move(t);
    return n;
  }

  const std::vector<Token>& t_;
  const std::string& name_;
  size_t i_ = 0;
  std::vector<std::string> tag_stack_;
  std::vector<Stmt*> macro_stack_;
  int loop_depth_ = 0;
  int depth_ = 0;
};

}  // namespace

Body parse_template(const std::vector<Token>& tokens, const std::string& template_name) {
  return Parser(tokens, template_name).parse_all();
}

}  // namespace qinfer::jinja
