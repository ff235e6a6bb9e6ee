// Jinja's built-in tests: `value is name(args)` (Jinja 3.1 tests.py), as the Renderer calls them.
#include <unordered_map>

#include "jinja/builtins.h"
#include "jinja/py_string.h"
#include "jinja/template_error.h"

namespace qinfer::jinja {
namespace {

using TestFn = bool (*)(Renderer&, const Value&, const Args&);

const Value& arg0(const Args& a) {
  if (!a.has(0)) throw EvalError(cat("TypeError: ", a.what(), " missing required argument"));
  return a.get(0);
}

bool t_defined(Renderer&, const Value& v, const Args&) { return !v.is_undefined(); }
bool t_undefined(Renderer&, const Value& v, const Args&) { return v.is_undefined(); }
bool t_none(Renderer&, const Value& v, const Args&) { return v.is_none(); }
bool t_boolean(Renderer&, const Value& v, const Args&) { return v.is_bool(); }
bool t_false(Renderer&, const Value& v, const Args&) { return v.is_bool() && !v.json().get<bool>(); }
bool t_true(Renderer&, const Value& v, const Args&) { return v.is_bool() && v.json().get<bool>(); }
bool t_integer(Renderer&, const Value& v, const Args&) { return v.is_int(); }
bool t_float(Renderer&, const Value& v, const Args&) { return v.is_float(); }
bool t_number(Renderer&, const Value& v, const Args&) { return v.is_number(); }
bool t_string(Renderer&, const Value& v, const Args&) { return v.is_string(); }
bool t_mapping(Renderer&, const Value& v, const Args&) { return v.is_dict(); }
bool t_sequence(Renderer&, const Value& v, const Args&) {
  if (v.is_undefined()) return true;  // Undefined has __len__ and __getitem__
  return v.is_json() && !v.is_iterator() && (v.is_string() || v.is_list() || v.is_dict());
}
bool t_iterable(Renderer&, const Value& v, const Args&) {
  if (v.is_undefined()) return true;
  return v.is_json() && (v.is_string() || v.is_list() || v.is_dict());
}
bool t_callable(Renderer&, const Value& v, const Args&) { return v.is_callable(); }
bool t_escaped(Renderer&, const Value&, const Args&) { return false; }
bool t_sameas(Renderer&, const Value& v, const Args& a) {
  const Value& o = arg0(a);
  if (v.kind() != o.kind()) return false;
  if (v.is_object()) return v.obj() == o.obj();
  if (v.is_callable()) return v.fn() == o.fn();
  if (v.is_undefined()) return false;
  if (v.is_none() || v.is_bool()) return v.json() == o.json();
  return &v.json() == &o.json();
}
bool t_in(Renderer&, const Value& v, const Args& a) { return contains(arg0(a), v); }
int64_t int_of(const Value& v) {
  if (!v.is_int() && !v.is_bool()) throw EvalError(cat("TypeError: expected an integer, got ", type_name(v)));
  return v.as_int();
}
bool t_odd(Renderer&, const Value& v, const Args&) { return (int_of(v) % 2) != 0; }
bool t_even(Renderer&, const Value& v, const Args&) { return (int_of(v) % 2) == 0; }
bool t_divisibleby(Renderer&, const Value& v, const Args& a) {
  Value m = binary_op("%", v, arg0(a));
  return !truthy(m);
}
bool t_lower(Renderer&, const Value& v, const Args&) { return py::is_lower(v.is_string() ? v.str() : to_str(v)); }
bool t_upper(Renderer&, const Value& v, const Args&) { return py::is_upper(v.is_string() ? v.str() : to_str(v)); }
bool t_eq(Renderer&, const Value& v, const Args& a) { return equals(v, arg0(a)); }
bool t_ne(Renderer&, const Value& v, const Args& a) { return !equals(v, arg0(a)); }
bool t_lt(Renderer&, const Value& v, const Args& a) { return less(v, arg0(a), "<"); }
bool t_gt(Renderer&, const Value& v, const Args& a) { return less(arg0(a), v, ">"); }
bool t_le(Renderer&, const Value& v, const Args& a) { return !less(arg0(a), v, "<="); }
bool t_ge(Renderer&, const Value& v, const Args& a) { return !less(v, arg0(a), ">="); }
bool t_filter(Renderer&, const Value& v, const Args&) { return v.is_string() && has_filter(v.str()); }
bool t_test(Renderer&, const Value& v, const Args&) { return v.is_string() && has_test(v.str()); }

struct Entry {
  TestFn fn;
  bool takes_arg;
};

const std::unordered_map<std::string, Entry>& registry() {
  static const std::unordered_map<std::string, Entry> m = {
      {"defined", {t_defined, false}},   {"undefined", {t_undefined, false}},
      {"none", {t_none, false}},         {"boolean", {t_boolean, false}},
      {"false", {t_false, false}},       {"true", {t_true, false}},
      {"integer", {t_integer, false}},   {"float", {t_float, false}},
      {"number", {t_number, false}},     {"string", {t_string, false}},
      {"mapping", {t_mapping, false}},   {"sequence", {t_sequence, false}},
      {"iterable", {t_iterable, false}}, {"callable", {t_callable, false}},
      {"escaped", {t_escaped, false}},   {"sameas", {t_sameas, true}},
      {"in", {t_in, true}},              {"odd", {t_odd, false}},
      {"even", {t_even, false}},         {"divisibleby", {t_divisibleby, true}},
      {"lower", {t_lower, false}},       {"upper", {t_upper, false}},
      {"eq", {t_eq, true}},              {"equalto", {t_eq, true}},
      {"==", {t_eq, true}},              {"ne", {t_ne, true}},
      {"!=", {t_ne, true}},              {"lt", {t_lt, true}},
      {"lessthan", {t_lt, true}},        {"<", {t_lt, true}},
      {"gt", {t_gt, true}},              {"greaterthan", {t_gt, true}},
      {">", {t_gt, true}},               {"le", {t_le, true}},
      {"<=", {t_le, true}},              {"ge", {t_ge, true}},
      {">=", {t_ge, true}},              {"filter", {t_filter, false}},
      {"test", {t_test, false}},
  };
  return m;
}

}  // namespace

bool has_test(const std::string& name) { return registry().count(name) > 0; }

bool call_test(Renderer& r, const std::string& name, const Value& v, const CallArgs& args) {
  auto it = registry().find(name);
  if (it == registry().end()) throw EvalError("No test named '" + name + "'.");
  std::vector<std::string> params;
  if (it->second.takes_arg) params.push_back("other");
  Args a(args, "test '" + name + "'", params);
  return it->second.fn(r, v, a);
}

}  // namespace qinfer::jinja
