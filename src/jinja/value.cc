#include "jinja/value.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

#include "jinja/py_string.h"
#include "jinja/template_error.h"
#include "util/py_format.h"

namespace qinfer::jinja {

Value::Value(Json j) : kind_(Kind::Json) {
  holder_ = std::make_shared<const Json>(std::move(j));
  node_ = holder_.get();
}

Value Value::borrow(std::shared_ptr<const Json> holder, const Json* node) {
  Value v;
  v.kind_ = Kind::Json;
  v.holder_ = std::move(holder);
  v.node_ = node;
  return v;
}

Value Value::object(std::shared_ptr<Object> o) {
  Value v;
  v.kind_ = Kind::Object;
  v.obj_ = std::move(o);
  return v;
}

Value Value::callable(std::string name, std::function<Value(CallArgs&)> fn) {
  Value v;
  v.kind_ = Kind::Callable;
  v.fn_ = std::make_shared<Callable>(Callable{std::move(name), std::move(fn)});
  return v;
}

// Integers past int64 (JSON input up to 2^64-1) print exactly but arithmetic on
// them is refused rather than wrapped: qinfer's template integers are 64-bit.
int64_t checked_int64(uint64_t u) {
  if (u > static_cast<uint64_t>(INT64_MAX))
    throw EvalError(cat("OverflowError: integer ", u, " is past the 64-bit integers templates compute with"));
  return static_cast<int64_t>(u);
}

int64_t checked_int64(double d) {
  if (std::isnan(d)) throw EvalError("ValueError: cannot convert float NaN to integer");
  // +-2^63 are exact doubles; every double in [-2^63, 2^63) truncates into int64.
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0)) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%g", d);
    throw EvalError(cat("OverflowError: float ", buf, " is past the 64-bit integers templates compute with"));
  }
  return static_cast<int64_t>(d);
}

int64_t Value::as_int() const {
  if (node_->is_boolean()) return node_->get<bool>() ? 1 : 0;
  if (node_->is_number_float()) return checked_int64(node_->get<double>());
  if (node_->is_number_unsigned()) return checked_int64(node_->get<uint64_t>());
  return node_->get<int64_t>();
}

double Value::as_double() const {
  if (node_->is_boolean()) return node_->get<bool>() ? 1.0 : 0.0;
  return node_->get<double>();
}

Value Value::at(size_t i) const {
  Value v = borrow(holder_, &(*node_)[i]);
  v.tuples_ = tuples_;
  return v;
}

Value Value::member(const std::string& key) const {
  auto it = node_->find(key);
  if (it == node_->end()) return Value::undefined(cat("'dict object' has no attribute '", key, "'"));
  Value v = borrow(holder_, &*it);
  v.tuples_ = tuples_;
  return v;
}

size_t Value::size() const { return node_->size(); }

Json Value::to_json(const char* what) const {
  if (is_json()) return *node_;
  throw EvalError(cat("TypeError: ", what, ": Object of type ", type_name(*this),
                      " is not JSON serializable"));
}

static bool is_tuple_node(const Json& j, const TupleMarks* marks) { return marks && marks->count(&j) > 0; }

std::string type_name(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return "Undefined";
    case Value::Kind::Object: return v.obj()->is_namespace ? "Namespace" : "LoopContext";
    case Value::Kind::Callable: return "function";
    case Value::Kind::Json: break;
  }
  if (v.is_iterator()) return "generator";
  const Json& j = v.json();
  switch (j.type()) {
    case Json::value_t::null: return "NoneType";
    case Json::value_t::boolean: return "bool";
    case Json::value_t::number_integer:
    case Json::value_t::number_unsigned: return "int";
    case Json::value_t::number_float: return "float";
    case Json::value_t::string: return "str";
    case Json::value_t::array: return v.is_tuple() ? "tuple" : "list";
    case Json::value_t::object: return "dict";
    default: return "object";
  }
}

void fail_undefined(const Value& v) {
  throw EvalError("UndefinedError: " + (v.undefined_hint().empty() ? std::string("value is undefined")
                                                                    : v.undefined_hint()));
}

bool truthy(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return false;
    case Value::Kind::Object:
    case Value::Kind::Callable: return true;
    case Value::Kind::Json: break;
  }
  if (v.is_iterator()) return true;
  const Json& j = v.json();
  switch (j.type()) {
    case Json::value_t::null: return false;
    case Json::value_t::boolean: return j.get<bool>();
    case Json::value_t::number_integer: return j.get<int64_t>() != 0;
    case Json::value_t::number_unsigned: return j.get<uint64_t>() != 0;
    case Json::value_t::number_float: return j.get<double>() != 0.0;
    case Json::value_t::string: return !j.get_ref<const std::string&>().empty();
    case Json::value_t::array:
    case Json::value_t::object: return !j.empty();
    default: return true;
  }
}

static std::string json_repr(const Json& j, bool top_str, const TupleMarks* marks);

