// Built-in filters, tests, globals and methods of str/dict/list values, and
// the argument binder they share. Each follows the Python/Jinja2 behaviour of
// the function with the same name (Jinja 3.1 filters.py / tests.py).
#pragma once
#include <string>
#include <vector>

#include "jinja/value.h"

namespace qinfer::jinja {

class Renderer;

// Binds positional and keyword arguments to parameter names, Python style.
class Args {
 public:
  Args(const CallArgs& a, std::string what, std::vector<std::string> names);
  bool has(size_t i) const { return set_[i]; }
  const Value& get(size_t i) const { return vals_[i]; }  // Undefined when not given
  Value get_or(size_t i, Value def) const { return set_[i] ? vals_[i] : std::move(def); }
  // Typed accessors: throw EvalError "<what>: <param> must be ..." on a wrong type.
  std::string str(size_t i) const;
  int64_t integer(size_t i) const;
  bool boolean(size_t i) const;  // truthiness
  const std::string& what() const { return what_; }

 private:
  std::string what_;
  std::vector<std::string> names_;
  std::vector<Value> vals_;
  std::vector<bool> set_;
};

// Filters: `input | name(args)`. Throws EvalError for an unknown name.
Value call_filter(Renderer& r, const std::string& name, const Value& input, const CallArgs& args);
bool has_filter(const std::string& name);

// Tests: `value is name(args)`.
bool call_test(Renderer& r, const std::string& name, const Value& v, const CallArgs& args);
bool has_test(const std::string& name);

// obj.name and obj[key] with Jinja's sandboxed lookup rules; str/dict/list methods
// come back as bound callables. Accessing anything on Undefined throws.
Value get_attr(const Value& obj, const std::string& name);
Value get_item(const Value& obj, const Value& key);
Value slice(const Value& obj, const Value& start, const Value& stop, const Value& step);

// Python-style arithmetic for + - * / // % ** and unary minus.
Value binary_op(const std::string& op, const Value& a, const Value& b);
Value negate(const Value& a, bool minus);

// printf-style formatting: fmt % args (args: one value or a list).
std::string percent_format(const std::string& fmt, const Value& args);

// Global functions visible to every template: range, dict, namespace, cycler, joiner,
// strftime_now, raise_exception (throws RaisedError).
void add_globals(std::vector<std::pair<std::string, Value>>& out);

// raise_exception(msg) throws this; the interpreter adds the line.
class RaisedError : public std::runtime_error {
 public:
  explicit RaisedError(const std::string& m) : std::runtime_error(m) {}
};

}  // namespace qinfer::jinja
