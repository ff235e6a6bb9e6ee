// Renderer: walks the syntax tree over a chain of scopes and writes output.
// Scoping follows Jinja2: `for` bodies, macros, `with` and call blocks get a
// new scope; `if` does not; `set ns.attr` mutates a shared namespace object.
#pragma once
#include <memory>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "jinja/ast.h"
#include "jinja/value.h"

namespace qinfer::jinja {

struct Scope {
  std::shared_ptr<Scope> parent;
  std::unordered_map<std::string, Value> vars;
  const Value* find(const std::string& name) const;
};
using ScopePtr = std::shared_ptr<Scope>;

class Renderer {
 public:
  explicit Renderer(const std::string& template_name) : name_(template_name) {}
  ~Renderer();  // breaks macro <-> scope and namespace reference cycles
  Renderer(const Renderer&) = delete;
  Renderer& operator=(const Renderer&) = delete;

  // Renders `body` with `scope` as the template's top-level scope.
  std::string render(const Body& body, const ScopePtr& scope);

  Value eval(const Expr& e, const ScopePtr& s);
  Value call_value(const Value& callee, CallArgs& args);
  Value filter(const std::string& name, const Value& input, const CallArgs& args);
  bool test(const std::string& name, const Value& v, const CallArgs& args);

 private:
  enum class Flow { Normal, Break, Continue };
  Flow exec(const Body& body, const ScopePtr& s, std::string& out);
  Flow exec_stmt(const Stmt& st, const ScopePtr& s, std::string& out);
  Flow exec_for(const Stmt& st, const ScopePtr& s, std::string& out);
  // One (possibly recursive, depth >= 1) run of a for loop over `iterable`.
  Flow run_for(const Stmt& st, const ScopePtr& s, std::string& out, const Value& iterable, int64_t depth);
  void assign(const Expr& target, const Value& v, Scope& s);
  Value eval_inner(const Expr& e, const ScopePtr& s);
  CallArgs eval_args(const Expr& e, const ScopePtr& s);
  Value apply_filter_chain(const Expr& f, const Value& input, const ScopePtr& s);
  Value make_macro(const Stmt& st, const ScopePtr& closure, const std::string& name);
  [[noreturn]] void fail(int line, const std::string& construct, const std::string& msg);
  std::string construct_of(const Expr& e) const;

  const std::string& name_;
  int depth_ = 0;
  std::vector<ScopePtr> closures_;  // scopes captured by macros defined during this render
  // Namespaces given an attribute during this render (`set ns.x = ns` holds itself;
  // their attributes are dropped with the renderer, as Python's collector would).
  std::unordered_set<std::shared_ptr<Object>> assigned_;
};

}  // namespace qinfer::jinja