static std::string scalar_str(const Json& j) {
  switch (j.type()) {
    case Json::value_t::null: return "None";
    case Json::value_t::boolean: return j.get<bool>() ? "True" : "False";
    case Json::value_t::number_integer: return std::to_string(j.get<int64_t>());
    case Json::value_t::number_unsigned: return std::to_string(j.get<uint64_t>());
    case Json::value_t::number_float: return py_float_repr(j.get<double>());
    default: return "";
  }
}

static std::string json_repr(const Json& j, bool top_str, const TupleMarks* marks) {
  if (j.is_string()) return top_str ? j.get<std::string>() : py::repr(j.get_ref<const std::string&>());
  if (j.is_array()) {
    bool tuple = is_tuple_node(j, marks);
    std::string out = tuple ? "(" : "[";
    bool first = true;
    for (const auto& e : j) {
      if (!first) out += ", ";
      first = false;
      out += json_repr(e, false, marks);
    }
    if (tuple) return out + (j.size() == 1 ? ",)" : ")");
    return out + "]";
  }
  if (j.is_object()) {
    std::string out = "{";
    bool first = true;
    for (auto it = j.begin(); it != j.end(); ++it) {
      if (!first) out += ", ";
      first = false;
      out += py::repr(it.key()) + ": " + json_repr(it.value(), false, marks);
    }
    return out + "}";
  }
  return scalar_str(j);
}

static std::string object_repr(const Value& v) {
  // Objects being printed on this thread: a namespace that holds itself (`set ns.x = ns`)
  // prints as Python's reprlib guard does, <Namespace {...}> where it recurs.
  thread_local std::vector<const Object*> open;
  const Object* o = v.obj().get();
  const char* head = o->is_namespace ? "<Namespace {" : "<LoopContext {";
  if (std::find(open.begin(), open.end(), o) != open.end()) return std::string(head) + "...}>";
  open.push_back(o);
  struct Pop {
    ~Pop() { open.pop_back(); }
  } pop;
  std::string out = head;
  bool first = true;
  for (const auto& [k, val] : o->attrs) {
    if (!first) out += ", ";
    first = false;
    out += py::repr(k) + ": " + repr(val);
  }
  return out + "}>";
}

std::string to_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::Undefined: return "";
    case Value::Kind::Object: return object_repr(v);
    case Value::Kind::Callable: return "<function " + v.fn()->name + ">";
    case Value::Kind::Json: return json_repr(v.json(), true, v.tuple_marks());
  }
  return "";
}

std::string repr(const Value& v) {
  if (v.is_json()) return json_repr(v.json(), false, v.tuple_marks());
  if (v.is_undefined()) return "Undefined";
  return to_str(v);
}

static bool json_is_num(const Json& j) { return j.is_number() || j.is_boolean(); }

static double num_d(const Json& j) {
  if (j.is_boolean()) return j.get<bool>() ? 1 : 0;
  return j.get<double>();
}

static bool json_int_like(const Json& j) { return j.is_boolean() || j.is_number_integer(); }

// Exact for every JSON integer (int64 and uint64 alike), for == and <.
static __int128 num_i(const Json& j) {
  if (j.is_boolean()) return j.get<bool>() ? 1 : 0;
  if (j.is_number_unsigned()) return j.get<uint64_t>();
  return j.get<int64_t>();
}

// A tuple never equals a list, as in Python.
static bool json_equals(const Json& a, const TupleMarks* ma, const Json& b, const TupleMarks* mb) {
  if (json_is_num(a) && json_is_num(b)) {
    if (json_int_like(a) && json_int_like(b)) return num_i(a) == num_i(b);
    return num_d(a) == num_d(b);
  }
  if (a.type() != b.type()) {
    return false;
  }
  if (a.is_array()) {
    if (a.size() != b.size() || is_tuple_node(a, ma) != is_tuple_node(b, mb)) return false;
    for (size_t i = 0; i < a.size(); ++i)
      if (!json_equals(a[i], ma, b[i], mb)) return false;
    return true;
  }
  if (a.is_object()) {
    if (a.size() != b.size()) return false;
    for (auto it = a.begin(); it != a.end(); ++it) {
      auto jt = b.find(it.key());
      if (jt == b.end() || !json_equals(it.value(), ma, *jt, mb)) return false;
    }
    return true;
  }
  return a == b;
}

bool equals(const Value& a, const Value& b) {
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case Value::Kind::Undefined: return true;
    case Value::Kind::Object: return a.obj() == b.obj();
    case Value::Kind::Callable: return a.fn() == b.fn();
    case Value::Kind::Json: return json_equals(a.json(), a.tuple_marks(), b.json(), b.tuple_marks());
  }
  return false;
}

bool less(const Value& a, const Value& b, const char* op) {
  if (a.is_undefined()) fail_undefined(a);
  if (b.is_undefined()) fail_undefined(b);
  if (a.is_json() && b.is_json()) {
    const Json& x = a.json();
    const Json& y = b.json();
    if (json_is_num(x) && json_is_num(y)) {
      if (json_int_like(x) && json_int_like(y)) return num_i(x) < num_i(y);
      return num_d(x) < num_d(y);
    }
    if (x.is_string() && y.is_string()) return x.get_ref<const std::string&>() < y.get_ref<const std::string&>();
    if (x.is_array() && y.is_array() && a.is_tuple() == b.is_tuple()) {
      size_t n = std::min(x.size(), y.size());
      for (size_t i = 0; i < n; ++i) {
        Value ai = a.at(i), bi = b.at(i);
        if (!equals(ai, bi)) return less(ai, bi, op);
      }
      return x.size() < y.size();
    }
  }
  throw EvalError(cat("TypeError: '", op, "' not supported between instances of '", type_name(a), "' and '",
                      type_name(b), "'"));
}

bool contains(const Value& container, const Value& item) {
  if (container.is_undefined()) return false;
  if (!container.is_json() || container.is_none() || container.is_number())
    throw EvalError(cat("TypeError: argument of type '", type_name(container), "' is not iterable"));
  const Json& c = container.json();
  if (c.is_string()) {
    if (!item.is_string())
      throw EvalError(cat("TypeError: 'in <string>' requires string as left operand, not ",
                          type_name(item)));
    return c.get_ref<const std::string&>().find(item.str()) != std::string::npos;
  }
  if (c.is_array()) {
    for (size_t i = 0; i < c.size(); ++i)
      if (equals(container.at(i), item)) return true;
    return false;
  }
  // dict: key membership (a tuple is hashable, a list is not)
  if ((item.is_list() && !item.is_tuple()) || item.is_dict())
    throw EvalError(cat("TypeError: unhashable type: '", type_name(item), "'"));
  if (!item.is_string()) return false;
  return c.contains(item.str());
}

int64_t length(const Value& v) {
  if (v.is_undefined()) return 0;
  if (v.is_json() && !v.is_iterator()) {
    const Json& j = v.json();
    if (j.is_string()) return static_cast<int64_t>(py::length(j.get_ref<const std::string&>()));
    if (j.is_array() || j.is_object()) return static_cast<int64_t>(j.size());
  }
  throw EvalError(cat("TypeError: object of type '", type_name(v), "' has no len()"));
}

std::vector<Value> iterate(const Value& v) {
  std::vector<Value> out;
  if (v.is_undefined()) return out;
  if (v.is_json()) {
    const Json& j = v.json();
    if (j.is_array()) {
      out.reserve(j.size());
      for (size_t i = 0; i < j.size(); ++i) out.push_back(v.at(i));
      return out;
    }
    if (j.is_object()) {
      for (auto it = j.begin(); it != j.end(); ++it) out.emplace_back(it.key());
      return out;
    }
    if (j.is_string()) {
      for (char32_t c : py::decode(j.get_ref<const std::string&>())) out.emplace_back(py::encode(c));
      return out;
    }
  }
  throw EvalError(cat("TypeError: '", type_name(v), "' object is not iterable"));
}

// Marks in `out` the arrays of `dst`, a copy of `src`, that are tuples in `marks`.
static void copy_marks(const Json& src, const Json& dst, const TupleMarks& marks, TupleMarks& out) {
  if (!src.is_structured()) return;
  if (marks.count(&src)) out.insert(&dst);
  auto d = dst.begin();
  for (auto s = src.begin(); s != src.end(); ++s, ++d) copy_marks(*s, *d, marks, out);
}

Value Value::adopt(Json tree, const std::vector<const Value*>& sources, bool tuple) {
  Value out(std::move(tree));
  bool any = tuple || std::any_of(sources.begin(), sources.end(), [](const Value* v) { return v->tuples_ != nullptr; });
  if (!any) return out;  // the common case: no tuple anywhere
  auto marks = std::make_shared<TupleMarks>();
  if (tuple) marks->insert(out.node_);
  auto d = out.node_->begin();
  for (const Value* src : sources) {
    if (src->tuples_ && src->is_json()) copy_marks(*src->node_, *d, *src->tuples_, *marks);
    ++d;
  }
  out.tuples_ = std::move(marks);
  return out;
}

Value make_list(const std::vector<Value>& items, const char* what, bool tuple) {
  Json arr = Json::array();
  std::vector<const Value*> sources;
  for (const auto& it : items) {
    arr.push_back(it.is_undefined() ? Json(nullptr) : it.to_json(what));  // Python keeps the Undefined; closest JSON stand-in
    sources.push_back(&it);
  }
  return Value::adopt(std::move(arr), sources, tuple);
}

Value make_dict(const std::vector<std::pair<std::string, Value>>& items, const char* what) {
  Json obj = Json::object();
  std::vector<const Value*> sources;
  std::unordered_map<std::string, size_t> slot;
  for (const auto& [k, v] : items) {
    auto [it, fresh] = slot.emplace(k, sources.size());
    obj[k] = v.to_json(what);
    if (fresh) sources.push_back(&v);
    else sources[it->second] = &v;
  }
  return Value::adopt(std::move(obj), sources, false);
}

}  // namespace qinfer::jinja
